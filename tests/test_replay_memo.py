"""Replays kept by their records (npusim.timing.REPLAY_MEMO): a launch that records what an
earlier launch recorded gets that launch's timing, the same to the bit as a new replay,
and only then; a TQue's flags are named the same launch after launch, so that repeated
launches of a kernel do record the same."""
import dataclasses

import numpy as np
import pytest

import npusim.launch as NL
from npusim import GlobalMemory, get_soc, run_kernel, timing
from npusim.ascendc.core import DMA_IN, DMA_OUT, OP
from npusim.ascendc.types import Pipe
from npusim.ascendc import (Adds, DataCopy, GetBlockIdx, GlobalTensor, TPipe, TPosition, TQue,
                            float32)

from kernel_helpers import assert_same_timing

SOC = get_soc("Ascend910B1")
TILE = 512


def add_one(x, z, per):
    """z = x + 1, ``per`` elements per block, double-buffered tiles of TILE elements."""
    base = GetBlockIdx() * per * 4
    pipe = TPipe()
    qi, qo = TQue(TPosition.VECIN, 2), TQue(TPosition.VECOUT, 2)
    pipe.InitBuffer(qi, 2, TILE * 4)
    pipe.InitBuffer(qo, 2, TILE * 4)
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x + base, per)
    zg.SetGlobalBuffer(z + base, per)
    for i in range(0, per, TILE):
        a = qi.AllocTensor(float32)
        DataCopy(a, xg[i], TILE)
        qi.EnQue(a)
        a = qi.DeQue(float32)
        c = qo.AllocTensor(float32)
        Adds(c, a, 1.0, TILE)
        qi.FreeTensor(a)
        qo.EnQue(c)
        c = qo.DeQue(float32)
        DataCopy(zg[i], c, TILE)
        qo.FreeTensor(c)


@pytest.fixture
def device(monkeypatch):
    """A GlobalMemory with x (8 blocks x 4 tiles) and z, an empty store of replays, and a
    count of the replays run."""
    monkeypatch.setattr(timing, "_REPLAY_KEPT", timing._KeptReplays())
    replays = []
    real = timing._replay
    monkeypatch.setattr(timing, "_replay", lambda *a: replays.append(1) or real(*a))
    gm = GlobalMemory(SOC.memory_size)
    n = 8 * 4 * TILE
    x = np.arange(n, dtype=np.float32)
    xa, za = gm.malloc(n * 4), gm.malloc(n * 4)
    gm.write(xa, x)
    return gm, xa, za, n, replays


def launch(gm, xa, za, n, blocks=8, **kw):
    return run_kernel(add_one, blocks, (xa, za, n // blocks), soc=SOC, gm=gm, **kw)


def test_a_repeated_launch_records_the_same_and_is_not_replayed_again(device, monkeypatch):
    gm, xa, za, n, replays = device
    seen = []
    real = NL.simulate
    monkeypatch.setattr(NL, "simulate", lambda blocks, *a, **k: seen.append(
        [list(b) for b in blocks]) or real(blocks, *a, **k))
    first = launch(gm, xa, za, n)
    gm.write(xa, np.full(n, -5, np.float32))      # other data, the same instructions
    second = launch(gm, xa, za, n)
    assert seen[0] == seen[1]                     # the queues' flags are named alike
    assert len(replays) == 1
    np.testing.assert_array_equal(np.frombuffer(gm.read(za, n * 4), np.float32), -4.0)
    assert_same_timing(second.timing, first.timing)
    assert second.duration_us == first.duration_us
    assert second.pipe_time_us == first.pipe_time_us


def test_a_kept_replay_is_the_replay_and_shares_nothing(device, monkeypatch):
    gm, xa, za, n, replays = device
    first = launch(gm, xa, za, n, keep_spans=True)
    expected = timing._replay(first.records, SOC, True, None, timing.PROFILE_PIPES, None)
    for _ in range(2):         # a caller's change to a timing does not reach the store
        got = launch(gm, xa, za, n, keep_spans=True)
        assert_same_timing(got.timing, expected)
        got.timing.block_end[:] = -1
        got.timing.pipe_busy[timing.Pipe.PIPE_V][:] = -1
        got.timing.spans[0].clear()
    assert len(replays) == 2                     # the first launch, and the reference above


def test_what_the_replay_depends_on_is_part_of_the_key(device, monkeypatch):
    gm, xa, za, n, replays = device
    base = launch(gm, xa, za, n)
    ya = gm.malloc(n * 4 + 256)
    moved = launch(gm, ya + 256, za, n)           # other addresses: another L2 footprint
    fewer = launch(gm, xa, za, n, blocks=4)       # other records
    spans = launch(gm, xa, za, n, keep_spans=True)
    slower = dataclasses.replace(SOC, dma_latency_cycles=2 * SOC.dma_latency_cycles)
    other_soc = run_kernel(add_one, 8, (xa, za, n // 8), soc=slower, gm=gm)
    assert len(replays) == 5
    assert moved.timing.cycles != base.timing.cycles   # unaligned: derated DMA, other lines
    assert fewer.timing.cycles != base.timing.cycles
    assert spans.timing.spans is not None and base.timing.spans is None
    assert other_soc.timing.cycles != base.timing.cycles
    monkeypatch.setattr(timing, "REPLAY_MEMO", False)
    launch(gm, xa, za, n)
    assert len(replays) == 6                      # off: replayed again


def test_the_least_recent_replays_are_forgotten_beyond_the_limit(device, monkeypatch):
    gm, xa, za, n, replays = device
    launch(gm, xa, za, n)
    launch(gm, xa, za, n, blocks=4)
    sizes = [size for _, size in timing._REPLAY_KEPT.items.values()]
    assert len(sizes) == 2
    monkeypatch.setattr(timing, "REPLAY_KEEP_RECORDS", max(sizes))    # room for either, not both
    timing._REPLAY_KEPT.clear()
    launch(gm, xa, za, n)
    launch(gm, xa, za, n, blocks=4)
    assert len(timing._REPLAY_KEPT) == 1
    launch(gm, xa, za, n)                  # the 8-block replay was forgotten: replayed again
    assert len(replays) == 5
    launch(gm, xa, za, n)                  # and kept again
    assert len(replays) == 5
    monkeypatch.setattr(timing, "REPLAY_KEEP_RECORDS", min(sizes) - 1)
    timing._REPLAY_KEPT.clear()
    launch(gm, xa, za, n)                  # larger than the whole store: not kept
    assert not timing._REPLAY_KEPT


def test_a_replay_larger_than_the_store_computes_no_key(device, monkeypatch):
    """A replay of more records than the store holds is never kept: its key (a pickle of
    every record) is not computed, and its timing is the same."""
    gm, xa, za, n, replays = device
    base = launch(gm, xa, za, n)
    size = next(iter(timing._REPLAY_KEPT.items.values()))[1]
    digests = []
    real = timing._digest
    monkeypatch.setattr(timing, "_digest", lambda *a: digests.append(1) or real(*a))
    monkeypatch.setattr(timing, "REPLAY_KEEP_RECORDS", size - 1)
    timing._REPLAY_KEPT.clear()
    again = launch(gm, xa, za, n)
    assert not digests and not timing._REPLAY_KEPT and len(replays) == 2
    assert_same_timing(again.timing, base.timing)
    monkeypatch.setattr(timing, "REPLAY_KEEP_RECORDS", size)
    launch(gm, xa, za, n)
    assert digests and len(timing._REPLAY_KEPT) == 1          # room for it: keyed and kept


def test_the_key_of_a_groups_records_sees_every_record(device, monkeypatch):
    """A lockstep group's members share the group's records in the key, those that differ
    from member to member in their group form: a change to one member's value in a
    per-member record, or to a shared record, changes the key; and a member's records
    cannot be changed behind the key's back."""
    from npusim import lockstep
    gm, xa, za, n, replays = device
    seen = []
    real = NL.simulate
    monkeypatch.setattr(NL, "simulate", lambda blocks, *a, **k: seen.append(blocks) or
                        real(blocks, *a, **k))
    launch(gm, xa, za, n)
    launch(gm, xa, za, n)
    a, b = seen
    assert all(isinstance(r, lockstep.GroupRecords) for r in a)
    assert timing._records_key(a) == timing._records_key(b)
    group, patched, per_member = a[3].template
    assert all(r.template is a[3].template for r in a)     # one group: every block
    with pytest.raises(TypeError):
        a[3][patched[0]] = a[3][patched[0]]

    class Own:
        """Members' record lists given as they are."""

        def __init__(self, lists):
            self.lists = lists

        def of(self, j):
            return self.lists[j]

    def regroup(template, k, change):
        """The group's members, with ``change`` applied to member 3's record ``k``."""
        lists = [list(r) for r in a]
        lists[3][k] = change(lists[3][k])
        own = Own(lists)
        return [lockstep.GroupRecords(template, r.member, own) for r in a]

    # member 3's GM address of a DMA: in its records and in the group's form of them
    i = patched[0]
    pos = patched.index(i)
    marker, addrs = per_member[pos][4][0]
    moved_form = list(per_member)
    moved_form[pos] = (*per_member[pos][:4],
                       ((marker, addrs[:3] + (addrs[3] + 512,) + addrs[4:]),
                        *per_member[pos][4][1:]), per_member[pos][5])
    moved = regroup((group, patched, tuple(moved_form)), i,
                    lambda r: (*r[:4], (r[4][0] + 512, *r[4][1:]), r[5]))
    assert timing._records_key(moved) != timing._records_key(b)
    assert moved[3][i] != b[3][i] and list(moved[2]) == list(b[2])
    same = regroup((group, patched, per_member), i, lambda r: r)
    assert timing._records_key(same) == timing._records_key(b)
    # a shared record's cycles, for every member
    j = next(k for k in range(len(group)) if k not in patched and group[k][0] == timing.OP)
    slower = list(group)
    slower[j] = (*group[j][:2], group[j][2] + 1, *group[j][3:])
    lists = [[slower[k] if k == j else x for k, x in enumerate(r)] for r in a]
    changed = [lockstep.GroupRecords((slower, patched, per_member), r.member, Own(lists))
               for r in a]
    assert timing._records_key(changed) != timing._records_key(b)
    assert [list(r) for r in changed] != [list(r) for r in b]


def test_the_same_launch_on_tensors_allocated_anew_takes_the_kept_replay(device, monkeypatch):
    """The replay reads GM addresses only through their alignment and the L2 lines the
    transfers share, so a launch on freshly allocated tensors (a loop that allocates per
    step) is the same replay, and takes the kept one."""
    gm, xa, za, n, replays = device
    first = launch(gm, xa, za, n)
    for extra in (0, 512, 4096 + 512):
        xb, zb = gm.malloc(n * 4 + extra), gm.malloc(n * 4)
        assert (xb, zb) != (xa, za)
        again = launch(gm, xb, zb, n)
        assert len(replays) == 1
        assert_same_timing(again.timing, first.timing)
    monkeypatch.setattr(timing, "REPLAY_MEMO", False)
    assert_same_timing(launch(gm, xb, zb, n).timing, first.timing)     # a replay agrees
    # x and z overlapping (z = x: the writes hit the lines read) is another replay
    monkeypatch.setattr(timing, "REPLAY_MEMO", True)
    launch(gm, xb, xb, n)
    assert len(replays) == 3


def _records(rng, tensors, n_blocks):
    """Random block records over ``tensors`` ((address, bytes) each): reads and writes of
    random slices, some of them rows with whole lines between them (keys with runs), and
    vector work between them."""
    blocks = []
    for _ in range(n_blocks):
        recs = []
        for _ in range(int(rng.integers(2, 9))):
            base, size = tensors[int(rng.integers(len(tensors)))]
            off = int(rng.integers(0, size // 32)) * 32
            span = int(rng.integers(1, (size - off) // 32 + 1)) * 32
            kind = DMA_IN if rng.random() < 0.6 else DMA_OUT
            pipe = Pipe.PIPE_MTE2 if kind == DMA_IN else Pipe.PIPE_MTE3
            key, nbytes = (base + off, span, bool(rng.random() < 0.1)), span
            row = int(rng.integers(1, 8)) * 32
            pitch = row + int(rng.integers(16, 40)) * 32
            if rng.random() < 0.4 and span >= pitch + row:
                count = (span - row) // pitch + 1
                key, nbytes = key + (((0, row, pitch, count),),), row * count
            recs.append((kind, pipe, 0.0, nbytes, key, "DataCopy"))
            recs.append((OP, Pipe.PIPE_V, float(rng.integers(1, 400)), 0, None, "Add"))
        blocks.append(recs)
    return blocks


@pytest.mark.parametrize("seed", range(12))
def test_moving_islands_of_transfers_by_whole_lines_changes_no_replay(seed):
    """Tensors (islands of transfers that share L2 lines) moved to other addresses by
    multiples of 512 B, in another order: the same replay to the bit, and the same key.
    Moved by 32 B (other alignments): another key."""
    rng = np.random.default_rng(seed)
    small_l2 = dataclasses.replace(SOC, l2_size=64 << 10)      # evictions and write-backs
    sizes = [int(rng.integers(1, 64)) * 512 for _ in range(5)]
    align = [int(rng.choice([0, 32, 96])) for _ in range(5)]
    a = [(0x1000_0000 + i * 0x10000 + align[i], sizes[i]) for i in range(5)]
    b = [None] * 5
    at = 0x7700_0000
    for i in rng.permutation(5):                # another order, other gaps
        b[i] = (at + align[i], sizes[i])
        at += (sizes[i] // 512 + 1 + int(rng.integers(1, 40))) * 512
    ra = _records(np.random.default_rng(seed + 100), a, 6)
    rb = _records(np.random.default_rng(seed + 100), b, 6)
    assert ra != rb
    for soc in (SOC, small_l2):
        ta = timing._replay(ra, soc, True, None, timing.PROFILE_PIPES, None)
        tb = timing._replay(rb, soc, True, None, timing.PROFILE_PIPES, None)
        assert_same_timing(tb, ta)
    key = timing._relocated_key(ra, SOC.l2_line_bytes)
    assert key is not None and key == timing._relocated_key(rb, SOC.l2_line_bytes)
    off = [(addr + 32, n) for addr, n in a]
    rc = _records(np.random.default_rng(seed + 100), off, 6)
    assert timing._relocated_key(rc, SOC.l2_line_bytes) != key


def test_column_tiles_of_one_matrix_keep_their_rows_in_the_key():
    """Two blocks reading interleaved column tiles of one matrix (rows of 1 KiB, 4 KiB
    apart: their rows share no line): moved together by whole lines, the same key; the
    tiles' rows in other places (another column), another key."""
    def tiles(base, cols=(0, 2)):
        return [[(DMA_IN, Pipe.PIPE_MTE2, 0.0, 8 * 1024,
                  (base + c * 1024, 7 * 4096 + 1024, False, ((0, 1024, 4096, 8),)),
                  "DataCopy")] for c in cols]
    key = timing._relocated_key(tiles(1 << 20), 512)
    assert key is not None and key == timing._relocated_key(tiles(1 << 24), 512)
    assert key == timing._relocated_key(tiles(1 << 20, (1, 3)), 512)  # a whole line on
    assert key != timing._relocated_key(tiles(1 << 20, (0, 1)), 512)  # rows that adjoin
    assert timing._relocated_key([[(DMA_IN, Pipe.PIPE_MTE2, 0.0, 8 * 1024,
                                    (1 << 20, 7 * 4096 + 1024, False), "DataCopy")]] * 2,
                                 512) != key


def test_transfers_that_share_lines_or_not_have_other_keys():
    def reads(x, y):
        return [[(DMA_IN, Pipe.PIPE_MTE2, 0.0, 1024, (x, 1024, False), "DataCopy")],
                [(DMA_IN, Pipe.PIPE_MTE2, 0.0, 1024, (y, 1024, False), "DataCopy")]]
    apart = timing._relocated_key(reads(1 << 20, (1 << 20) + 8192), 512)
    assert apart == timing._relocated_key(reads(1 << 24, (1 << 22)), 512)
    assert apart != timing._relocated_key(reads(1 << 20, (1 << 20) + 512), 512)   # one line shared
    assert apart != timing._relocated_key(reads(1 << 20, 1 << 20), 512)           # the same bytes


def test_the_store_forgets_the_least_recently_used_beyond_its_count(monkeypatch):
    monkeypatch.setattr(timing, "REPLAY_KEEP_ENTRIES", 2)
    monkeypatch.setattr(timing, "REPLAY_KEEP_RECORDS", 100)
    kept = timing._KeptReplays()
    kept.put("a", "A", 10)
    kept.put("b", "B", 20)
    assert kept.get("a") == "A"                 # now the most recently used
    kept.put("c", "C", 30)
    assert kept.get("b") is None and kept.get("a") == "A" and kept.get("c") == "C"
    assert kept.records == 40
    kept.put("d", "D", 90)                      # room for it alone
    assert len(kept) == 1 and kept.records == 90
    kept.put("d", "D2", 50)                     # a key kept again: its size replaced
    assert kept.records == 50 and kept.get("d") == "D2"


def test_a_kept_replay_is_held_by_a_digest_of_its_records_by_value(device):
    """The store keeps 16 bytes per replay, not the records; the digest is of the records'
    values (objects shared or not give the same digest) and sees every value."""
    gm, xa, za, n, replays = device
    timing._REPLAY_KEPT.clear()
    launch(gm, xa, za, n)
    (key,) = timing._REPLAY_KEPT.items
    assert type(key) is bytes and len(key) == 16
    rec = (OP, Pipe.PIPE_V, "Adds", 12345678901, 7.5)
    shared = ((rec, rec),)
    apart = (((OP, Pipe.PIPE_V, "Ad" + "ds", 12345678901 + int("0"), 7.5), rec),)
    opts = (SOC, False, None, ())
    assert timing._digest(opts, shared) == timing._digest(opts, apart)
    assert timing._digest(opts, shared) != timing._digest(opts, (((*rec[:4], 7.25), rec),))
    assert timing._digest(opts, shared) != timing._digest((SOC, True, None, ()), shared)
    assert timing._digest(opts, shared) != timing._digest(opts, ("relocated", shared))


def test_a_key_tells_pipes_apart_and_takes_a_pipe_as_its_value():
    """Keys write a pipe as its int (Pipe is an IntEnum, which the replay reads as its
    value): records that differ only in a pipe get other keys; a pipe and its value, the
    same key; by exact addresses and relocated alike."""
    opts = (SOC, False, None, timing.PROFILE_PIPES)

    def blocks(pipe, dma_pipe=Pipe.PIPE_MTE2):
        return [[(OP, pipe, 10.0, 0, None, "Adds"),
                 (DMA_IN, dma_pipe, 0.0, 512, (1 << 20, 512, False), "DataCopy")]]

    for key in (timing._records_key, lambda b: timing._relocated_key(b, SOC.l2_line_bytes)):
        v = timing._digest(opts, key(blocks(Pipe.PIPE_V)))
        assert v != timing._digest(opts, key(blocks(Pipe.PIPE_MTE3)))
        assert v != timing._digest(opts, key(blocks(Pipe.PIPE_V, Pipe.PIPE_MTE3)))
        assert v == timing._digest(opts, key(blocks(int(Pipe.PIPE_V), int(Pipe.PIPE_MTE2))))
