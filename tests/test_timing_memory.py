"""The memory system of the replay (npusim.timing._Memory): bandwidth shared by the
transfers in flight, reads first, the HBM write queue and its drains, the mixed-traffic
HBM capacity and an L2 carried from one launch to the next. Every expected time is worked
out by hand from the parameters set in each test (docs/calibration.md "The model")."""
from dataclasses import replace

import pytest

from npusim import get_soc
from npusim.ascendc.core import DMA_IN, DMA_OUT, OP, SET, WAIT
from npusim.ascendc.types import Pipe
from npusim.timing import L2Cache, simulate

BASE = get_soc("Ascend910B1")
F = BASE.freq_hz


def soc(**kw):
    """Ascend910B1 with round per-cycle capacities: HBM 16 B/cycle, no per-transfer HBM
    overhead, no MTE issue cost (tests/test_mte_issue.py has it), interconnect and L2 out
    of the way unless a test sets them."""
    fields = dict(hbm_bandwidth=16 * F, hbm_transfer_overhead_cycles=0.0,
                  noc_bandwidth=1e6 * F, l2_bandwidth=1e6 * F, hbm_mixed_efficiency=1.0,
                  mte_issue_cycles=0.0)
    fields.update(kw)
    return replace(BASE, **fields)


def read(addr, n, bypass=False):
    return (DMA_IN, Pipe.PIPE_MTE2, 0.0, n, (addr, n, bypass), "DataCopy")


def write(addr, n, bypass=False):
    return (DMA_OUT, Pipe.PIPE_MTE3, 0.0, n, (addr, n, bypass), "DataCopy")


def busy(t, pipe, block=0):
    return t.pipe_busy[pipe][block]


def test_one_core_alone_costs_latency_plus_bytes_at_its_rate():
    s = BASE
    t = simulate([[read(0, 8192, bypass=True)]], s)
    assert t.cycles == pytest.approx(s.dma_latency_cycles + s.mte_issue_cycles + 8192 / 32)
    # the MTE issue model (docs/calibration.md): own time = issue + max(bursts x burst
    # cycles, bytes / rate), then the latency. The read bypasses L2: 16 bursts x 11.5 =
    # 184 < 8192 / 32 = 256, so 164 + 12.5 + 256 = 432.5. The write to L2: 16 x 8.1 =
    # 129.6 < 256, and MTE3 pays the same issue: 27 + 12.5 + 256 = 295.5.
    t = simulate([[write(1 << 20, 8192)]], s)
    assert t.cycles == pytest.approx(s.dma_write_latency_cycles + s.mte_issue_cycles + 8192 / 32)


def test_cores_share_hbm_equally():
    # two cores each read 16 KiB from HBM (16 B/cycle): 8 B/cycle each, 2048 cycles; the
    # 164-cycle latency after the copy's own time hides in the sharing
    # (2048 > 164 + 16384 / 32)
    t = simulate([[read(0, 16384, True)], [read(1 << 20, 16384, True)]], soc())
    assert t.cycles == pytest.approx(2048)
    assert busy(t, Pipe.PIPE_MTE2, 1) == pytest.approx(2048)


def test_a_capped_flow_leaves_its_share_to_the_others():
    # three aligned reads on HBM at 48 B/cycle: 16 B/cycle each (below their 32): 1024
    t = simulate([[read(0, 16384, True)], [read(1 << 20, 16384, True)],
                  [read(2 << 20, 16384, True)]], soc(hbm_bandwidth=48 * F))
    assert t.cycles == pytest.approx(1024)
    # A row off the 512 B grid moves a whole block more, on its core and at HBM (the rule
    # that replaced the 0.7 rate factor on the first row's address). Core 0 reads 65536 B
    # at GM address 32: they touch blocks 0..128, 129 bursts, one more than 65536 / 512.
    # Its own time is max((65536 + 512) / 32, 129 x 11.5) = 2064 cycles (a limit of
    # 31.75 B/cycle), and each byte it moves costs HBM 66048 / 65536 bytes of time. On HBM
    # at 80 B/cycle the three flows rise together to r with r (66048 / 65536 + 2) = 80,
    # r = 26.6 B/cycle, below every limit: all three end at (3 x 65536 + 512) / 80 = 2464
    # (after core 0's latency floor, 164 + 2064 = 2228). Without the extra block at HBM
    # they would end at 3 x 65536 / 80 = 2457.6.
    t = simulate([[read(32, 65536, True)], [read(1 << 20, 65536, True)],
                  [read(2 << 20, 65536, True)]], soc(hbm_bandwidth=80 * F))
    for b in range(3):
        assert busy(t, Pipe.PIPE_MTE2, b) == pytest.approx((3 * 65536 + 512) / 80)
    # A flow capped below its share leaves the rest to the others. Core 0 reads 128 rows
    # of 128 B, 512 B apart (L2 bypassed): 128 bursts at 11.5 cycles = 1472 cycles for its
    # 16384 B (its bytes alone would take 512): 16384 / 1472 = 11.13 B/cycle. On HBM at
    # 48 B/cycle the two others share 48 - 11.13 = 36.87 B/cycle, 18.43 each (below their
    # 32), and end at 16384 / 18.43 = 888.9; core 0 ends at 164 + 1472 = 1636.
    rows = (0, 127 * 512 + 128, True, ((0, 128, 512, 128),))
    row_read = (DMA_IN, Pipe.PIPE_MTE2, 0.0, 16384, rows, "DataCopy")
    t = simulate([[row_read], [read(1 << 20, 16384, True)], [read(2 << 20, 16384, True)]],
                 soc(hbm_bandwidth=48 * F))
    assert busy(t, Pipe.PIPE_MTE2, 0) == pytest.approx(BASE.dma_latency_cycles + 128 * 11.5)
    share = (48 - 16384 / (128 * 11.5)) / 2
    assert busy(t, Pipe.PIPE_MTE2, 1) == pytest.approx(16384 / share)
    assert busy(t, Pipe.PIPE_MTE2, 2) == pytest.approx(16384 / share)


def test_writes_take_what_the_reads_leave_on_the_interconnect():
    # interconnect 40 B/cycle: the read (capped at 32 B/cycle) goes first, the write to L2
    # gets 8 B/cycle until the read ends at 512, then its own 32: 4096 B by 512, the other
    # 12288 B in 384 cycles -> 896. (Own times: the read's 32 bursts x 11.5 = 368 and the
    # write's 32 x 8.1 = 259.2 are below their bytes' 512.) The read's bytes are through
    # at 512; it completes its latency after its own time: 164 + 512 = 676. The write's
    # latency floor, 27 + 512 = 539, is below its 896.
    t = simulate([[read(0, 16384, True)], [write(1 << 20, 16384)]],
                 soc(hbm_bandwidth=64 * F, noc_bandwidth=40 * F))
    assert busy(t, Pipe.PIPE_MTE2, 0) == pytest.approx(676)
    assert busy(t, Pipe.PIPE_MTE3, 1) == pytest.approx(896)
    assert t.cycles == pytest.approx(896)


def test_cube_transfers_do_not_use_the_vector_interconnect():
    # the same read and write from AIC blocks (they have PIPE_FIX): no interconnect limit
    mark = (0, Pipe.PIPE_FIX, 1.0, 0, None, "Fixpipe")
    t = simulate([[mark, read(0, 16384, True)], [mark, write(1 << 20, 16384)]],
                 soc(hbm_bandwidth=64 * F, noc_bandwidth=40 * F))
    assert t.cycles == pytest.approx(BASE.dma_latency_cycles + 512)


def _dirty_l2(s, nbytes=2048):
    """An L2 of ``s`` holding ``nbytes`` of dirty lines, written by a first launch."""
    l2 = L2Cache(s)
    simulate([[write(0, nbytes)]], s, l2=l2)
    return l2


def test_a_write_batch_holds_hbm_and_the_reads_wait_for_it():
    # L2 of 4 lines, all dirty; no room in the write queue (Q = 0, so its high mark is 0):
    # the 2 KiB of victims turn the bus to writes; the batch drains them with all of HBM
    # (16 B/cycle, 128 cycles) while the read's own 2 KiB miss waits, then the read: 256
    s = soc(l2_size=2048, hbm_write_queue_bytes=0, dma_latency_cycles=0)
    t = simulate([[read(1 << 20, 2048)]], s, l2=_dirty_l2(s))
    assert t.cycles == pytest.approx(256)
    assert t.hbm_bytes == 4096
    # the batch drains beside a waiting read: capacity x hbm_mixed_efficiency (0.5: 8 B/cycle,
    # 256 cycles), then the read alone at 16 B/cycle (128): 384
    s = replace(s, hbm_mixed_efficiency=0.5)
    t = simulate([[read(1 << 20, 2048)]], s, l2=_dirty_l2(s))
    assert t.cycles == pytest.approx(384)


def test_a_write_queue_below_its_high_mark_takes_the_victims_without_a_wait():
    # Q = 4 KiB, high mark 85% = 3481.6 B: the queue takes the 2 KiB of victims; the read's
    # miss alone: 2048 / 16 = 128 cycles
    s = soc(l2_size=2048, hbm_write_queue_bytes=4096, dma_latency_cycles=0)
    t = simulate([[read(1 << 20, 2048)]], s, l2=_dirty_l2(s))
    assert t.cycles == pytest.approx(128)
    assert t.hbm_bytes == 4096          # the victims are HBM traffic all the same


def test_the_queue_drains_to_its_resting_level_in_the_hbm_time_the_reads_leave():
    # L2 of 8 lines, all dirty; Q = 4 KiB: high mark 3481.6 B, low mark 2048, batch m =
    # 1024, resting level 2048 - 1024 = 1024. The first read (2 KiB miss, 0-128) queues its
    # 2 KiB of victims; once HBM is free they drain down to 1024 (128-192). The second read
    # waits for a 1000-cycle vector op and queues its own 2 KiB: 3072, below the high mark,
    # no wait: 1000 + 128.
    s = soc(l2_size=4096, hbm_write_queue_bytes=4096, dma_latency_cycles=0,
            hbm_min_writes_per_switch_bytes=1024)
    key = ("V_MTE2", 0)
    records = [read(1 << 20, 2048), (OP, Pipe.PIPE_V, 1000.0, 0, None, "Add"),
               (SET, Pipe.PIPE_V, 0.0, 0, key, "SetFlag"),
               (WAIT, Pipe.PIPE_MTE2, 0.0, 0, key, "WaitFlag"), read(2 << 20, 2048)]
    t = simulate([records], s, l2=_dirty_l2(s, 4096))
    assert t.cycles == pytest.approx(1128)
    # with the low mark at 100% the resting level is 3072: nothing drains in the spare time,
    # the second read finds 4096 B queued, above the high mark, and waits for a batch of
    # max(4096 - 3481.6, 1024) = 1024 B (64 cycles): 1192
    t = simulate([records], replace(s, hbm_write_low_thresh_perc=100.0),
                 l2=_dirty_l2(s, 4096))
    assert t.cycles == pytest.approx(1192)


@pytest.mark.parametrize("batch, cycles", [
    (1024, 1024 / 16 + 256),            # m bytes, the queue then at 3072 <= the high mark
    (256, (4096 - 3481.6) / 16 + 256),  # m = 256 leaves it above: the batch goes on to 3481.6
    (1 << 20, 4096 / 16 + 256),         # m > L: resting level 0, the batch empties the queue
])
def test_a_batch_ends_after_m_bytes_once_the_queue_is_back_at_its_high_mark(batch, cycles):
    # L2 of 8 lines, all dirty; a 4 KiB read evicts all of them: 4096 B queued, above the
    # high mark (3481.6); the batch, then the read's 4096 B miss at 16 B/cycle (256)
    s = soc(l2_size=4096, hbm_write_queue_bytes=4096, dma_latency_cycles=0,
            hbm_min_writes_per_switch_bytes=batch)
    t = simulate([[read(1 << 20, 4096)]], s, l2=_dirty_l2(s, 4096))
    assert t.cycles == pytest.approx(cycles)


@pytest.mark.parametrize("queue, cycles", [(0, 2048 / 16), (512, 1536 / 16), (4096, 2048 / 32)])
def test_a_write_whose_victims_find_the_queue_full_waits_for_room(queue, cycles):
    # L2 of 4 lines, all dirty; a 2 KiB copy-out to L2 (32 B/cycle, 64 cycles) evicts them.
    # Q = 0: it waits until the batch has drained all 2 KiB (128 cycles); Q = 512: until the
    # 1536 B beyond the queue are through (96); Q = 4 KiB: the queue takes them (64)
    s = soc(l2_size=2048, hbm_write_queue_bytes=queue, dma_write_latency_cycles=0)
    t = simulate([[write(1 << 20, 2048)]], s, l2=_dirty_l2(s))
    assert busy(t, Pipe.PIPE_MTE3) == pytest.approx(cycles)


def test_the_l2_carried_from_the_previous_launch_serves_hits():
    s = soc()
    l2 = L2Cache(s)
    first = simulate([[read(0, 8192)]], s, l2=l2)
    again = simulate([[read(0, 8192)]], s, l2=l2)
    assert first.cycles == pytest.approx(8192 / 16)                   # HBM-bound miss
    assert again.cycles == pytest.approx(s.dma_latency_cycles + 8192 / s.l2_read_rate)
    assert again.l2_hit_bytes == 8192 and again.hbm_bytes == 0
