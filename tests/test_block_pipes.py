"""The pipes of a block's records as the replay works them out (timing._block_pipes): a
lockstep member's from its group's records once plus its own where members differ, the
same set as a pass over its own records."""
from npusim.ascendc.core import BARRIER, DMA_IN, OP
from npusim.ascendc.types import Pipe
from npusim.timing import _block_pipes


class Member:
    """A member's records in the form of npusim.lockstep.GroupRecords: ``template`` (the
    group's records, the indices where members differ, ...) and its own records."""

    def __init__(self, group, patched, own):
        self.template = (group, patched, None)
        self.own = own

    def __getitem__(self, i):
        return self.own[i]

    def __iter__(self):
        return iter(self.own)


def rec(kind, pipe):
    return (kind, pipe, 0.0, 0, None, "x")


def test_member_pipes_are_those_of_its_own_records():
    group = [rec(OP, Pipe.PIPE_V), rec(DMA_IN, Pipe.PIPE_MTE2), rec(BARRIER, Pipe.PIPE_ALL),
             rec(OP, Pipe.PIPE_S)]
    # where members differ (index 1) the group keeps MTE2; this member's record there is on
    # MTE3: MTE2 is none of its pipes, MTE3 is
    own = list(group)
    own[1] = rec(DMA_IN, Pipe.PIPE_MTE3)
    kept = {}
    plain = {r[1] for r in own if r[1] != Pipe.PIPE_ALL}
    assert plain == {Pipe.PIPE_V, Pipe.PIPE_MTE3, Pipe.PIPE_S}
    assert _block_pipes(Member(group, [1], own), kept) == plain
    # a second member of the group, found in ``kept``, with the group's record
    assert _block_pipes(Member(group, [1], list(group)), kept) == {
        Pipe.PIPE_V, Pipe.PIPE_MTE2, Pipe.PIPE_S}
    assert _block_pipes(own, {}) == plain          # a block that ran alone
