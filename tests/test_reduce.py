"""Reduction instructions and the library reductions (npusim/ascendc/reduce.py) against
numpy renderings of the pages' semantics written here: lanes from the block/repeat
strides, masks, a binary tree of adjacent lanes rounded per step, first-occurrence
indices, the library's passes for ReduceSum/ReduceMax, errors and costs."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from kernel_helpers import ub_run
from npusim import AlignmentError, DtypeError, KernelError, LimitError, UbError
from npusim.ascendc import (MASK_PLACEHOLDER, BlockReduceMax, BlockReduceMin, BlockReduceSum,
                            MaskMode, PairReduceSum, ReduceMax, ReduceMin, ReduceOrder,
                            ReduceSum, RepeatReduceSum, SetMaskCount, SetSaturationFlag,
                            SetVectorMask, WholeReduceMax, WholeReduceMin, WholeReduceSum)

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
HEAD = 22                                    # vec_head_cycles of the 910B1 preset
SENTINEL = -7.0                              # dst elements an instruction must not touch


# -- the documented semantics, rendered independently ----------------------------------------
def lanes_of(dt):
    return 256 // dt.itemsize


def offsets(dt, repeat, blk, rep):
    """Element offset of lane l of repeat r: block l // epb, blk blocks apart; repeats rep
    blocks apart."""
    epb = 32 // dt.itemsize
    lane = np.arange(lanes_of(dt))
    return np.arange(repeat)[:, None] * rep * epb + (lane // epb) * blk * epb + lane % epb


def active(mask, dt):
    n = lanes_of(dt)
    if isinstance(mask, int):
        return np.arange(n) < mask
    bits = mask[0] | (mask[1] << 64)
    return np.array([(bits >> i) & 1 for i in range(n)], dtype=bool)


def pairwise(values):
    """Binary tree of adjacent pairs, each addition in the values' dtype."""
    v = list(values)
    while len(v) > 1:
        v = [v[i] + v[i + 1] for i in range(0, len(v), 2)]
    return v[0]


def run(body, **arrays):
    with np.errstate(all="ignore"):
        after, prof = ub_run(body, arrays)
    return after, prof


def cycles(prof, name):
    return [r[2] for r in prof.records[0] if r[5] == name]


def masks(dt):
    n = lanes_of(dt)
    bit = st.tuples(st.integers(1, 2 ** min(n, 64) - 1),
                    st.integers(0, 2 ** 64 - 1) if n == 128 else st.just(0))
    return st.one_of(st.integers(1, n + 10), bit)


layouts = st.fixed_dictionaries({
    "dt": st.sampled_from([F16, F32]), "repeat": st.integers(0, 5), "blk": st.integers(1, 3),
    "rep": st.integers(0, 20), "dst_rep": st.integers(1, 3), "seed": st.integers(0, 2 ** 16)})


def source(lay):
    epb = 32 // lay["dt"].itemsize
    n = max(1, lay["repeat"]) * (lay["rep"] + 1) * epb + 8 * lay["blk"] * epb
    rng = np.random.default_rng(lay["seed"])
    # a wide range of magnitudes, so that the order of additions shows in the rounding
    return (rng.standard_normal(n) * 2.0 ** rng.integers(-6, 10, n)).astype(lay["dt"])


# -- WholeReduceSum / Max / Min -----------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(lay=layouts, data=st.data())
def test_whole_reduce_sum_matches_the_tree_over_masked_strided_lanes(lay, data):
    dt, repeat = lay["dt"], lay["repeat"]
    mask = data.draw(masks(dt))
    x = source(lay)
    dst = np.full(16 * 4, SENTINEL, dt)
    after, _ = run(lambda t: WholeReduceSum(t["d"], t["x"], mask, repeat, lay["dst_rep"],
                                            lay["blk"], lay["rep"]), x=x, d=dst)
    want = dst.copy()
    on = active(mask, dt)
    for r, idx in enumerate(offsets(dt, repeat, lay["blk"], lay["rep"])):
        want[r * lay["dst_rep"]] = pairwise(np.where(on, x[idx], dt.type(0)))
    np.testing.assert_array_equal(after["d"], want)


@settings(max_examples=25, deadline=None)
@given(lay=layouts, data=st.data(), order=st.sampled_from(list(ReduceOrder)),
       op=st.sampled_from(["max", "min"]))
def test_whole_reduce_max_min_value_and_first_index_in_each_order(lay, data, order, op):
    dt, repeat = lay["dt"], lay["repeat"]
    mask = data.draw(masks(dt))
    x = source(lay)
    x[::7] = x[3]                                    # ties: the first lane must win
    instr = WholeReduceMax if op == "max" else WholeReduceMin
    dst = np.full(16 * 8, SENTINEL, dt)
    after, _ = run(lambda t: instr(t["d"], t["x"], mask, repeat, lay["dst_rep"], lay["blk"],
                                   lay["rep"], order), x=x, d=dst)
    raw = np.uint16 if dt == F16 else np.uint32
    want = dst.view(raw).copy()
    on = active(mask, dt)
    width = {ReduceOrder.ORDER_VALUE_INDEX: 2, ReduceOrder.ORDER_INDEX_VALUE: 2,
             ReduceOrder.ORDER_ONLY_VALUE: 1, ReduceOrder.ORDER_ONLY_INDEX: 4 // dt.itemsize}
    for r, idx in enumerate(offsets(dt, repeat, lay["blk"], lay["rep"])):
        vals = x[idx][on]
        lane = np.flatnonzero(on)[(np.argmax if op == "max" else np.argmin)(vals)]
        value = x[idx][lane].view(raw)
        base = r * lay["dst_rep"] * width[order]
        if order == ReduceOrder.ORDER_VALUE_INDEX:
            want[base:base + 2] = [value, lane]
        elif order == ReduceOrder.ORDER_INDEX_VALUE:
            want[base:base + 2] = [lane, value]
        elif order == ReduceOrder.ORDER_ONLY_VALUE:
            want[base] = value
        else:                                        # a uint32 index, even for half
            want.view(np.uint8)[base * dt.itemsize:base * dt.itemsize + 4] = \
                np.array([lane], np.uint32).view(np.uint8)
    np.testing.assert_array_equal(after["d"].view(raw), want)


def test_whole_reduce_max_propagates_nan_and_points_at_the_first_nan():
    x = np.arange(64, dtype=np.float32)
    x[[10, 20]] = np.nan
    after, _ = run(lambda t: WholeReduceMax(t["d"], t["x"], 64, 1, 1, 1, 8), x=x,
                   d=np.zeros(8, np.float32))
    assert np.isnan(after["d"][0]) and after["d"][1:2].view(np.uint32)[0] == 10


def test_whole_reduce_sum_counter_mode_with_the_mask_register():
    x = np.arange(128, dtype=np.float32)

    def body(t):
        SetMaskCount()
        SetVectorMask(0, 100, mode=MaskMode.COUNTER)
        WholeReduceSum(t["d"], t["x"], MASK_PLACEHOLDER, 1, 1, 1, 8, isSetMask=False)

    after, _ = run(body, x=x, d=np.full(8, SENTINEL, np.float32))
    np.testing.assert_array_equal(after["d"][:3], [x[:64].sum(), x[64:100].sum(), SENTINEL])


def test_a_destination_feeding_a_later_repeat_is_read_after_it_is_written():
    # repeat 0 writes x[64], which repeat 1 then reads (the unit issues repeats in order)
    x = np.ones(128, np.float32)
    after, _ = run(lambda t: WholeReduceSum(t["x"][64], t["x"], 64, 2, 1, 1, 8), x=x)
    assert after["x"][64] == 64 and after["x"][65] == 63 + 64


def test_half_sum_overflows_to_inf_and_saturates_per_step_when_asked():
    x = np.zeros(128, np.float16)
    x[:4] = [60000, 60000, -30000, 100]
    after, _ = run(lambda t: WholeReduceSum(t["d"], t["x"], 4, 1, 1, 1, 8), x=x,
                   d=np.zeros(16, np.float16))
    assert after["d"][0] == np.inf                   # INF/NAN mode (boundary table 38)

    def saturated(t):
        SetSaturationFlag(True)
        WholeReduceSum(t["d"], t["x"], 4, 1, 1, 1, 8)
        WholeReduceSum(t["d"][1], t["y"], 128, 1, 1, 1, 8)

    y = np.ones(128, np.float16)
    y[5] = np.nan
    after, _ = run(saturated, x=x, y=y, d=np.zeros(16, np.float16))
    # the WholeReduceSum page's example: 65504 + (-30000 + 100) ("35604", here rounded to
    # half at each step), and the table's "127 x 1.0 + nan -> 126.0"
    h = np.float16
    assert after["d"][0] == h(65504) + (h(-30000) + h(100)) and after["d"][1] == 126


# -- RepeatReduceSum, BlockReduce*, PairReduceSum -------------------------------------------
@settings(max_examples=25, deadline=None)
@given(lay=layouts, data=st.data(), op=st.sampled_from(["sum", "max", "min"]))
def test_block_reduce_gives_one_result_per_block(lay, data, op):
    dt, repeat = lay["dt"], lay["repeat"]
    mask = data.draw(masks(dt))
    x = source(lay)
    instr = {"sum": BlockReduceSum, "max": BlockReduceMax, "min": BlockReduceMin}[op]
    dst = np.full(8 * 4 * 6, SENTINEL, dt)
    after, _ = run(lambda t: instr(t["d"], t["x"], repeat, mask, lay["dst_rep"], lay["blk"],
                                   lay["rep"]), x=x, d=dst)
    want = dst.copy()
    on = active(mask, dt).reshape(8, -1)
    for r, idx in enumerate(offsets(dt, repeat, lay["blk"], lay["rep"])):
        for b, (vals, live) in enumerate(zip(x[idx].reshape(8, -1), on)):
            if live.any():                           # a block with no active lane keeps dst
                want[r * lay["dst_rep"] * 8 + b] = (
                    pairwise(np.where(live, vals, dt.type(0))) if op == "sum"
                    else (np.max if op == "max" else np.min)(vals[live]))
    np.testing.assert_array_equal(after["d"], want)


@settings(max_examples=25, deadline=None)
@given(lay=layouts, data=st.data())
def test_pair_reduce_sum_adds_adjacent_lanes(lay, data):
    dt, repeat = lay["dt"], lay["repeat"]
    mask = data.draw(masks(dt))
    x = source(lay)
    half_lanes = lanes_of(dt) // 2
    dst = np.full(half_lanes * 4 * 6, SENTINEL, dt)
    after, _ = run(lambda t: PairReduceSum(t["d"], t["x"], repeat, mask, lay["dst_rep"],
                                           lay["blk"], lay["rep"]), x=x, d=dst)
    want = dst.copy()
    on = active(mask, dt).reshape(-1, 2)
    for r, idx in enumerate(offsets(dt, repeat, lay["blk"], lay["rep"])):
        pairs = np.where(on, x[idx].reshape(-1, 2), dt.type(0))
        live = on.any(axis=1)
        base = r * lay["dst_rep"] * half_lanes
        want[base:base + half_lanes][live] = (pairs[:, 0] + pairs[:, 1])[live]
    np.testing.assert_array_equal(after["d"], want)


def test_repeat_reduce_sum_is_whole_reduce_sum_with_a_count_and_is_absent_on_a3():
    x = np.random.default_rng(1).standard_normal(256).astype(np.float16)
    after, _ = run(lambda t: RepeatReduceSum(t["d"], t["x"], 2, 100, 0, 1, 1, 8), x=x,
                   d=np.zeros(16, np.float16))
    for r in range(2):
        assert after["d"][r] == pairwise(np.where(np.arange(128) < 100, x[r * 128:(r + 1) * 128],
                                                  np.float16(0)))
    with pytest.raises(KernelError, match="Atlas A3"):
        ub_run(lambda t: RepeatReduceSum(t["d"], t["x"], 1, 64, 0, 1, 1, 8),
               {"x": x, "d": np.zeros(16, np.float16)}, soc="Ascend910_9392")
    with pytest.raises(LimitError, match="count"):
        ub_run(lambda t: RepeatReduceSum(t["d"], t["x"], 1, [1, 0], 0, 1, 1, 8),
               {"x": x, "d": np.zeros(16, np.float16)})


def test_in_place_block_reduce_as_the_softmax_library_uses_it():
    x = np.arange(128, dtype=np.float32)
    after, _ = run(lambda t: BlockReduceSum(t["x"], t["x"], 2, 64, 1, 1, 8), x=x)
    np.testing.assert_array_equal(after["x"][:16], np.arange(128, dtype=np.float32)
                                  .reshape(16, 8).sum(axis=1))


# -- costs ------------------------------------------------------------------------------------
def test_costs_follow_the_reduce_rates_per_repeat():
    def body(t):
        WholeReduceSum(t["d"], t["h"], 128, 3, 1, 1, 8)        # 128/7: 7 cycles a repeat
        fd = t["d"].ReinterpretCast(np.float32)
        WholeReduceMax(fd, t["f"], 1, 3, 1, 1, 8)              # 64/7: 7, whatever the mask
        BlockReduceSum(fd, t["f"], 3, 64, 1, 1, 8)             # 64: 1
        BlockReduceMax(t["d"], t["h"], 3, 128, 1, 1, 8)        # half 128/7: 7
        PairReduceSum(t["d"], t["h"], 3, 128, 1, 1, 8)         # 128: 1

    after, prof = run(body, h=np.ones(384, np.float16), f=np.ones(192, np.float32),
                      d=np.zeros(256, np.float16))
    assert cycles(prof, "WholeReduceSum") == [HEAD + 21]
    assert cycles(prof, "WholeReduceMax") == [HEAD + 21]
    assert cycles(prof, "BlockReduceSum") == [HEAD + 3]
    assert cycles(prof, "BlockReduceMax") == [HEAD + 21]
    assert cycles(prof, "PairReduceSum") == [HEAD + 3]


# -- the library routines ----------------------------------------------------------------------
@pytest.mark.parametrize("dt, count", [(F16, 1000), (F32, 64 * 5 + 7), (F16, 17), (F32, 64)])
def test_reduce_sum_count_form_sums_repeats_in_order(dt, count):
    x = np.random.default_rng(count).standard_normal(count).astype(dt)
    after, prof = run(lambda t: ReduceSum(t["d"], t["x"], t["tmp"], count), x=x,
                      d=np.zeros(16, dt), tmp=np.zeros(16, dt))
    lanes = lanes_of(dt)
    pad = np.concatenate([x, np.zeros(-count % lanes, dt)]).reshape(-1, lanes)
    acc = pairwise(pad[0])
    for row in pad[1:]:
        acc = acc + pairwise(row)                    # "方式二": repeat results in order
    assert after["d"][0] == acc
    assert cycles(prof, "ReduceSum") == [HEAD + 7 * pad.shape[0]]


@pytest.mark.parametrize("dt, repeat, mask, rep", [(F32, 300, 64, 8), (F16, 3, 100, 8),
                                                   (F32, 1, 10, 8), (F32, 70, 33, 0)])
def test_reduce_sum_level0_trees_repeats_then_their_results(dt, repeat, mask, rep):
    lanes, epb = lanes_of(dt), 32 // dt.itemsize
    n = (repeat - 1) * rep * epb + lanes
    x = np.random.default_rng(repeat).standard_normal(n).astype(dt)
    tmp = np.zeros(-(-repeat // epb) * epb, dt)
    after, _ = run(lambda t: ReduceSum(t["d"], t["x"], t["tmp"], mask, repeat, rep), x=x,
                   d=np.zeros(16, dt), tmp=tmp)
    on = np.arange(lanes) < mask
    first = [pairwise(np.where(on, x[idx], dt.type(0))) for idx in offsets(dt, repeat, 1, rep)]
    if repeat == 1:
        want = first[0]
    else:                                            # "方式一": the results as trees again
        pad = np.concatenate([first, np.zeros(-repeat % lanes, dt)]).reshape(-1, lanes)
        second = [pairwise(row) for row in pad]
        want = second[0] if len(second) == 1 else pairwise(
            np.concatenate([second, np.zeros(lanes - len(second), dt)]))
    assert after["d"][0] == want


@pytest.mark.parametrize("dt, count", [(F16, 1000), (F32, 64 * 40), (F32, 64 * 300 + 5),
                                       (F16, 50)])
@pytest.mark.parametrize("op", ["max", "min"])
def test_reduce_max_min_count_form_value_and_first_index(dt, count, op):
    rng = np.random.default_rng(count)
    x = (rng.integers(-50, 50, count)).astype(dt)     # many ties: the first must win
    instr = ReduceMax if op == "max" else ReduceMin
    tmp = np.zeros(4096, dt)
    after, _ = run(lambda t: instr(t["d"], t["x"], t["tmp"], count, True), x=x,
                   d=np.zeros(16, dt), tmp=tmp)
    raw = np.uint16 if dt == F16 else np.uint32
    want = (np.argmax if op == "max" else np.argmin)(x)
    assert after["d"][0] == x[want] and after["d"][1:2].view(raw)[0] == want
    after, _ = run(lambda t: instr(t["d"], t["x"], t["tmp"], count), x=x,
                   d=np.full(16, SENTINEL, dt), tmp=tmp)
    assert after["d"][0] == x[want] and after["d"][1] == SENTINEL   # no index asked


@pytest.mark.parametrize("repeat, rep, mask", [(65, 8, 128), (300, 8, 128), (4, 16, [0xF0F0, 0]),
                                               (2, 8, 5)])
def test_reduce_max_level0_index_counts_elements_from_src(repeat, rep, mask):
    dt = F16
    n = (repeat - 1) * rep * 16 + 128
    x = np.random.default_rng(repeat).permutation(n).astype(np.float32) / n
    x = x.astype(dt)
    after, _ = run(lambda t: ReduceMax(t["d"], t["x"], t["tmp"], mask, repeat, rep, True), x=x,
                   d=np.zeros(16, dt), tmp=np.zeros(2048, dt))
    idx = offsets(dt, repeat, 1, rep)[:, active(mask, dt)].reshape(-1)
    best = idx[np.argmax(x[idx])]
    assert after["d"][0] == x[best] and after["d"][1:2].view(np.uint16)[0] == best


def test_reduce_max_with_nan_returns_nan_at_the_first_nan():
    x = np.arange(200, dtype=np.float32)
    x[[150, 170]] = np.nan
    after, _ = run(lambda t: ReduceMax(t["d"], t["x"], t["tmp"], 200, True), x=x,
                   d=np.zeros(8, np.float32), tmp=np.zeros(64, np.float32))
    assert np.isnan(after["d"][0]) and after["d"][1:2].view(np.uint32)[0] == 150


def test_library_routines_issue_the_instruction_passes():
    x = np.ones(64 * 300, np.float32)
    _, prof = run(lambda t: ReduceMin(t["d"], t["x"], t["tmp"], 64 * 300, True), x=x,
                  d=np.zeros(8, np.float32), tmp=np.zeros(1024, np.float32))
    names = [r[5] for r in prof.records[0]]
    # 255 + 45 repeats, the 600 pairs in 9 + 1 repeats, then the 10 pairs in one repeat
    assert names.count("WholeReduceMin") == 2 + 2 + 1
    assert "GetValue" in names and "SetValue" in names


# -- errors -----------------------------------------------------------------------------------
def test_errors_name_the_instruction_and_the_rule():
    h = np.zeros(512, np.float16)
    d = np.zeros(64, np.float16)
    cases = [
        (lambda t: WholeReduceSum(t["i"], t["i"], 64, 1, 1, 1, 8), DtypeError, "int32"),
        (lambda t: WholeReduceSum(t["b"], t["b"], 64, 1, 1, 1, 8), DtypeError, "bfloat16"),
        (lambda t: WholeReduceSum(t["d"], t["h"], 128, 256, 1, 1, 0), LimitError, "255"),
        (lambda t: WholeReduceSum(t["d"], t["h"], 128, 1, 1, 256, 8), LimitError, "256"),
        (lambda t: WholeReduceMax(t["d"][1], t["h"], 128, 1, 1, 1, 8), AlignmentError, "4 B"),
        (lambda t: BlockReduceSum(t["d"][4], t["h"], 1, 128, 1, 1, 8), AlignmentError, "16 B"),
        (lambda t: PairReduceSum(t["d"][8], t["h"], 1, 128, 1, 1, 8), AlignmentError, "32 B"),
        (lambda t: WholeReduceSum(t["d"], t["h"][8], 128, 1, 1, 1, 8), AlignmentError, "32 B"),
        (lambda t: WholeReduceSum(t["d"], t["h"], 128, 5, 1, 1, 8), UbError, "past the end"),
        (lambda t: WholeReduceSum(t["d"], t["h"], 128, 2, 64, 1, 8), UbError, "past the end"),
        (lambda t: ReduceMax(t["d"], t["h"], t["d"][32], 128, 4, 8, True), UbError, "at least"),
        (lambda t: ReduceSum(t["d"], t["h"], t["d"][48], 128, 40, 0), UbError, "at least"),
        (lambda t: ReduceMax(t["d"], t["h"], t["d"][32], 128, 600, 16, True), LimitError,
         "65535"),
        (lambda t: ReduceSum(t["d"], t["h"], t["d"], 1, 2, 3, 4), LimitError, "count"),
    ]
    for body, error, rule in cases:
        with pytest.raises(error, match=rule):
            ub_run(body, {"h": h, "d": d, "i": np.zeros(64, np.int32),
                          "b": np.zeros(64, ml_dtypes.bfloat16)})
    with pytest.raises(DtypeError, match="float32"):      # the first-generation 910: half only
        ub_run(lambda t: WholeReduceSum(t["f"], t["f"], 64, 1, 1, 1, 8),
               {"f": np.zeros(64, np.float32)}, soc="Ascend910A")
