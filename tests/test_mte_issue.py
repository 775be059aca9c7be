"""The MTE issue model (docs/calibration.md "The MTE issue model"): bursts on the 512 B
grid, a row off the grid moving a whole block more, copies in flight, and same-address
reads served one at a time. Each expected figure is computed by hand from the preset's
parameters."""
from dataclasses import replace

import pytest

from npusim import get_soc
from npusim.ascendc.core import DMA_IN, SET, WAIT
from npusim.ascendc.types import Pipe
from npusim.timing import row_bursts, simulate

SOC = get_soc("Ascend910B1")
MTE2, V = Pipe.PIPE_MTE2, Pipe.PIPE_V


def read(addr, nbytes, bypass=False, rows=None, span=None):
    key = (addr, span or nbytes, bypass) if rows is None else (addr, span, bypass, rows)
    return (DMA_IN, MTE2, 0.0, nbytes, key, "DataCopy")


def test_bursts_count_the_512_byte_blocks_each_row_touches():
    assert row_bursts(0, 2048, None, 512) == (4, 0)
    assert row_bursts(256, 2046, None, 512) == (5, 1)        # off the grid: one block more
    assert row_bursts(2, 2046, None, 512) == (4, 0)          # ends on the grid: fits in 4
    assert row_bursts(0, 128, None, 512) == (1, 0)            # a short row: one burst
    # 64 rows of 2046 B, 24574 B apart (the best practice's U4): 5 blocks a row but the few
    # that happen to fit in 4
    rows = ((0, 2046, 24574, 64),)
    n, extra = row_bursts(0, 63 * 24574 + 2046, rows, 512)
    starts = [(i * 24574) % 512 for i in range(64)]
    want = sum((s + 2046 - 1) // 512 + 1 for s in starts)
    assert (n, extra) == (want, want - 64 * 4)
    assert row_bursts(0, 63 * 24576 + 2048, ((0, 2048, 24576, 64),), 512) == (256, 0)


def test_back_to_back_copies_overlap_their_latencies():
    # one core, 100 copies of one 128 B row (each a sector of its own): each costs the
    # issue and one burst; the latency is paid once, after the last
    n = 100
    t = simulate([[read(i * 4096, 128) for i in range(n)]], SOC)
    own = SOC.mte_issue_cycles + max(128 / SOC.ddr_read_rate, SOC.mte_burst_cycles)
    assert t.cycles == pytest.approx(n * own + SOC.dma_latency_cycles)
    assert t.pipe_busy[MTE2][0] == pytest.approx(t.cycles)


def test_a_flag_set_after_copies_waits_for_them_to_complete():
    # MTE2 -> V: the vector unit starts after the copy's latency, not at its last byte
    recs = [read(0, 8192), (SET, MTE2, 0, 0, ("e",), "SetFlag"),
            (WAIT, V, 0, 0, ("e",), "WaitFlag"), (0, V, 10.0, 0, None, "Add")]
    t = simulate([recs], SOC)
    own = SOC.mte_issue_cycles + 8192 / SOC.ddr_read_rate
    assert t.cycles == pytest.approx(own + SOC.dma_latency_cycles + 10.0)


def test_a_row_off_the_grid_moves_a_whole_block_more():
    # one core, 1 KiB: aligned, 2 blocks at the per-core rate; 256 B off the grid, 3 blocks
    # (the published worst case: 70% of the aligned rate)
    aligned = simulate([[read(0, 1024)]], SOC).cycles
    off = simulate([[read(256, 1024)]], SOC).cycles
    lat = SOC.dma_latency_cycles + SOC.mte_issue_cycles
    assert aligned == pytest.approx(lat + 1024 / SOC.ddr_read_rate)
    assert off == pytest.approx(lat + 1536 / SOC.ddr_read_rate)
    # on a part without the grid (910A) the two cost the same
    a = get_soc("Ascend910A")
    assert simulate([[read(256, 1024)]], a).cycles == simulate([[read(0, 1024)]], a).cycles


def test_short_rows_cost_their_bursts_and_bypassing_ones_more():
    rows = ((0, 128, 24576, 64),)
    span = 63 * 24576 + 128
    via_l2 = simulate([[read(0, 64 * 128, rows=rows, span=span)]], SOC).cycles
    around = simulate([[read(0, 64 * 128, True, rows=rows, span=span)]], SOC).cycles
    lat = SOC.dma_latency_cycles + SOC.mte_issue_cycles
    assert via_l2 == pytest.approx(lat + 64 * SOC.mte_burst_cycles)
    assert around == pytest.approx(lat + 64 * SOC.mte_burst_bypass_cycles)


def test_cores_reading_the_same_bytes_at_once_share_the_same_address_bandwidth():
    # 8 cores read the same bypassed 64 KiB at once: together at most
    # same_address_bandwidth; reading 8 different ranges they are not held back by it
    soc = replace(SOC, same_address_bandwidth=0.2e12)
    nbytes = 65536
    same = simulate([[read(0, nbytes, True)] for _ in range(8)], soc)
    apart = simulate([[read(b * (1 << 20), nbytes, True)] for b in range(8)], soc)
    cap = soc.same_address_bandwidth / soc.freq_hz                    # B/cycle
    # (the latency hides in the queueing: each read's bytes take longer than it)
    assert same.cycles == pytest.approx(8 * nbytes / cap, rel=1e-6)
    assert apart.cycles < same.cycles / 2
    off = replace(soc, same_address_bandwidth=0.0)
    assert simulate([[read(0, nbytes, True)] for _ in range(8)], off).cycles == \
        pytest.approx(apart.cycles)


def test_a_batch_record_costs_what_the_copies_it_stands_for_cost():
    # 16 copies of one 384 B row each, L2 bypassed, the core waiting for each (a flag set
    # on MTE2 after each), at addresses 384 B apart: rows 1 and 2 of every 4 cross a 512 B
    # block (2 bursts and a whole block more: (384 + 512) / 32 = 28 cycles > 2 x 11.5),
    # rows 0 and 3 do not (384 / 32 = 12 > 11.5). Each copy: 12.5 + 12 or 28 + 164;
    # 8 x 188.5 + 8 x 204.5 = 3144.
    from npusim.timing import batch_key, rows_bursts
    addrs = [384 * i for i in range(16)]
    copies = []
    for i, a in enumerate(addrs):
        copies += [read(a, 384, True), (SET, MTE2, 0.0, 0, (("t", i), "m"), "SetFlag"),
                   (WAIT, V, 0.0, 0, (("t", i), "m"), "WaitFlag")]
    one = simulate([copies], SOC)
    assert one.pipe_busy[MTE2][0] == pytest.approx(8 * 188.5 + 8 * 204.5)
    # the batch record (timing.batch_key) stands for them: 16 issues (200), its 24 bursts
    # (8 extra) bound by their bytes, (6144 + 8 x 512) / 32 = 320 > 24 x 11.5 = 276, and
    # 15 of the latencies as its waits: 200 + 320 + 16 x 164 = 3144, the copies' figure.
    assert rows_bursts(addrs, 384, 512) == (24, 8)
    rec = (DMA_IN, MTE2, 0.0, 16 * 384, batch_key(0, 384, True, 16, 24, 8, waits=15),
           "DataCopy")
    batch = simulate([[rec]], SOC)
    assert batch.pipe_busy[MTE2][0] == pytest.approx(3144)
    # the same bytes as one plain transfer: one issue and one latency, 12.5 + 192 + 164
    plain = simulate([[(DMA_IN, MTE2, 0.0, 16 * 384, (0, 384, True), "DataCopy")]], SOC)
    assert plain.pipe_busy[MTE2][0] == pytest.approx(12.5 + 192 + 164)


def test_a_read_continues_its_own_blocks_stream_not_another_blocks():
    # two cores, each reading 4 KiB chunks of its own region one after the other, L2
    # bypassed, HBM the bottleneck (2 B/cycle; no interconnect, no L2 limit): HBM's
    # new-stream overhead is paid by each core's first chunk only, its other chunks
    # taking up where its own previous one ended. Each overhead is that many cycles of
    # the HBM bus, so the launch is 2 x 100 cycles longer than with no overhead (reading
    # one stream shared by all cores, the interleaved chunks would pay it 8 times).
    f = SOC.freq_hz
    base = replace(SOC, hbm_bandwidth=2 * f, noc_bandwidth=1e6 * f, l2_bandwidth=1e6 * f,
                   hbm_transfer_overhead_cycles=0.0)
    blocks = [[read(b * (1 << 20) + i * 4096, 4096, True) for i in range(4)] for b in range(2)]
    free = simulate(blocks, base).cycles
    assert free == pytest.approx(8 * 4096 / 2, rel=1e-6)     # the latency hides in the queue
    paid = simulate(blocks, replace(base, hbm_transfer_overhead_cycles=100.0)).cycles
    assert paid - free == pytest.approx(2 * 100.0, rel=1e-6)


def test_a_row_off_the_grid_costs_hbm_whole_blocks_though_l2_holds_its_edge():
    # one core, HBM at 2 B/cycle (the bottleneck), no new-stream overhead. Copy A reads
    # [200, 1224): 1 KiB over three 512 B blocks (one more than 1 KiB needs), HBM 1536 B.
    # Copy B reads the next columns, [1224, 2248): also three blocks; its first 128 B
    # sector (bytes 1152-1279) is A's last, an L2 hit (1 of its 9 sectors), but B's
    # request for that block needs its other sectors from HBM: B costs HBM 1536 B too,
    # not 1024 x 8/9 + 512 x 8/9 (which gave 1365.3). 3072 B at 2 B/cycle.
    f = SOC.freq_hz
    soc = replace(SOC, hbm_bandwidth=2 * f, noc_bandwidth=1e6 * f, l2_bandwidth=1e6 * f,
                  hbm_transfer_overhead_cycles=0.0)
    assert row_bursts(200, 1024, None, 512) == (3, 1)
    assert row_bursts(1224, 1024, None, 512) == (3, 1)
    t = simulate([[read(200, 1024), read(1224, 1024)]], soc)
    assert t.l2_hit_bytes == pytest.approx(1024 / 9)
    assert t.cycles == pytest.approx((1536 + 1536) / 2, rel=1e-6)
