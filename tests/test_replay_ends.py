"""The replay's memory system always moves on (npusim.timing._Memory): every wake it
schedules advances the clock, so a remainder too small for the float64 spacing of a late
``now`` is settled instead of being woken for again and again at the same instant."""
import heapq
from dataclasses import replace

from hypothesis import given, settings, strategies as st

from npusim import get_soc
from npusim.ascendc.core import DMA_IN, DMA_OUT
from npusim.timing import _Loop, _Memory

SOC = get_soc("Ascend910B1")


def run(loop: _Loop, limit: int) -> int:
    """Run ``loop`` as :meth:`_Loop.run` does, but stop with an AssertionError after
    ``limit`` events (a replay that cannot end); return the events handled."""
    queue, n = loop.queue, 0
    while queue:
        n += 1
        assert n <= limit, f"still {len(queue)} events at {loop.now!r} after {limit}"
        loop.now, _, _, fn, arg = heapq.heappop(queue)
        fn(arg)
    return n


def test_a_write_backlog_remainder_below_the_clock_spacing_is_drained():
    # The state a 8192^3 fp16 Matmul on 24 AICs reached: at 16,807,845.8 cycles a write
    # batch has 1.15e-6 B left above the queue's resting level (just above the 1e-6
    # tolerance of the batch's end), draining at all of HBM (864.9 B/cycle): 1.33e-9
    # cycles, under half the float64 spacing of now (3.7e-9), so now + delay == now.
    loop = _Loop()
    loop.now = 16_807_845.8
    mem = _Memory(SOC, loop)
    mem.since = loop.now
    mem.backlog = mem.rest + 1.15e-6
    mem.writing = True
    mem.batch_until = mem.drained
    assert loop.now + 1.15e-6 / mem.capacity[mem.HBM] == loop.now
    mem._changed()
    assert run(loop, 100) <= 10
    assert loop.now > 16_807_845.8
    assert not mem.writing and mem.backlog <= mem.rest + 1e-6


def test_a_flow_remainder_below_the_clock_spacing_ends():
    # a read with 1.5e-6 B left (above the 1e-6 of a finished flow) at 1e9 cycles, where
    # the spacing is 1.2e-7 cycles: at its 32 B/cycle it needs 4.7e-8
    loop = _Loop()
    loop.now = 1e9
    mem = _Memory(SOC, loop)
    mem.since = loop.now
    ended = []
    mem.transfer(loop.now, DMA_IN, 4096, (0, 4096, True))[0].callbacks.append(ended.append)
    mem.left[0] = 1.5e-6                  # as the rounding of earlier wakes can leave it
    assert loop.now + 1.5e-6 / SOC.ddr_read_rate == loop.now
    assert run(loop, 100) <= 10
    assert ended and not mem.flows


transfers = st.lists(st.tuples(
    st.floats(0, 5000),                         # start, cycles after the offset
    st.sampled_from((DMA_IN, DMA_OUT)),
    st.integers(1, 1 << 17),                    # bytes
    st.integers(0, 63),                         # address, in 4 KiB + 32 B steps
    st.booleans(),                              # bypass L2 (a write goes to the queue)
    st.booleans()),                             # from an AIC
    min_size=1, max_size=24)


@settings(max_examples=60, deadline=None)
@given(transfers, st.sampled_from((0.0, 1e7, 3.3e7, 1e8, 7.7e8, 1e9)),
       st.floats(0.05, 4.0), st.floats(0.05, 4.0), st.sampled_from((64 << 10, 256 << 10)))
def test_random_flows_always_drain_in_a_bounded_number_of_events(
        flows, offset, hbm_scale, rate_scale, l2_size):
    # a small L2 and write queue, so that writes evict dirty lines into the queue and write
    # batches start and end; rates scaled at random
    soc = replace(SOC, l2_size=l2_size, hbm_write_queue_bytes=32 << 10,
                  hbm_min_writes_per_switch_bytes=4096,
                  hbm_bandwidth=SOC.hbm_bandwidth * hbm_scale,
                  ddr_read_rate=SOC.ddr_read_rate * rate_scale,
                  ddr_write_rate=SOC.ddr_write_rate * rate_scale)
    loop = _Loop()
    loop.now = offset
    mem = _Memory(soc, loop)
    mem.since = offset
    ended = []

    def start(arg):
        kind, nbytes, addr, bypass, cube = arg
        done = mem.transfer(loop.now, kind, nbytes, (addr, nbytes, bypass), cube)[0]
        done.callbacks.append(ended.append)

    for at, kind, nbytes, slot, bypass, cube in flows:
        loop.schedule(at, 1, start, (kind, nbytes, slot * 4128, bypass, cube))
    # each transfer starts, shares, ends and can turn the write queue's bus a few times
    run(loop, 60 * len(flows) + 60)
    assert len(ended) == len(flows)
    assert not mem.flows and mem.backlog <= mem.rest + 1e-6 + 1e-9
