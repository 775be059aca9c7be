"""UB bank conflicts by the documented 2201 rules (npusim/ascendc/ubbank.py).

Hand-computed cases from Ascend C's best-practice page 避免bank冲突（NPU架构版本2201）.md
(its address, write-write and read-read tables) and the ``bank_conflict_ub`` sample of
asc-devkit (examples/01_simd_cpp_api/05_best_practices/04_memory_access/bank_conflict_ub:
eight Add layouts with their measured cycles). A2/A3 layout: 48 banks x 128 rows x 32 B,
16 bank groups; row r is in group r % 16 and bank group + 16 * (r // 2048).
"""
import dataclasses

import numpy as np
import pytest

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import Add, Adds, BinaryRepeatParams, LocalTensor, TPosition, \
    UnaryRepeatParams, float32, half
from npusim.ascendc.checker import CheckerConfig
from npusim.ascendc.ubbank import bank_of, conflict_cycles, operand, slot_cycles
from npusim.ascendc.vector import _bank_conflict

SOC = get_soc("Ascend910B1")
LAY = (16, 2048)


def op(addr, blocks=8, blk=1, rep=8):
    """An operand at UB byte ``addr``; strides in 32 B blocks, as BinaryRepeatParams has them."""
    return operand(addr, blocks, blk * 32, rep * 32)


# -- the address decoding -------------------------------------------------------------------
@pytest.mark.parametrize("addr, bank, group", [
    (0x10000, 16, 0), (0x10020, 17, 1), (0x20020, 33, 1),      # the page's figure 2
    (0x10E20, 17, 1),                                           # its read-write example 2
    (0x0, 0, 0), (0x10100, 24, 8), (0x4020, 1, 1), (0x14100, 24, 8),   # the sample's tables
    (0x1FE00, 16, 0), (0x20000, 32, 0), (0x20200, 32, 0), (0x1FF00, 24, 8),
])
def test_addresses_decode_as_documented(addr, bank, group):
    assert bank_of(addr) == (bank, group)


# -- the page's tables (one repeat) ---------------------------------------------------------
def test_read_write_conflict_is_per_bank():
    # one block each: src 0x10020 (bank 17) with dst 0x10000 (bank 16): no conflict; with
    # dst 0x10E20 (bank 17 too): the read and the write queue on one bank, 2 cycles
    assert slot_cycles(LAY, 1, op(0x10000, 1), (op(0x10020, 1),)).tolist() == [1]
    assert slot_cycles(LAY, 1, op(0x10E20, 1), (op(0x10020, 1),)).tolist() == [2]
    # same bank group, other bank: a group serves one read and one write a cycle
    assert slot_cycles(LAY, 1, op(0x20020, 1), (op(0x10020, 1),)).tolist() == [1]


@pytest.mark.parametrize("blk, cycles", [(16, 8), (8, 4), (4, 2), (2, 1), (1, 1)])
def test_block_stride_decides_the_write_write_and_read_read_queues(blk, cycles):
    # 8 blocks from 0x1FE00 (row 4080, group 0), blkStride blk: rows 4080 + blk * b. 16
    # puts all 8 in group 0 (8 cycles), 8 four each in groups 0 and 8 (4 cycles: the page's
    # write-write and single-source read-read tables), 4 two each in 0, 4, 8, 12
    assert slot_cycles(LAY, 1, op(0x1FE00, blk=blk), ()).tolist() == [cycles]
    assert slot_cycles(LAY, 1, None, (op(0x1FE00, blk=blk),)).tolist() == [cycles]


def test_read_read_conflict_is_per_bank_group():
    # src0 0x10020 with src1 0x20020: other banks, the same group: 2 cycles; with 0x10000:
    # other groups, 1 cycle (the page's double-source table)
    assert slot_cycles(LAY, 1, None, (op(0x10020, 1), op(0x20020, 1))).tolist() == [2]
    assert slot_cycles(LAY, 1, None, (op(0x10020, 1), op(0x10000, 1))).tolist() == [1]
    # one operand named twice is read once
    assert slot_cycles(LAY, 1, None, (op(0x10020), op(0x10020))).tolist() == [1]


# -- the bank_conflict_ub sample: Add, float, 4096 elements, 64 repeats ---------------------
#: scenario -> (src0, src1, dst, (src0BlkStride, src0RepStride), measured cycles for 1000
#: Adds (the sample's README, GetSystemCycle), extra cycles the rules give for 64 repeats)
SCENARIOS = {
    1: (0x0, 0x10100, 0x20000, (1, 8), 2390, 0),    # no conflict
    2: (0x0, 0x4000, 0x10000, (1, 8), 4167, 64),    # src0/src1 in one bank: read-read
    3: (0x0, 0x10000, 0x14100, (1, 8), 4167, 64),   # one bank group, other banks: read-read
    4: (0x0, 0x10100, 0x4000, (1, 8), 2389, 0),     # dst on src0's banks: write delayed
    5: (0x0, 0x10100, 0x4020, (1, 8), 3751, 64),    # dst one group on: read-write
    6: (0x0, 0x10100, 0x10100, (1, 8), 2390, 0),    # dst == src1: write delayed
    7: (0x0, 0x10100, 0x10100, (0, 1), 3584, 32),   # src0 walks groups 0, 1, 2...: read-read
    8: (0x0, 0x10100, 0x10100, (0, 8), 2389, 0),    # src0 alternates groups 0, 8: none
}


@pytest.mark.parametrize("sc", sorted(SCENARIOS))
def test_sample_scenarios_by_the_rules(sc):
    s0, s1, d, (blk0, rep0), _, extra = SCENARIOS[sc]
    got = conflict_cycles(LAY, 64, 1.0, op(d), (op(s0, blk=blk0, rep=rep0), op(s1)))
    assert got == extra


def _add_cycles(sc):
    """PIPE_V cycles of the sample's Add, run as a kernel at the sample's UB addresses."""
    s0, s1, d, (blk0, rep0), _, _ = SCENARIOS[sc]

    def kernel():
        x = LocalTensor.at(float32, TPosition.VECCALC, s0, 4096)
        y = LocalTensor.at(float32, TPosition.VECCALC, s1, 4096)
        z = LocalTensor.at(float32, TPosition.VECCALC, d, 4096)
        Add(z, x, y, 64, 64, BinaryRepeatParams(1, blk0, 1, 8, rep0, 8))

    prof = run_kernel(kernel, 1, (), soc=SOC, gm=GlobalMemory(1 << 20), reserve_ub=False,
                      checks=CheckerConfig(enabled=False), keep_spans=True)
    return [r[2] for r in prof.records[0] if r[5] == "Add"][0]


def test_sample_kernel_costs_what_the_page_measures():
    got = {sc: _add_cycles(sc) for sc in SCENARIOS}
    head = SOC.vec_head_cycles
    assert got == {sc: head + 64 + v[5] for sc, v in SCENARIOS.items()}
    # the measured order: 2 = 3 > 5 > 7 > 1 = 4 = 6 = 8 (the model has 5 equal to 2 and 3)
    assert got[2] == got[3] >= got[5] > got[7] > got[1] == got[4] == got[6] == got[8]
    # each layout's time relative to the conflict-free one within 15% of the measured ratio
    for sc, v in SCENARIOS.items():
        model, measured = got[sc] / got[1], v[4] / SCENARIOS[1][4]
        assert abs(model / measured - 1) < 0.15, (sc, model, measured)


def test_strides_of_the_transpose_example():
    """The page's (8, 16, 16) -> (16, 8, 16) transpose: 16 Adds reading 8 blocks 512 B apart
    (one bank group: 8 cycles a repeat) against 8 Adds of 2 repeats reading contiguously and
    writing blocks 256 B apart (groups 0 and 8: 4 cycles a repeat)."""
    def kernel(optimised):
        def body():
            src = LocalTensor.at(half, TPosition.VECCALC, 0, 2048)
            dst = LocalTensor.at(half, TPosition.VECCALC, 0x10100, 2048)
            if optimised:
                for i in range(8):
                    Adds(dst[i * 16], src[i * 256], 0, 128, 2, UnaryRepeatParams(8, 1, 1, 8))
            else:
                for i in range(16):
                    Adds(dst[i * 128], src[i * 16], 0, 128, 1, UnaryRepeatParams(1, 16, 8, 8))
        return body

    def vec(optimised):
        prof = run_kernel(kernel(optimised), 1, (), soc=SOC, gm=GlobalMemory(1 << 20),
                          reserve_ub=False, checks=CheckerConfig(enabled=False),
                          keep_spans=True)
        return sum(r[2] for r in prof.records[0] if r[5] == "Adds")

    head = SOC.vec_head_cycles
    assert vec(False) == 16 * (head + 8)
    assert vec(True) == 8 * (head + 2 * 4)


def test_conflicts_hide_under_slow_compute():
    # Exp-like repeats of 4 cycles: a 2-cycle read-read queue costs nothing more
    assert conflict_cycles(LAY, 64, 4.0, op(0x10000), (op(0x0), op(0x4000))) == 0
    assert conflict_cycles(LAY, 64, 1.0, op(0x10000), (op(0x0), op(0x4000))) == 64


def test_memoised_wrapper_keeps_its_meaning():
    # the Add study's case-3 layout (y 32 KiB after x: the same groups) conflicts; case 6's
    # (y 256 B closer: the other eight groups) does not; an in-place operand does not
    assert _bank_conflict(48, 16, 16384 * 4, (0, 16384 * 2)) is True
    assert _bank_conflict(48, 16, 16384 * 4, (0, 16384 * 2 - 256)) is False
    assert _bank_conflict(48, 16, 512, (512, 512)) is False


def test_a_layout_sweep_matches_a_direct_count_of_the_rules():
    """Random one-repeat layouts (addresses, block strides) against the rules counted
    directly: per bank group at most one read and one write a cycle, per bank one access."""
    rng = np.random.default_rng(7)
    bank = lambda r: (r // 2048) * 16 + r % 16     # noqa: E731

    def queue(reads, writes):
        want = 1
        for g in range(16):
            r = [x for x in reads if x % 16 == g]
            w = [x for x in writes if x % 16 == g]
            want = max(want, len(r), len(w))
            for b in {bank(x) for x in r + w}:
                want = max(want, sum(bank(x) == b for x in r) + sum(bank(x) == b for x in w))
        return want

    for _ in range(300):
        addrs = [int(a) * 32 for a in rng.integers(0, 6136, 3)]
        blks = [int(rng.integers(1, 20)), int(rng.integers(0, 20)), int(rng.integers(0, 20))]
        got = slot_cycles(LAY, 1, op(addrs[0], blk=blks[0]),
                          (op(addrs[1], blk=blks[1]), op(addrs[2], blk=blks[2]))).tolist()
        rows = [[a // 32 + b * k for b in range(8 if k else 1)] for a, k in zip(addrs, blks)]
        reads, writes = set(rows[1]) | set(rows[2]), rows[0]
        delayed = any(len(r) == 8 and [bank(x) for x in r] == [bank(x) for x in writes]
                      for r in rows[1:])
        want = [queue(reads, []), queue([], writes)] if delayed else [queue(reads, writes)]
        assert got == want, (addrs, blks)


# -- the kept costs of npusim.ascendc.vector._cycles ------------------------------------------
def _ub(offset, dtype="float32"):
    """What the cost reads of a LocalTensor: its UB offset and element type."""
    from types import SimpleNamespace
    return SimpleNamespace(offset=offset, dtype=np.dtype(dtype))


_SRCS_CLASH = (_ub(0x0), _ub(0x4000))           # both in bank group 0: a read-read queue
_SRCS_APART = (_ub(0x0), _ub(0x4100))           # groups 0 and 8: no queue
_BASE = dict(soc=SOC, count=4096, rate=64, dst=_ub(0x10000), srcs=_SRCS_CLASH, dst_nbytes=None,
             src_nbytes=None, repeats=None, lanes=None, strides=None)
_APART = dict(_BASE, srcs=_SRCS_APART)
_LEVEL0 = dict(_BASE, repeats=64, lanes=64)


@pytest.mark.parametrize("base, change", [
    (_BASE, dict(soc=dataclasses.replace(SOC, vec_head_cycles=SOC.vec_head_cycles + 7))),
    (_BASE, dict(soc=dataclasses.replace(SOC, ubbank_group_num=4))),
    (_APART, dict(soc=dataclasses.replace(SOC, ubbank_size=8192))),
    (_BASE, dict(count=2048)),
    (_BASE, dict(rate=16)),
    (_BASE, dict(rate=64.0)),                    # the same cycles, as a float
    (_BASE, dict(count=np.int64(4096))),         # the same cycles, as a numpy int
    (_APART, dict(dst=_ub(0x0))),
    (dict(_APART, dst=_ub(0x100)), dict(dst=_ub(0x100, "float16"))),
    (_BASE, dict(srcs=_SRCS_APART)),
    (_BASE, dict(srcs=(_ub(0x0, "float16"), _ub(0x4000)))),
    (_APART, dict(dst_nbytes=65536)),
    (_APART, dict(src_nbytes=32768)),
    (_LEVEL0, dict(repeats=32)),
    (_LEVEL0, dict(strides=((1, 8), (2, 16), (1, 8)))),
], ids=["head", "bank groups", "bank size", "count", "rate", "rate type", "count type",
        "dst offset", "dst type", "src offsets", "src type", "dst bytes", "src bytes",
        "repeats", "strides"])
def test_a_kept_cost_is_that_of_its_own_operands(base, change):
    """The cost an instruction records is kept by what it reads: after ``base`` was costed
    (and kept), an instruction that differs in one thing gets its own cost, value and type,
    not ``base``'s."""
    from npusim.ascendc import vector as V

    def args(case):
        return [case[k] for k in ("soc", "count", "rate", "dst", "srcs", "dst_nbytes",
                                  "src_nbytes", "repeats", "lanes", "strides")]
    other = dict(base, **change)
    V._CYCLES_KEPT.clear()
    first = V._cycles(*args(base))
    assert (first, type(first)) == (V._cost(*args(base)), type(V._cost(*args(base))))
    want = V._cost(*args(other))
    assert (want, type(want)) != (first, type(first))     # the change shows in the cost
    got = V._cycles(*args(other))
    assert (got, type(got)) == (want, type(want))
    assert V._cycles(*args(base)) == first                # and both stay kept
