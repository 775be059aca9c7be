"""The NaN an instruction writes is the same bytes on every host (npusim/ascendc/nans.py).

Every float result of an arithmetic or conversion instruction that is NaN is the one
positive quiet NaN of its type: float32 0x7FC00000, half 0x7E00, bfloat16 0x7FC0. The
expectations are hand-written bit patterns; the inputs are the invalid operations whose
NaN the host's FPU makes with a sign of its own (x86-64: 0xFFC00000, arm64: 0x7FC00000),
and NaNs carrying a sign and a payload. Data movement (DataCopy, Copy, Duplicate) keeps a
NaN's bytes.
"""
import ml_dtypes
import numpy as np
import pytest

import npusim.lockstep as lockstep
from kernel_helpers import run_embedding_grad_v2, ub_run
from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import (Abs, Add, Adds, Axpy, BinaryRepeatParams, Cast, Copy,
                            CopyRepeatParams, DataCopy, Div, Duplicate, GetBlockIdx,
                            GlobalTensor, HardEvent, Max, Mul, Muls, ReduceMax, ReduceSum,
                            Reciprocal, RoundMode, Rsqrt, SetFlag, Sqrt, Sub, TBuf, TPipe,
                            WaitFlag, WholeReduceSum, float32, half)

from test_cube_matmul import MatmulKernel
from test_cube_layouts import aic_run

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
BF16 = np.dtype(ml_dtypes.bfloat16)
#: the canonical NaN's bits, written out
CANON = {F32: 0x7FC00000, F16: 0x7E00, BF16: 0x7FC0}
RAW = {F32: np.uint32, F16: np.uint16, BF16: np.uint16}
INF = np.inf


def bits(a):
    a = np.asarray(a)
    return a.view(RAW[a.dtype])


def from_bits(values, dt):
    return np.array(values, RAW[dt]).view(dt)


def run(body, **arrays):
    with np.errstate(all="ignore"):
        after, _ = ub_run(body, arrays)
    return after


def expect(got, want_bits, dt):
    """``got`` (dtype dt) holds exactly ``want_bits``; a NaN written as the canonical one."""
    np.testing.assert_array_equal(bits(got), np.array(want_bits, RAW[dt]),
                                  err_msg=" ".join(hex(int(b)) for b in bits(got)))


def c(dt):
    return CANON[dt]


def neg_nan(dt):
    """A negative quiet NaN with a payload: 0xFFC01234 / 0xFE12."""
    return from_bits([0xFFC01234 if dt == F32 else 0xFE12], dt)[0]


# -- element-wise instructions, level 2 ----------------------------------------------------------
@pytest.mark.parametrize("dt", [F32, F16], ids=["float", "half"])
def test_invalid_operations_give_the_canonical_nan(dt):
    """inf - inf, 0 * inf, 0 / 0, sqrt(-1) and friends: on x86-64 numpy makes 0xFFC00000
    (0xFE00); the instruction writes the positive quiet NaN. A finite lane beside it is
    the ordinary result."""
    one = 0x3F800000 if dt == F32 else 0x3C00
    inf = 0x7F800000 if dt == F32 else 0x7C00
    x = np.array([INF, 0, 0, -1, INF, 1, 2, 4], dt)
    y = np.array([-INF, INF, 0, 1, INF, 1, 2, 4], dt)
    zero = np.zeros(8, dt)

    def body(t):
        Add(t["add"], t["x"], t["y"], 8)              # inf + -inf
        Sub(t["sub"], t["x"], t["x"], 8)              # inf - inf
        Mul(t["mul"], t["x"], t["y"], 8)              # 0 * inf
        Div(t["div"], t["x"], t["x"], 8)              # 0 / 0, inf / inf
        Sqrt(t["sqrt"], t["x"], 8)                    # sqrt(-1)
        Rsqrt(t["rsqrt"], t["x"], 8)                  # 1 / sqrt(-1)
        Muls(t["muls"], t["x"], 0.0, 8)               # inf * 0
        Adds(t["adds"], t["x"], -INF, 8)              # inf + -inf
        Axpy(t["axpy"], t["y"], 1.0, 8)               # y * 1 + dst (dst starts as x)

    arrays = dict(x=x, y=y, add=zero, sub=zero, mul=zero, div=zero, sqrt=zero, rsqrt=zero,
                  muls=zero, adds=zero, axpy=x.copy())
    got = run(body, **arrays)
    n = c(dt)
    expect(got["add"][:2], [n, inf], dt)
    expect(got["sub"][:1], [n], dt)
    expect(got["mul"][1:2], [n], dt)
    expect(got["div"][:4], [n, n, n, one], dt)         # inf / inf, 0 / 0, 0 / 0, -1 / -1
    expect(got["sqrt"][3:4], [n], dt)
    expect(got["rsqrt"][3:4], [n], dt)
    expect(got["muls"][:1], [n], dt)
    expect(got["adds"][:1], [n], dt)
    expect(got["axpy"][:2], [n, inf], dt)              # -inf * 1 + inf; inf * 1 + 0
    assert not np.isnan(got["add"][2:].astype(np.float64)).any()


@pytest.mark.parametrize("dt", [F32, F16], ids=["float", "half"])
def test_a_nan_operand_with_sign_and_payload_comes_out_canonical(dt):
    """A NaN input keeps neither its sign nor its payload through arithmetic (Max, Abs and
    Reciprocal included): which operand's NaN the host's kernel passes on is not fixed."""
    x = np.full(8, neg_nan(dt), dt)
    y = np.full(8, from_bits([0x7FC00077 if dt == F32 else 0x7E77], dt)[0], dt)
    zero = np.zeros(8, dt)

    def body(t):
        Add(t["add"], t["x"], t["y"], 8)
        Max(t["max"], t["x"], t["y"], 8)
        Abs(t["abs"], t["x"], 8)
        Reciprocal(t["rec"], t["x"], 8)

    got = run(body, x=x, y=y, add=zero, max=zero, abs=zero, rec=zero)
    for k in ("add", "max", "abs", "rec"):
        expect(got[k], [c(dt)] * 8, dt)


# -- level 0 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [F32, F16], ids=["float", "half"])
def test_level0_form_gives_the_canonical_nan(dt):
    lanes = 256 // dt.itemsize
    x = np.zeros(2 * lanes, dt)
    x[::3] = INF
    y = np.zeros(2 * lanes, dt)
    y[::3] = -INF

    def body(t):
        # two repeats of the whole 256 B, both operands contiguous; inf + -inf every 3rd lane
        Add(t["z"], t["x"], t["y"], lanes, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 8))

    got = run(body, x=x, y=y, z=np.ones(2 * lanes, dt))
    want = np.zeros(2 * lanes, RAW[dt])
    want[::3] = c(dt)
    expect(got["z"], want, dt)


# -- reductions --------------------------------------------------------------------------------
@pytest.mark.parametrize("dt", [F32, F16], ids=["float", "half"])
def test_reductions_give_the_canonical_nan(dt):
    """ReduceSum (count form: the tree sum of one repeat, then the repeats' sums in order)
    and WholeReduceSum over [inf, -inf, ...], and ReduceMax over a negative NaN."""
    lanes = 256 // dt.itemsize
    x = np.zeros(2 * lanes, dt)
    x[0], x[1] = INF, -INF                     # repeat 0: inf + -inf in the first tree level
    x[lanes] = INF                              # repeat 1: inf; repeat 0's NaN + inf = NaN
    m = np.arange(2 * lanes).astype(dt)
    m[5] = neg_nan(dt)

    def body(t):
        ReduceSum(t["s"], t["x"], t["tmp"], 2 * lanes)
        WholeReduceSum(t["w"], t["x"], lanes, 2, 1, 1, 8)
        ReduceMax(t["mx"], t["m"], t["tmp2"], 2 * lanes)

    got = run(body, x=x, m=m, s=np.zeros(16, dt), w=np.zeros(16, dt), mx=np.zeros(16, dt),
              tmp=np.zeros(256, dt), tmp2=np.zeros(256, dt))
    expect(got["s"][:1], [c(dt)], dt)
    inf = 0x7F800000 if dt == F32 else 0x7C00
    expect(got["w"][:2], [c(dt), inf], dt)     # one result per repeat
    expect(got["mx"][:1], [c(dt)], dt)


# -- Cast --------------------------------------------------------------------------------------
def test_cast_of_a_nan_gives_the_canonical_nan_of_the_destination():
    """float -> half / bfloat16 of a NaN with a payload or a sign (numpy's software path and
    F16C may carry the payload differently), half -> float and float -> float (rounding)."""
    f = from_bits([0x7FC12345, 0xFFC00000, 0xFF812345, 0x3F800000, 0, 0, 0, 0], F32)
    h = from_bits([0xFE12, 0x7D01, 0x3C00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], F16)

    def body(t):
        Cast(t["f2h"], t["f"], RoundMode.CAST_NONE, 8)
        Cast(t["f2b"], t["f"], RoundMode.CAST_RINT, 8)
        Cast(t["h2f"], t["h"], RoundMode.CAST_NONE, 8)
        Cast(t["f2f"], t["f"], RoundMode.CAST_FLOOR, 8)

    got = run(body, f=f, h=h, f2h=np.zeros(16, F16), f2b=np.zeros(16, BF16),
              h2f=np.zeros(8, F32), f2f=np.zeros(8, F32))
    expect(got["f2h"][:4], [0x7E00, 0x7E00, 0x7E00, 0x3C00], F16)
    expect(got["f2b"][:4], [0x7FC0, 0x7FC0, 0x7FC0, 0x3F80], BF16)
    expect(got["h2f"][:3], [0x7FC00000, 0x7FC00000, 0x3F800000], F32)
    expect(got["f2f"][:4], [0x7FC00000, 0x7FC00000, 0x7FC00000, 0x3F800000], F32)


# -- data movement keeps the bytes -------------------------------------------------------------
def test_data_movement_keeps_a_nans_sign_and_payload():
    """DataCopy GM -> UB -> GM (ub_run's own copies), a UB -> UB DataCopy and Copy, and a
    Duplicate of a NaN scalar of the tensor's type move bytes: a NaN keeps them."""
    odd = [0xFFC01234, 0x7F812345, 0xFFFFFFFF, 0x7FC00001] * 16
    x = from_bits(odd, F32)
    scalar = from_bits([0xFFC0BEEF], F32)[0]

    def body(t):
        DataCopy(t["dc"], t["x"], 64)
        Copy(t["cp"], t["x"], 64, 1, CopyRepeatParams(1, 1, 8, 8))
        Duplicate(t["dup"], scalar, 64)

    got = run(body, x=x, dc=np.zeros(64, F32), cp=np.zeros(64, F32), dup=np.zeros(64, F32))
    expect(got["x"], odd, F32)
    expect(got["dc"], odd, F32)
    expect(got["cp"], odd, F32)
    expect(got["dup"], [0xFFC0BEEF] * 64, F32)


# -- the cube ----------------------------------------------------------------------------------
@pytest.mark.parametrize("out", [float32, half], ids=["L0C float out", "F322F16"])
def test_mmad_with_an_inf_times_zero_product(out):
    """A[0, 0] = inf, B[0, 0] = 0: C[0, 0] holds inf * 0 (and inf * B[0, j] elsewhere in
    row 0); Mmad writes the canonical NaN into L0C, and Fixpipe moves it (NoQuant) or
    converts it (F322F16)."""
    m = k = n = 16
    a = np.ones((m, k), np.float32)
    a[0, 0] = INF
    b = np.ones((k, n), np.float32)
    b[0, 0] = 0
    kern = MatmulKernel(m, k, n, float32, out)
    with np.errstate(all="ignore"):
        got, _ = aic_run(kern, {"a": a, "b": b}, {"c": (m * n, out)})
    cm = got["c"].reshape(m, n)
    dt = np.dtype(out)
    expect(cm[0, :2], [c(dt), 0x7F800000 if dt == F32 else 0x7C00], dt)
    assert (cm[1:, 0] == k - 1).all() and (cm[1:, 1:] == k).all()


# -- a lockstep group ----------------------------------------------------------------------------
def _group_kernel(x_addr, z_addr, n):
    """Each block, on its own slice of x: x - x, x + x, Cast<half>(x - x) and WholeReduceSum
    of each 64 lanes; out to its slice of z: [x - x | x + x | the sums, 64 lanes | the
    halves, n // 2 float slots]."""
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, (3 * n + 64) * 4 + n * 2)
    ub = buf.Get(float32)
    x, s, t, sums = ub[0], ub[n], ub[2 * n], ub[3 * n]
    h = buf.Get(half)[2 * (3 * n + 64)]
    per = 3 * n + 64 + n // 2
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x_addr + GetBlockIdx() * n * 4, n)
    zg.SetGlobalBuffer(z_addr + GetBlockIdx() * per * 4, per)
    DataCopy(x, xg, n)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Duplicate(sums, 0.0, 64)
    Sub(s, x, x, n)                                     # inf - inf
    Add(t, x, x, n)
    Cast(h, s, RoundMode.CAST_NONE, n)
    WholeReduceSum(sums, x, 64, n // 64, 1, 1, 8)       # inf + -inf in every repeat
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(zg, ub[n], 2 * n + 64)
    DataCopy(zg[3 * n + 64], buf.Get(float32)[3 * n + 64], n // 2)


def test_a_lockstep_group_gives_the_canonical_nan(monkeypatch):
    """Several blocks run as one group ([G, n] stacked operands): every member writes the
    canonical NaN, through element-wise, Cast and reduction instructions."""
    sizes = []
    init = lockstep.GroupContext.__init__

    def spy(self, soc, gm, ub, part, *a, **kw):
        sizes.append(len(part))
        init(self, soc, gm, ub, part, *a, **kw)

    monkeypatch.setattr(lockstep.GroupContext, "__init__", spy)
    lockstep._CACHE.clear()
    soc = get_soc("Ascend910B1")
    blocks, n = 4, 128
    per = 3 * n + 64 + n // 2
    x = np.ones(blocks * n, np.float32)
    x[::2] = INF
    x[1::4] = -INF
    gm = GlobalMemory(1 << 24)
    xa, za = gm.malloc(x.nbytes), gm.malloc(blocks * per * 4)
    gm.write(xa, x)
    with np.errstate(all="ignore"):
        run_kernel(_group_kernel, blocks, (xa, za, n), soc=soc, gm=gm, lockstep=True)
    assert max(sizes, default=0) > 1                    # the blocks ran as a group
    z = np.frombuffer(gm.read(za, blocks * per * 4), np.uint32).reshape(blocks, per)
    for blk in range(blocks):
        inf = np.isinf(x[blk * n:(blk + 1) * n])
        np.testing.assert_array_equal(z[blk, :n], np.where(inf, CANON[F32], 0))   # x - x
        assert not np.isnan(z[blk, n:2 * n].view(np.float32)).any()            # x + x
        np.testing.assert_array_equal(z[blk, 2 * n:2 * n + n // 64], CANON[F32])
        h = z[blk, 3 * n + 64:].view(np.uint16)
        np.testing.assert_array_equal(h, np.where(inf, CANON[F16], 0))


# -- the simulator's fast paths agree with the instructions -------------------------------------
@pytest.mark.parametrize("small", [False, True], ids=["row walk", "small-dim chunk"])
def test_embedding_grad_fast_path_writes_the_instructions_nan(small):
    """EmbeddingDenseGradV2's batched row walk sums runs and atomically adds them outside
    the instructions: a run holding inf and -inf (and a negative NaN row) gives the
    canonical NaN, the bytes of the instruction-by-instruction kernel."""
    rng = np.random.default_rng(1)
    rows, E, nw = 64, 16, 10
    grad = rng.standard_normal((rows, E)).astype(np.float32)
    idx = rng.integers(0, nw, rows)
    idx[:3] = 7
    grad[0, 0], grad[1, 0] = INF, -INF                       # index 7: inf + -inf
    grad[2, 1] = from_bits([0xFFC01234], F32)[0]             # index 7: a negative NaN
    with np.errstate(all="ignore"):
        ref, _, _ = run_embedding_grad_v2(grad, idx, nw, -1, False, small=small, fast=False)
        fast, _, _ = run_embedding_grad_v2(grad, idx, nw, -1, False, small=small, fast=True)
    np.testing.assert_array_equal(bits(fast), bits(ref))
    expect(ref[7, :2], [CANON[F32]] * 2, F32)


@pytest.mark.parametrize("nesterov", [False, True])
def test_fused_sparse_adam_batched_merge_writes_the_instructions_nan(stream, monkeypatch,
                                                                    nesterov):
    """FusedSparseAdam's batched merge sums duplicate rows and updates m, v outside the
    instructions: a run with inf and -inf, and a row alone holding a negative NaN, give
    the bytes (canonical NaNs) of the entry-by-entry kernel."""
    from npusim.kernels.fused_sparse_adam.kernel import KernelFusedSparseAdam
    from test_fused_sparse_adam import make_state, run as run_adam
    var, m, v, grad, idx = make_state((40, 16), 60, seed=2, low=0, high=40)
    idx[:3] = 5                                        # a run of three: inf + -inf + x
    grad[0, 0], grad[1, 0] = INF, -INF
    idx[3] = 9
    idx[4:] = np.where(idx[4:] == 9, 10, idx[4:])      # row 9 alone
    grad[3, 2] = from_bits([0xFFC01234], F32)[0]
    outs = {}
    for fast in (False, True):
        monkeypatch.setattr(KernelFusedSparseAdam, "fast", fast)
        with np.errstate(all="ignore"):
            outs[fast], _ = run_adam(stream, var, m, v, grad, idx, nesterov)
    for name, a, b in zip(("var", "m", "v"), outs[True], outs[False]):
        np.testing.assert_array_equal(bits(a), bits(b), err_msg=name)
    _, m_out, v_out = outs[False]
    expect(m_out[[5, 9], [0, 2]], [CANON[F32]] * 2, F32)
    expect(v_out[[5, 9], [0, 2]], [CANON[F32]] * 2, F32)
