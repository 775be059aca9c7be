"""The cube path computes the same bits and records the same instructions however its host
code is arranged: a stored fingerprint (tests/data/cube_speed_identity.json) of several cube
kernels — aclnnMatmul half/bf16/float with odd shapes and transposed views, the cube kernel
of test_cube_matmul with bias (half and int8), examples/matmul_custom.py,
examples/matmul_leakyrelu.py and matmul_leakyrelu_mix.py, a mixed AIC/AIV launch, and the
checker's findings on broken cube kernels — must match bit for bit.

Each case's fingerprint is the SHA-256 of its output bytes, of every core's instruction
record list (what the timing replay consumes) and of the profile's figures (duration,
per-core pipe busy, traffic, warnings); a checker case stores its error message. The
fixture holds the figures of the straightforward rendering (per-byte index gathers for the
data movement and the checker, the ND operands for Mmad); the fast paths (strided views,
whole-block checker updates, stacked per-step products) must reproduce them.
``python tests/test_cube_speed_identity.py --write`` rewrites it (only for a deliberate
change of results, records or findings). Queue hand-off keys hold a queue's ``id()``; they
are numbered by first use on their core before hashing.
"""
import hashlib
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import aclnn
from aclnn import acl, runtime
from aclnn.ops import matmul as mm
from npusim import SyncError
from npusim.ascendc.checker import UninitialisedError
from npusim import launch as _launch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from aclnn_helpers import load_example, open_stream, to_device  # noqa: E402
from test_cube_layouts import aic_run, gm_tensor, load2d_reference, rand, sync  # noqa: E402
from test_cube_matmul import MatmulKernel, _static_mmad  # noqa: E402
from npusim.ascendc import (DataCopy, HardEvent, LoadData, LoadData2DParams, TBuf, TPipe,  # noqa: E402
                            TPosition, uint8_t)
from npusim.ascendc.types import float32, half, int32_t, int8_t  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "data" / "cube_speed_identity.json"
BF16 = np.dtype(ml_dtypes.bfloat16)


class _Records:
    """Collects every launch's per-core record lists (as the replay receives them)."""

    def __init__(self, monkeypatch):
        self.blocks = []
        orig = _launch._profile

        def spy(kernel, name, soc, ctxs, *args):
            self.blocks.append([list(ctx.records) for ctx in ctxs])
            return orig(kernel, name, soc, ctxs, *args)
        monkeypatch.setattr(_launch, "_profile", spy)


def _canon(x):
    """A deterministic text form of records and profile figures (floats by repr)."""
    if isinstance(x, (list, tuple)):
        return "(" + ",".join(_canon(v) for v in x) + ")"
    if isinstance(x, dict):
        return "{" + ",".join(f"{k}:{_canon(v)}" for k, v in sorted(x.items())) + "}"
    if isinstance(x, np.ndarray):
        return "[" + ",".join(repr(float(v)) for v in x.reshape(-1)) + "]"
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if x is None or isinstance(x, str):
        return repr(x)
    raise TypeError(f"no canonical form for {type(x).__name__}: {x!r}")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _queue_ids(records):
    """Records with each queue's ``id()`` (a host address, in the hand-off keys
    ``("que", id, index, what)``) replaced by its order of first use on its core (the
    queues of one core live together; another core's may reuse their addresses)."""
    out = []
    for launch in records:
        cores = []
        for core in launch:
            seen, rows = {}, []
            for r in core:
                key = r[4]
                if isinstance(key, tuple) and key and key[0] == "que":
                    key = ("que", seen.setdefault(key[1], len(seen))) + key[2:]
                rows.append(r[:4] + (key,) + r[5:])
            cores.append(rows)
        out.append(cores)
    return out


def _fingerprint(outputs, records, profiles) -> dict:
    records = _queue_ids(records)
    out = hashlib.sha256()
    for arr in outputs:
        arr = np.ascontiguousarray(arr)
        out.update(str(arr.dtype).encode() + str(arr.shape).encode() + arr.tobytes())
    figures = [(p.duration_us, p.core_pipe_time_us, p.pipe_time_us, p.bytes_read,
                p.bytes_written, p.hbm_bytes, [str(w) for w in p.warnings]) for p in profiles]
    return {"outputs": out.hexdigest()[:24], "records": _sha(_canon(records)),
            "n_records": sum(len(r) for launch in records for r in launch),
            "profile": _sha(_canon(figures))}


# -- the cases -----------------------------------------------------------------------------------

def _aclnn_cases(tmp_path):
    """aclnnMatmul on Ascend910B1: odd shapes, each dtype, transposed views."""
    res = {}
    open_stream(tmp_path)
    try:
        rng = np.random.default_rng(11)
        for name, dt, (m, k, n), ta, tb in (
                ("aclnn_half_odd", np.float16, (70, 300, 45), False, False),
                ("aclnn_half_transposed_b", np.float16, (33, 130, 200), False, True),
                ("aclnn_bf16_transposed_a", BF16, (100, 70, 36), True, False),
                ("aclnn_float_odd", np.float32, (17, 200, 90), True, True),
                ("aclnn_half_multi_block", np.float16, (300, 256, 280), False, False),
                ("aclnn_bf16_whole_fractals", BF16, (64, 128, 48), False, False),
                ("aclnn_float_whole_fractals", np.float32, (40, 96, 24), False, True)):
            a, b = rand(rng, (m, k), dt), rand(rng, (k, n), dt)
            dev = runtime.current_device()
            n0 = len(dev.profiles)
            at = _transposed(a) if ta else to_device(a)
            bt = _transposed(b) if tb else to_device(b)
            out = to_device(np.zeros((m, n), dt))
            ws, ex, ret = mm.aclnnMatmulGetWorkspaceSize(at, bt, out, 0)
            assert ret == 0, acl.get_recent_err_msg()
            wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
            assert mm.aclnnMatmul(wptr, ws, ex, None) == 0
            assert acl.rt.synchronize_device() == 0, acl.get_recent_err_msg()
            c = np.zeros((m, n), dt)
            assert acl.rt.memcpy(acl.util.numpy_to_ptr(c), c.nbytes, out.tensor_data, c.nbytes,
                                 aclnn.ACL_MEMCPY_DEVICE_TO_HOST) == 0
            res[name] = ([c], dev.profiles[n0:])
    finally:
        runtime.reset()
    return res


def _transposed(arr):
    store = np.ascontiguousarray(arr.T)
    t = to_device(store)
    return aclnn.aclCreateTensor(list(arr.shape), t.data_type, [1, arr.shape[0]], 0,
                                 aclnn.ACL_FORMAT_ND, list(store.shape), t.tensor_data)


def _kernel_cases():
    res = {}
    rng = np.random.default_rng(3)
    for name, dt, acc, (m, k, n), bias in (
            ("kernel_half_bias", half, float32, (30, 70, 40),
             np.linspace(-3, 3, 40).astype(np.float32)),
            ("kernel_int8_bias", int8_t, int32_t, (30, 70, 40),
             np.arange(-20, 20, dtype=np.int32) * 1000),
            ("kernel_int8", int8_t, int32_t, (17, 9, 3), None),
            ("kernel_float_to_half", float32, half, (48, 80, 33), None),
            ("kernel_bf16", BF16, float32, (2, 33, 65), None),
            ("kernel_int8_whole_fractals", int8_t, int32_t, (32, 64, 32), None),
            ("kernel_float_whole_fractals", float32, float32, (48, 64, 40), None)):
        a, b = rand(rng, (m, k), dt), rand(rng, (k, n), dt)
        inputs = {"a": a, "b": b}
        if bias is not None:
            inputs["bias"] = bias
        got, prof = aic_run(MatmulKernel(m, k, n, dt, acc, bias is not None), inputs,
                            {"c": (m * n, acc)})
        res[name] = ([got["c"]], [prof])
    return res


def _example_cases():
    res = {}
    c, _, prof = load_example("matmul_custom").main()
    res["example_matmul_custom"] = ([c], [prof])
    for mod in ("matmul_leakyrelu", "matmul_leakyrelu_mix"):
        got = load_example(mod).main()
        res["example_" + mod] = ([x for x in got if isinstance(x, np.ndarray)],
                                 [x for x in got if hasattr(x, "core_pipe_time_us")])
    return res


def _mix_case():
    from test_mix_launch import run_leaky
    got, _, _, prof = run_leaky(2, 32, 50, 24, 0.25, seed=4)
    return {"mix_launch_leaky": ([got], [prof])}


def _checker_findings() -> dict:
    """The checker's messages on broken cube kernels (a missing flag, an unwritten L0A)."""
    x = {"x": np.ones(256, np.float16)}
    found = {}
    for name, kern, error in (("missing_mte1_m_flag", _static_mmad(False), SyncError),
                              ("uninitialised_l0a", _static_mmad(True, False),
                               UninitialisedError)):
        with pytest.raises(error) as err:
            aic_run(kern, x, {"y": (256, np.float32)})
        found[name] = str(err.value)
    from test_mix_launch import run_leaky
    with pytest.raises(SyncError) as err:
        run_leaky(1, 32, 32, 16, 0.5, wait=False)
    found["gm_race_without_wait"] = str(err.value)
    return found


def fingerprints(tmp_path, monkeypatch) -> dict:
    rec = _Records(monkeypatch)
    out = {}
    for part in (lambda: _aclnn_cases(tmp_path), _kernel_cases, _example_cases, _mix_case):
        start = len(rec.blocks)
        cases = part()
        # each case's launches are consecutive: give each its records in order
        for name, (outputs, profiles) in cases.items():
            n = len(profiles)
            out[name] = _fingerprint(outputs, rec.blocks[start:start + n], profiles)
            start += n
        assert start == len(rec.blocks)
    out["checker"] = _checker_findings()
    return out


def test_cube_results_records_and_findings_are_unchanged(tmp_path, monkeypatch):
    # the fixture's records were stored before the scalar unit charged its issue work
    # (npusim/ascendc/scalar.py): record without it, so that the same records compare
    from npusim.ascendc import scalar
    monkeypatch.setattr(scalar, "CHARGE", False)
    want = json.loads(FIXTURE.read_text())
    got = fingerprints(tmp_path, monkeypatch)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name] == want[name], name


@pytest.mark.parametrize("start,repeat,stride,gap,transpose", [
    (0, 6, 1, 0, False), (2, 5, 0, 1, True), (1, 4, 3, 2, True), (3, 1, 2, 0, False),
    (0, 7, 2, 1, False), (1, 6, 1, 0, True)])
def test_load_data_on_checked_and_unchecked_blocks(start, repeat, stride, gap, transpose):
    """LoadData moves the documented fractals (Load2D.md: repeat r copies source fractal
    start + r*srcStride to destination fractal r*(1 + dstGap), each 16 x 16 half fractal
    transposed with ifTranspose) on the blocks the checker shadows (the first and the last)
    and on the one between, which takes the unshadowed path."""
    src = np.random.default_rng(start + 7 * repeat).integers(0, 256, 24 * 512, dtype=np.uint8)
    seen = {}

    def kernel(addr):
        from npusim.ascendc import GetBlockIdx
        pipe = TPipe()
        l1, l0 = TBuf(TPosition.B1), TBuf(TPosition.A2)
        pipe.InitBuffer(l1, src.size)
        pipe.InitBuffer(l0, 20 * 512)
        DataCopy(l1.Get(uint8_t), gm_tensor(uint8_t, addr["src"], src.size), src.size)
        sync(HardEvent.MTE2_MTE1)
        LoadData(l0.Get(half), l1.Get(half), LoadData2DParams(start, repeat, stride, 0, gap,
                                                              transpose, 0))
        seen[int(GetBlockIdx())] = l0.Get(uint8_t).numpy().copy()

    aic_run(kernel, {"src": src}, {}, block_dim=3)
    want = load2d_reference(src, np.full(20 * 512, 0xFF, np.uint8), start, repeat, stride,
                            gap, transpose, 2)
    assert sorted(seen) == [0, 1, 2]
    for block in seen.values():
        np.testing.assert_array_equal(block, want)


def _random_shadows(rng, tracker, mems, late):
    """Give ``tracker``'s shadows of ``mems`` a random history: partly initialised bytes,
    last writers and readers at random instruction indices and pipes at random progress;
    only the memories in ``late`` hold accesses a pipe may not know of (races)."""
    from npusim.ascendc.types import Pipe
    clock = tracker.clock
    clock.count[:] = rng.integers(0, 50, clock.count.shape)
    clock.vc[:] = rng.integers(0, 50, clock.vc.shape)
    for mem in mems:
        sh = tracker.shadow(mem)
        sh.init[:] = rng.random(sh.init.size) < 0.97
        writers = np.array([-1, int(Pipe.PIPE_MTE2), int(Pipe.PIPE_MTE1), int(Pipe.PIPE_M)])
        sh.w_pipe[:] = writers[rng.integers(0, len(writers), sh.w_pipe.size)]
        low = 0 if mem in late else -1          # -1: before anything any pipe knows of
        sh.w_idx[:] = rng.integers(low, 50, sh.w_idx.shape) if low == 0 else -1
        sh.r_all[:] = rng.integers(-1, 50, sh.r_all.shape) if low == 0 else -1


def _tracked_outcome(make_call, seed: int, mems: tuple, late: tuple):
    """Run ``make_call(ctx, tracker)``'s call on a fresh tracker whose shadows of ``mems``
    have the random history of ``seed`` (:func:`_random_shadows`); return its finding
    (type and text, or None) and every shadow array afterwards."""
    from npusim import KernelError, get_soc
    from npusim.ascendc import checker
    tracker = checker.UbTracker(1024, get_soc("Ascend910B1"))
    ctx = SimpleNamespace(tracker=tracker, checker_config=checker.DEFAULT)
    _random_shadows(np.random.default_rng(seed), tracker, mems, late)
    call = make_call(ctx, tracker)
    try:
        call[0](*call[1:])              # one line for every call: the findings name it
        err = None
    except KernelError as e:
        err = (type(e), str(e))
    state = [a.copy() for mem in mems for sh in [tracker.shadow(mem)]
             for a in (sh.init, sh.w_pipe, sh.w_idx, sh.r_all)]
    return err, state


def _assert_same_outcome(make_calls, seed: int, mems: tuple, late: tuple) -> None:
    """The two calls of ``make_calls`` give the same finding and leave the same shadows."""
    (e0, s0), (e1, s1) = (_tracked_outcome(m, seed, mems, late) for m in make_calls)
    assert e0 == e1, late
    for a, b in zip(s0, s1):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(["float16", "float32", "int8"]), start=st.integers(0, 3),
       repeat=st.integers(1, 5), stride=st.integers(0, 2), gap=st.integers(0, 2),
       frac_gap=st.integers(0, 2), src_off=st.integers(0, 8), dst_off=st.integers(0, 4),
       seed=st.integers(0, 10_000))
def test_transposing_load_tracks_by_blocks_as_copy_state_does_by_bytes(
        dtype, start, repeat, stride, gap, frac_gap, src_off, dst_off, seed):
    """LoadDataWithTranspose's checker work by whole 32 B blocks (datamove._track_squares)
    leaves every shadow array as checker.copy_state leaves it given each byte's source and
    destination address (square ``startIndex + r*srcStride`` transposed onto fractals
    ``r*(1 + dstGap)`` and ``1 + dstFracGap`` after), and raises the same findings, from
    random shadow histories (races and never-written bytes included)."""
    from npusim.ascendc import checker
    from npusim.ascendc.cube import datamove
    from npusim.ascendc.types import Pipe
    dtype = np.dtype(dtype)
    isz = dtype.itemsize
    per = 1 if isz == 2 else 2
    unit = per * 512
    src = SimpleNamespace(offset=32 * src_off, mem="L1", dtype=dtype)
    dst = SimpleNamespace(offset=512 * dst_off, mem="L0B", dtype=dtype)
    src_unit = start + np.arange(repeat) * stride
    dst_frac = ((np.arange(repeat) * (1 + gap))[:, None]
                + np.arange(per) * (1 + frac_gap)).reshape(-1)
    # the bytes by formula (LoadDataWithTranspose page): byte j of the transposed square
    # comes from byte perm[j] of the source square
    perm = datamove._square_perm(isz, per)
    s_addr = (src.offset + src_unit[:, None] * unit + perm).reshape(-1)
    d_addr = (dst.offset + dst_frac[:, None] * 512 + np.arange(512)).reshape(-1)
    pipe = int(Pipe.PIPE_MTE1)

    def by_blocks(ctx, tracker):
        return (datamove._track_squares, ctx, pipe, "LoadDataWithTranspose", dst, dst_frac, src,
                src_unit, per)

    def by_bytes(ctx, tracker):
        return (checker.copy_state, ctx, pipe, tracker.shadow("L1"), s_addr,
                tracker.shadow("L0B"), d_addr, "LoadDataWithTranspose")

    # each memory with and without accesses the pipe may not know of: no finding, a race on
    # the source read, a race on the destination write
    for late in ((), ("L1",), ("L0B",), ("L1", "L0B")):
        _assert_same_outcome((by_blocks, by_bytes), seed, ("L1", "L0B"), late)


@settings(max_examples=60, deadline=None)
@given(isz=st.sampled_from([1, 2, 4]), offset=st.integers(0, 6), count=st.integers(1, 300),
       span=st.integers(0, 200), rows=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_element_reads_track_as_reads_of_their_bytes(isz, offset, count, span, rows, seed):
    """MemoryShadow.read_elements (Mmad's operands, Fixpipe's source) leaves the shadow as
    read_at given every byte of those elements leaves it, and reports the same finding
    (the same first never-written byte, the same race), from random histories."""
    from npusim.ascendc.types import Pipe
    rng = np.random.default_rng(seed)
    idx = rng.permutation(count + span)[:count]            # distinct, in any order
    idx = idx[:count // rows * rows].reshape(rows, -1) if count >= rows else idx[None]
    base = 512 * offset
    byte_addr = (base + idx[..., None] * isz + np.arange(isz)).reshape(-1)
    pipe = int(Pipe.PIPE_M)
    for check_init in (True, False):
        def by_elements(ctx, tracker):
            return (tracker.shadow("L0A").read_elements, ctx, pipe, base, idx, isz, "Mmad",
                    check_init)

        def by_bytes(ctx, tracker):
            return tracker.shadow("L0A").read_at, ctx, pipe, byte_addr, "Mmad", check_init

        for late in ((), ("L0A",)):
            _assert_same_outcome((by_elements, by_bytes), seed, ("L0A",), late)


if __name__ == "__main__" and "--write" in sys.argv:
    import tempfile
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        from npusim.ascendc import scalar
        mp.setattr(scalar, "CHARGE", False)     # as the test records (see there)
        data = fingerprints(Path(tmp), mp)
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"wrote {FIXTURE}: {len(data)} cases")
