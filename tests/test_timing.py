"""The timing model: hand-computed single-core costs, sync edges, overlap, and the
shared HBM ceiling."""
import numpy as np
import pytest

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403

from kernel_helpers import streaming_kernel

SOC = get_soc("Ascend910B1")
US_PER_CYCLE = 1e6 / SOC.freq_hz


def test_one_dma_costs_latency_plus_bytes_over_rate(scalar_issue_off):
    def k(src):
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 8192)
        g = GlobalTensor(half)
        g.SetGlobalBuffer(src, 4096)
        DataCopy(buf.Get(half), g, 4096)

    gm = GlobalMemory(1 << 20)
    prof = run_kernel(k, 1, (gm.malloc(8192),), soc=SOC, gm=gm)
    # latency + issue + bytes at the per-core rate (docs/calibration.md "The MTE issue model")
    cycles = SOC.dma_latency_cycles + SOC.mte_issue_cycles + 8192 / SOC.ddr_read_rate
    assert prof.duration_us == pytest.approx(SOC.launch_overhead_us + cycles * US_PER_CYCLE)
    assert prof.pipe_time_us["aiv_mte2_time"] == pytest.approx(cycles * US_PER_CYCLE)


def test_vector_cost_is_head_plus_count_over_rate():
    def k():
        pipe = TPipe()
        buf = TBuf()
        pipe.InitBuffer(buf, 32768)
        a = buf.Get(float32)
        Duplicate(a, 1.0, 1000)          # 64 fp32 / cycle: ceil(1000/64) = 16
        Sqrt(a, a, 1000)                 # 32 / cycle: ceil(1000/32) = 32

    prof = run_kernel(k, 1, (), soc=SOC, gm=GlobalMemory(1024))
    cycles = 2 * SOC.vec_head_cycles + 16 + 32
    assert prof.pipe_time_us["aiv_vec_time"] == pytest.approx(cycles * US_PER_CYCLE)


def _run_stream(buffer_num, block_dim, tile=4096, n_tiles=16, keep_spans=False):
    gm = GlobalMemory(1 << 30)
    n = tile * n_tiles * block_dim
    x, z = gm.malloc(n * 2), gm.malloc(n * 2)
    gm.write(x, np.linspace(-1, 1, n).astype(np.float16))
    prof = run_kernel(streaming_kernel(buffer_num, tile, n_tiles), block_dim, (x, z),
                      soc=SOC, gm=gm, keep_spans=keep_spans)
    out = np.frombuffer(gm.read(z, n * 2), np.float16)
    expect = np.exp(np.linspace(-1, 1, n).astype(np.float16) * np.float16(2))
    assert np.allclose(out, expect, rtol=2e-3)
    return prof


def test_queue_handoffs_order_the_pipes():
    prof = _run_stream(1, 1, n_tiles=2, keep_spans=True)
    spans = prof.timing.spans[0]
    mte2 = [s for s in spans if s[0] == PIPE_MTE2]
    vec = [s for s in spans if s[0] == PIPE_V]
    mte3 = [s for s in spans if s[0] == PIPE_MTE3]
    assert vec[0][1] >= mte2[0][2]          # compute waits for its copy-in
    assert mte3[0][1] >= vec[0][2]          # copy-out waits for the compute
    assert mte2[1][1] >= vec[0][2]          # single buffer: next copy-in waits for FreeTensor


def test_double_buffering_overlaps_copy_and_compute(scalar_issue_off):
    single = _run_stream(1, 1)
    double = _run_stream(2, 1)
    # (0.81 since copies overlap their latencies in the single-buffered kernel too)
    assert double.duration_us < 0.85 * single.duration_us
