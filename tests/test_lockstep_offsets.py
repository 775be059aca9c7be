"""GlobalTensor[] of a group with a per-member int offset (npusim.lockstep.offset_members)
gives what the BlockVector operators give: the same values, a BlockVector where the
members differ and a plain int where they agree (lengths past the end clamp to 0)."""
import pytest

from npusim.lockstep import BlockVector, offset_members


def _by_operators(offset, address, itemsize, length):
    addr = address + offset * itemsize
    rest = length - offset
    if type(rest) is BlockVector:
        rest = rest if min(rest.vals) >= 0 else rest.map(lambda r: max(r, 0))
    return addr, rest


def _plain(x):
    return ("BV", x.members, x.vals) if type(x) is BlockVector else ("int", x)


@pytest.mark.parametrize("vals,length", [
    ([0, 96, 192, 288], 1000),            # a block's rows of one matrix
    ([5, 5, 5, 7], 6),                    # one member past the end: its length clamps to 0
    ([10, 20, 30, 40], 25),               # two past the end
    ([3, 1, 4, 1], 3),                    # lengths 0, 2, 0, 2
    ([0, 1, 2, 3], 10**12),
])
def test_offset_members_is_the_operators(vals, length):
    members = (0, 2, 5, 7)
    off = BlockVector(members, vals)
    for address, isz in [(4096, 2), (0, 4), (123456789, 1)]:
        got = offset_members(off, address, isz, length)
        want = _by_operators(off, address, isz, length)
        assert [_plain(x) for x in got] == [_plain(x) for x in want]


def test_offset_members_members_agreeing_give_plain_ints():
    # lengths all clamp to 0: one plain 0, as the operators' map gives
    addr, rest = offset_members(BlockVector((0, 1), [8, 9]), 0, 2, 4)
    assert _plain(addr) == ("BV", (0, 1), [16, 18]) and _plain(rest) == ("int", 0)
