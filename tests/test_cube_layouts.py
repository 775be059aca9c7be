"""The cube's data formats: DataCopy ND -> NZ into L1, LoadData / LoadDataWithTranspose
into L0A/L0B, Fixpipe NZ -> ND / NZ with its conversions, and the round trip of a
fractal layout ND -> NZ -> ZZ -> (Mmad by the identity) -> NZ -> ND.

Each expected value is rendered here from the documented semantics (the Nd2NzParams loop
of copy_gm_to_cbuf_multi_nd2nz, the Load2D repeat/stride rules, the LoadDataWithTranspose
square examples, the Fixpipe parameter table), independently of npusim's helpers."""
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import (AlignmentError, DtypeError, GlobalMemory, KernelError, LimitError, UbError,
                    get_soc, run_kernel)
from npusim.ascendc import *  # noqa: F403

SOC = get_soc("Ascend910B1")
AIC = KernelMetaType.KERNEL_TYPE_AIC_ONLY
BF16 = np.dtype(ml_dtypes.bfloat16)


def aic_run(kernel, inputs: dict, outputs: dict, soc=SOC, block_dim=1, **kw):
    """Run ``kernel(addr)`` on cube cores, ``addr[name]`` the GM address of each input array
    (written) and each output ``name: (count, dtype)`` (zeroed). Returns (outputs read
    back, profile)."""
    gm = GlobalMemory(1 << 26)
    addr, outs = {}, {}
    for name, arr in inputs.items():
        arr = np.ascontiguousarray(arr)
        addr[name] = gm.malloc(max(arr.nbytes, 32))
        gm.write(addr[name], arr.reshape(-1).view(np.uint8))
    for name, (count, dtype) in outputs.items():
        nbytes = max(count * np.dtype(dtype).itemsize, 32)
        addr[name] = gm.malloc(nbytes)
        gm.write(addr[name], np.zeros(nbytes, np.uint8))
        outs[name] = (count, np.dtype(dtype))
    prof = run_kernel(kernel, block_dim, (addr,), soc=soc, gm=gm, kernel_type=AIC, **kw)
    got = {name: np.frombuffer(gm.read(addr[name], c * dt.itemsize), dt).copy()
           for name, (c, dt) in outs.items()}
    return got, prof


def gm_tensor(dtype, address, count):
    g = GlobalTensor(dtype)
    g.SetGlobalBuffer(address, count)
    return g


def sync(event):
    SetFlag(event, 0)
    WaitFlag(event, 0)


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(-128, 128, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


# -- DataCopy with Nd2NzParams -----------------------------------------------------------------

def nd2nz_reference(src: np.ndarray, dst: np.ndarray, p) -> np.ndarray:
    """The copy_gm_to_cbuf_multi_nd2nz loop: matrix i, row j, 32 B block b of the row."""
    out = dst.copy()
    c0 = 32 // src.dtype.itemsize
    for i in range(p.ndNum):
        for j in range(p.nValue):
            start = i * p.srcNdMatrixStride + j * p.srcDValue
            row = src[start:start + p.dValue]
            nblk = -(-p.dValue // c0)
            padded = np.zeros(nblk * c0, src.dtype)      # the tail of the last block: zeros
            padded[:p.dValue] = row
            for b in range(nblk):
                at = i * p.dstNzMatrixStride + (j * p.dstNzNStride + b * p.dstNzC0Stride) * c0
                out[at:at + c0] = padded[b * c0:(b + 1) * c0]
    return out


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(["float16", "float32", "int8"]), nd=st.integers(1, 2),
       n=st.integers(1, 18), d=st.integers(1, 40), extra_d=st.integers(0, 9),
       c0s_extra=st.integers(0, 3), ns=st.integers(1, 2), seed=st.integers(0, 99))
def test_nd2nz_follows_the_documented_loop(dtype, nd, n, d, extra_d, c0s_extra, ns, seed):
    dtype = np.dtype(dtype)
    c0 = 32 // dtype.itemsize
    src_d = d + extra_d
    nblk = -(-d // c0)
    c0s = n * ns + c0s_extra                       # column blocks far enough apart, or touching
    one = (nblk - 1) * c0s * c0 + (n - 1) * ns * c0 + c0        # elements one matrix covers
    p = Nd2NzParams(nd, n, d, n * src_d + 3, src_d, c0s, ns, one + c0 * (seed % 3))
    size = -(-((nd - 1) * p.dstNzMatrixStride + one) // c0) * c0
    rng = np.random.default_rng(seed)
    src = rand(rng, (nd - 1) * p.srcNdMatrixStride + n * src_d, dtype)
    fill = rand(rng, size, dtype)

    def kernel(addr):
        pipe = TPipe()
        buf = TBuf(TPosition.A1)
        pipe.InitBuffer(buf, size * dtype.itemsize)
        l1 = buf.Get(dtype)
        DataCopy(l1, gm_tensor(dtype, addr["fill"], size), size)      # known bytes around
        PipeBarrier(PIPE_MTE2)
        DataCopy(l1, gm_tensor(dtype, addr["src"], src.size), p)
        sync(HardEvent.MTE2_MTE3)
        DataCopy(gm_tensor(dtype, addr["out"], size), l1, size)        # L1 -> GM on MTE3

    got, _ = aic_run(kernel, {"src": src, "fill": fill}, {"out": (size, dtype)})
    np.testing.assert_array_equal(got["out"], nd2nz_reference(src, fill, p))


def test_cube_copy_limits_and_paths():
    def copy(p, dtype=half, pos=TPosition.A1, src_dtype=None):
        def kernel(addr):
            pipe = TPipe()
            buf = TBuf(pos)
            pipe.InitBuffer(buf, 4096)
            DataCopy(buf.Get(dtype), gm_tensor(src_dtype or dtype, addr["x"], 1024), p)
        return kernel

    x = {"x": np.zeros(1024, np.float16)}
    with pytest.raises(LimitError, match=r"nValue = 16385 is outside \[0, 16384\] "
                                         r"\(DataCopy 随路格式转换, Nd2NzParams table"):
        aic_run(copy(Nd2NzParams(1, 16385, 16, 0, 16, 16, 1, 0)), x, {})
    with pytest.raises(LimitError, match=r"dstNzC0Stride = 0"):
        aic_run(copy(Nd2NzParams(1, 2, 16, 0, 16, 0, 1, 0)), x, {})
    with pytest.raises(DtypeError, match="keeps the type"):
        aic_run(copy(Nd2NzParams(1, 2, 16, 0, 16, 16, 1, 0), float32, src_dtype=half), x, {})
    with pytest.raises(UbError, match="L1 offset 0 ends at"):       # 64 rows of 32 B + past 4 KiB
        aic_run(copy(Nd2NzParams(1, 16, 48, 0, 48, 64, 1, 0)), {"x": np.zeros(1024, np.float16)},
                {})
    aic_run(copy(Nd2NzParams(0, 2, 16, 0, 16, 16, 1, 0)), x, {})   # ndNum 0: a NOP
    with pytest.raises(AlignmentError, match="moves whole 64 B blocks"):   # L1 -> bias table
        aic_run(lambda addr: DataCopy(LocalTensor.at(float32, TPosition.C2, 0, 16),
                                      LocalTensor.at(float32, TPosition.C1, 0, 16), 12), {}, {})


def test_nd2nz_into_the_ub_of_a_vector_core():
    """GM -> VECIN with Nd2NzParams is an AIV path too (随路格式转换: GM -> VECIN)."""
    src = np.arange(5 * 20, dtype=np.float16)
    p = Nd2NzParams(1, 5, 20, 0, 20, 6, 1, 0)
    gm = GlobalMemory(1 << 20)
    x, y = gm.malloc(src.nbytes), gm.malloc(512)
    gm.write(x, src)

    def kernel():
        pipe = TPipe()
        buf = TBuf(TPosition.VECIN)
        pipe.InitBuffer(buf, 512)
        ub = buf.Get(half)
        Duplicate(ub, 7.0, 256)
        sync(HardEvent.V_MTE2)
        DataCopy(ub, gm_tensor(half, x, src.size), p)
        sync(HardEvent.MTE2_MTE3)
        DataCopy(gm_tensor(half, y, 256), ub, 256)

    run_kernel(kernel, 1, (), soc=SOC, gm=gm)
    got = np.frombuffer(gm.read(y, 512), np.float16)
    np.testing.assert_array_equal(got, nd2nz_reference(src, np.full(256, 7, np.float16), p))


# -- LoadData (Load2D) -------------------------------------------------------------------------

def load2d_reference(src: np.ndarray, dst: np.ndarray, start, repeat, stride, gap, transpose,
                     isz) -> np.ndarray:
    """Load2D.md: repeat r copies source fractal start + r*stride to destination fractal
    r*(1 + gap), a fractal being 512 B; ifTranspose transposes each 16 x 16 fractal."""
    out = dst.copy()
    for r in range(repeat):
        frac = src[(start + r * stride) * 512:(start + r * stride + 1) * 512]
        if transpose:
            frac = frac.view(np.uint16).reshape(16, 16).T.copy().view(np.uint8).reshape(-1)
        at = r * (1 + gap) * 512
        out[at:at + 512] = frac
    return out


def l0_snapshot(t, out: list):
    """A test's peek at an L0 buffer (LocalTensor.numpy costs nothing and moves nothing)."""
    out.append(t.ReinterpretCast(uint8_t).numpy())


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(["float16", "float32", "int8", "bfloat16"]),
       to_b=st.booleans(), start=st.integers(0, 3), repeat=st.integers(0, 6),
       stride=st.integers(0, 3), gap=st.integers(0, 2), transpose=st.booleans(),
       seed=st.integers(0, 99))
def test_load_data_moves_fractals_as_documented(dtype, to_b, start, repeat, stride, gap,
                                                transpose, seed):
    dtype = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    transpose = transpose and dtype.itemsize == 2
    src = np.random.default_rng(seed).integers(0, 256, 24 * 512, dtype=np.uint8)
    seen = []

    def kernel(addr):
        pipe = TPipe()
        l1, l0 = TBuf(TPosition.B1), TBuf(TPosition.B2 if to_b else TPosition.A2)
        pipe.InitBuffer(l1, src.size)
        pipe.InitBuffer(l0, 20 * 512)
        DataCopy(l1.Get(uint8_t), gm_tensor(uint8_t, addr["src"], src.size), src.size)
        sync(HardEvent.MTE2_MTE1)
        LoadData(l0.Get(dtype), l1.Get(dtype), LoadData2DParams(start, repeat, stride, 0, gap,
                                                                transpose, 0))
        l0_snapshot(l0.Get(dtype), seen)

    _, prof = aic_run(kernel, {"src": src}, {}, keep_spans=True)
    poison = np.full(20 * 512, 0xFF, np.uint8)       # what a never-written L0 byte holds
    want = load2d_reference(src, poison, start, repeat, stride, gap, transpose, dtype.itemsize)
    np.testing.assert_array_equal(seen[0], want)
    names = [r[5] for r in prof.records[0]]
    assert names.count("LoadData") == (1 if repeat else 0)      # repeatTimes 0: a NOP


def test_load_data_from_gm_and_its_rules():
    src = np.arange(4 * 512, dtype=np.uint8)
    seen = []

    def from_gm(addr):
        pipe = TPipe()
        l0 = TBuf(TPosition.A2)
        pipe.InitBuffer(l0, 4 * 512)
        LoadData(l0.Get(half), gm_tensor(half, addr["src"], 1024), LoadData2DParams(1, 2, 2))
        l0_snapshot(l0.Get(half), seen)

    _, prof = aic_run(from_gm, {"src": src}, {}, keep_spans=True)
    want = np.full(4 * 512, 0xFF, np.uint8)
    want[:512], want[512:1024] = src[512:1024], src[1536:2048]
    np.testing.assert_array_equal(seen[0], want)
    assert ("LoadData", 1) in [(r[5], r[0]) for r in prof.records[0]]    # a DMA read on MTE2

    def bad(params, dtype=half, dst_pos=TPosition.A2, dst_off=0):
        def kernel(addr):
            pipe = TPipe()
            l1, l0 = TBuf(TPosition.A1), TBuf(dst_pos)
            pipe.InitBuffer(l1, 4096)
            pipe.InitBuffer(l0, 4096)
            LoadData(l0.Get(dtype)[dst_off], l1.Get(dtype), params)
        return kernel

    with pytest.raises(DtypeError, match="16-bit types only") as err:
        aic_run(bad(LoadData2DParams(0, 1, 0, 0, 0, True), float32), {}, {})
    assert err.value.line.startswith("test_cube_layouts.py:")      # at the kernel's line
    for repeat in (256, 300):       # a range limit, named with its page (Load2D.md)
        with pytest.raises(LimitError, match=rf"repeatTimes = {repeat} is outside \[0, 255\] "
                                             r"\(Load2D\.md"):
            aic_run(bad(LoadData2DParams(0, repeat)), {}, {})
    with pytest.raises(AlignmentError, match="512 B aligned"):
        aic_run(bad(LoadData2DParams(0, 1), dst_off=16), {}, {})         # 32 B into L0A
    with pytest.raises(KernelError, match="must be a LocalTensor in A2/B2"):
        aic_run(bad(LoadData2DParams(0, 1), dst_pos=TPosition.CO1, dtype=float32), {}, {})
    with pytest.raises(DtypeError, match="not a LoadData type on Ascend910A"):
        aic_run910 = bad(LoadData2DParams(0, 1), float32)
        run_kernel(aic_run910, 1, ({},), soc=get_soc("Ascend910A"), gm=GlobalMemory(1 << 20))


# -- LoadDataWithTranspose ---------------------------------------------------------------------

def transpose_square_reference(src: np.ndarray, dtype) -> np.ndarray:
    """The page's three cases, for one square read from ``src`` (bytes): b16 one 16 x 16
    fractal transposed; b8 two 16 x 32 fractals stacked to 32 x 32, transposed, split back
    by rows; b32 two 16 x 8 fractals side by side as 16 x 16, transposed, split by columns."""
    if dtype.itemsize == 2:
        return src.view(np.uint16).reshape(16, 16).T.copy().view(np.uint8).reshape(1, 512)
    if dtype.itemsize == 1:
        sq = np.vstack([src[:512].reshape(16, 32), src[512:].reshape(16, 32)]).T
        return np.stack([sq[:16].reshape(-1), sq[16:].reshape(-1)])
    f = src.view(np.uint32)
    sq = np.hstack([f[:128].reshape(16, 8), f[128:].reshape(16, 8)]).T
    return np.stack([np.ascontiguousarray(sq[:, :8]).view(np.uint8).reshape(-1),
                     np.ascontiguousarray(sq[:, 8:]).view(np.uint8).reshape(-1)])


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(["float16", "float32", "int8", "int32"]), start=st.integers(0, 2),
       repeat=st.integers(1, 4), stride=st.integers(0, 2), gap=st.integers(0, 2),
       frac_gap=st.integers(0, 2), seed=st.integers(0, 99))
def test_load_data_with_transpose_squares(dtype, start, repeat, stride, gap, frac_gap, seed):
    dtype = np.dtype(dtype)
    square = 512 if dtype.itemsize == 2 else 1024
    src = np.random.default_rng(seed).integers(0, 256, 12 * 1024, dtype=np.uint8)
    seen = []

    def kernel(addr):
        pipe = TPipe()
        l1, l0 = TBuf(TPosition.A1), TBuf(TPosition.A2)
        pipe.InitBuffer(l1, src.size)
        pipe.InitBuffer(l0, 32 * 512)
        DataCopy(l1.Get(uint8_t), gm_tensor(uint8_t, addr["src"], src.size), src.size)
        sync(HardEvent.MTE2_MTE1)
        LoadDataWithTranspose(l0.Get(dtype), l1.Get(dtype),
                              LoadData2dTransposeParams(start, repeat, stride, gap, frac_gap))
        l0_snapshot(l0.Get(dtype), seen)

    aic_run(kernel, {"src": src}, {})
    want = np.full(32 * 512, 0xFF, np.uint8)
    for r in range(repeat):
        at = (start + r * stride) * square
        fracs = transpose_square_reference(src[at:at + square], dtype)
        first = r * (1 + gap)                  # first fractal of repeat r, in 512 B fractals
        for f, frac in enumerate(fracs):
            pos = (first + f * (1 + frac_gap)) * 512
            want[pos:pos + 512] = frac
    np.testing.assert_array_equal(seen[0], want)


# -- Fixpipe -----------------------------------------------------------------------------------

def identity_mmad_kernel(m, n, src_dtype, body):
    """A kernel that builds an n x n identity in L0B and a known m x n matrix in L0C (ZZ A
    from GM, Mmad by the identity), then calls ``body(c1, addr)`` with the L0C tensor."""
    k0 = 32 // np.dtype(src_dtype).itemsize
    M1, N1 = -(-m // 16), -(-n // 16)
    K1 = -(-n // k0)

    def kernel(addr):
        pipe = TPipe()
        a2, b2, co1 = TBuf(TPosition.A2), TBuf(TPosition.B2), TBuf(TPosition.CO1)
        pipe.InitBuffer(a2, M1 * K1 * 512)
        pipe.InitBuffer(b2, K1 * N1 * 512)
        pipe.InitBuffer(co1, M1 * N1 * 1024)
        LoadData(a2.Get(src_dtype), gm_tensor(src_dtype, addr["a_zz"], M1 * K1 * 256),
                 LoadData2DParams(0, M1 * K1, 1))
        LoadData(b2.Get(src_dtype), gm_tensor(src_dtype, addr["eye_zn"], K1 * N1 * 256),
                 LoadData2DParams(0, K1 * N1, 1))
        sync(HardEvent.MTE2_M)
        acc = int32_t if np.dtype(src_dtype).kind == "i" else float32
        c1 = co1.Get(acc)
        Mmad(c1, a2.Get(src_dtype), b2.Get(src_dtype), MmadParams(m, n, n))
        sync(HardEvent.M_FIX)
        body(c1, addr)
    return kernel


def zz(a: np.ndarray, k0: int) -> np.ndarray:
    """Mmad.md's ZZ: 16 x k0 fractals, row-major inside and between (padding zero)."""
    m, k = a.shape
    M1, K1 = -(-m // 16), -(-k // k0)
    p = np.zeros((M1 * 16, K1 * k0), a.dtype)
    p[:m, :k] = a
    return p.reshape(M1, 16, K1, k0).transpose(0, 2, 1, 3).reshape(-1)


def zn(b: np.ndarray, k0: int) -> np.ndarray:
    """Mmad.md's ZN: k0 x 16 fractals, column-major inside, row-major between."""
    k, n = b.shape
    K1, N1 = -(-k // k0), -(-n // 16)
    p = np.zeros((K1 * k0, N1 * 16), b.dtype)
    p[:k, :n] = b
    return p.reshape(K1, k0, N1, 16).transpose(0, 2, 3, 1).reshape(-1)


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(["float16", "bfloat16", "float32", "int8"]),
       m=st.integers(1, 40), n=st.integers(1, 40), seed=st.integers(0, 99))
def test_fractal_layouts_round_trip(dtype, m, n, seed):
    """ND -> NZ in L1 (Nd2Nz) -> ZZ in L0A (LoadData, one row of fractals at a time) ->
    Mmad by the identity -> NZ in L0C -> Fixpipe NZ -> ND: the matrix comes back exactly."""
    dtype = BF16 if dtype == "bfloat16" else np.dtype(dtype)
    m = max(m, 2)                            # m = 1 is the GEMV form (test_cube_matmul)
    k0 = 32 // dtype.itemsize
    M1, K1, N1 = -(-m // 16), -(-n // k0), -(-n // 16)
    a = rand(np.random.default_rng(seed), (m, n), dtype)
    acc = np.int32 if dtype.kind == "i" else np.float32

    def kernel(addr):
        pipe = TPipe()
        a1, a2, b2, co1 = (TBuf(TPosition.A1), TBuf(TPosition.A2), TBuf(TPosition.B2),
                           TBuf(TPosition.CO1))
        for buf, size in ((a1, M1 * K1 * 512), (a2, M1 * K1 * 512), (b2, K1 * N1 * 512),
                          (co1, M1 * N1 * 1024)):
            pipe.InitBuffer(buf, size)
        DataCopy(a1.Get(dtype), gm_tensor(dtype, addr["a"], m * n),
                 Nd2NzParams(1, m, n, 0, n, M1 * 16, 1, 0))
        LoadData(b2.Get(dtype), gm_tensor(dtype, addr["eye_zn"], K1 * N1 * 256),
                 LoadData2DParams(0, K1 * N1, 1))
        sync(HardEvent.MTE2_MTE1)
        for i in range(M1):                  # NZ -> ZZ: row i of fractals, K1 of them
            LoadData(a2.Get(dtype)[i * K1 * 16 * k0], a1.Get(dtype)[i * 16 * k0],
                     LoadData2DParams(0, K1, M1))
        sync(HardEvent.MTE1_M)
        sync(HardEvent.MTE2_M)
        c1 = co1.Get(acc)
        Mmad(c1, a2.Get(dtype), b2.Get(dtype), MmadParams(m, n, n))
        sync(HardEvent.M_FIX)
        Fixpipe(gm_tensor(acc, addr["out"], m * n), c1,
                FixpipeParamsV220(n, m, M1 * 16, n))

    got, _ = aic_run(kernel, {"a": a, "eye_zn": zn(np.eye(n, dtype=dtype), k0)},
                     {"out": (m * n, acc)})
    np.testing.assert_array_equal(got["out"].reshape(m, n), a.astype(acc))


@settings(max_examples=25, deadline=None)
@given(m=st.integers(2, 40), n16=st.integers(1, 3), count=st.integers(1, 2),
       dst_extra=st.integers(0, 5), relu=st.booleans(), to_half=st.booleans(),
       seed=st.integers(0, 99))
def test_fixpipe_nz_to_nd_strides_relu_and_rounding(m, n16, count, dst_extra, relu, to_half,
                                                    seed):
    """Fixpipe reads element (r, c) of NZ matrix i at i*srcNdStride*256 + (c//16)*srcStride*16
    + r*16 + c%16 and writes it at i*dstNdStride + r*dstStride + c; F322F16 rounds once.
    (m >= 2: with m = 1 Mmad runs as GEMV and reads A as ND, test_cube_matmul.)"""
    n = n16 * 16 - (seed % 5)                 # nSize need not be a multiple of 16 for ND
    M16 = -(-m // 16) * 16
    mats = rand(np.random.default_rng(seed), (count, m, n16 * 16), np.float32) * 1e3
    src_nd = -(-(M16 * n16 * 16 * 4) // 1024)                 # matrices 1024 B apart in L0C
    dst_stride, dst_nd = n + dst_extra, (m - 1) * (n + dst_extra) + n + 7
    out_t = np.float16 if to_half else np.float32
    total = (count - 1) * dst_nd + (m - 1) * dst_stride + n

    def kernel(addr):
        pipe = TPipe()
        co1, a2, b2 = TBuf(TPosition.CO1), TBuf(TPosition.A2), TBuf(TPosition.B2)
        pipe.InitBuffer(co1, count * src_nd * 1024)
        pipe.InitBuffer(a2, M16 * n16 * 16 * 4)
        pipe.InitBuffer(b2, n16 * 16 * n16 * 16 * 4)
        for i in range(count):             # matrix i = A_i x I into L0C at i*srcNdStride KiB
            LoadData(a2.Get(float32), gm_tensor(float32, addr[f"a{i}"], M16 * n16 * 16),
                     LoadData2DParams(0, M16 // 16 * n16 * 2, 1))
            LoadData(b2.Get(float32), gm_tensor(float32, addr["eye"], (n16 * 16) ** 2),
                     LoadData2DParams(0, n16 * 2 * n16, 1))
            sync(HardEvent.MTE2_M)
            Mmad(co1.Get(float32)[i * src_nd * 256], a2.Get(float32), b2.Get(float32),
                 MmadParams(m, n16 * 16, n16 * 16))
            sync(HardEvent.M_MTE2)
        sync(HardEvent.M_FIX)
        Fixpipe(gm_tensor(out_t, addr["out"], total), co1.Get(float32),
                FixpipeParamsV220(n, m, M16, dst_stride,
                                  QuantMode_t.F322F16 if to_half else QuantMode_t.NoQuant, 0,
                                  count, src_nd, dst_nd, relu))

    inputs = {f"a{i}": zz(mats[i], 8) for i in range(count)}
    inputs["eye"] = zn(np.eye(n16 * 16, dtype=np.float32), 8)
    got, _ = aic_run(kernel, inputs, {"out": (total, out_t)})
    want = np.zeros(total, out_t)
    for i in range(count):
        for r in range(m):
            row = mats[i, r, :n].astype(out_t)               # one rounding, to nearest even
            if relu:
                row = np.maximum(row, 0)
            at = i * dst_nd + r * dst_stride
            want[at:at + n] = row
    np.testing.assert_array_equal(got["out"], want)


def _deq(scale: float) -> int:
    """A scale as Fixpipe's uint64 parameter (the float's bits in the low word)."""
    return int(np.array([scale], np.float32).view(np.uint32)[0])


def test_fixpipe_quantisation_nz_output_and_l1():
    m, n = 20, 32
    M16 = 32
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, (m, n)).astype(np.int8)
    af = rng.standard_normal((m, n)).astype(np.float32) * 50
    scales = (rng.random(n) + 0.1).astype(np.float32)
    table = np.array([_deq(s) for s in scales], np.uint64)
    seen = []

    def run(src_dtype, body, outputs, inputs):
        k0 = 32 // np.dtype(src_dtype).itemsize
        data = a if src_dtype == int8_t else af
        inputs = {"a_zz": zz(data, k0), "eye_zn": zn(np.eye(n, dtype=src_dtype), k0), **inputs}
        return aic_run(identity_mmad_kernel(m, n, src_dtype, body), inputs, outputs)

    # REQ8 (int32 -> int8, one scale), ND: round to nearest even, saturate
    got, _ = run(int8_t, lambda c1, addr: Fixpipe(
        gm_tensor(int8_t, addr["out"], m * n), c1,
        FixpipeParamsV220(n, m, M16, n, QuantMode_t.REQ8, _deq(3.5))), {"out": (m * n, np.int8)},
        {})
    s = np.float32(3.5)
    np.testing.assert_array_equal(got["out"].reshape(m, n),
                                  np.clip(np.rint(a * np.float64(s)), -128, 127).astype(np.int8))
    # VQF322B8_PRE (float -> int8, a scale per column from the L1 table), with ReLU
    def vq(c1, addr):
        pipe = GetTPipePtr()
        tb = TBuf(TPosition.A1)
        pipe.InitBuffer(tb, n * 8)
        DataCopy(tb.Get(uint64_t), gm_tensor(uint64_t, addr["table"], n), n)
        sync(HardEvent.MTE2_FIX)
        Fixpipe(gm_tensor(int8_t, addr["out"], m * n), c1, tb.Get(uint64_t),
                FixpipeParamsV220(n, m, M16, n, QuantMode_t.VQF322B8_PRE, 0, 1, 0, 0, True))
    got, _ = run(float32, vq, {"out": (m * n, np.int8)}, {"table": table})
    # the quantisation float keeps 10 mantissa bits: the low 13 of the scale are cleared
    hw = (scales.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    assert not np.array_equal(hw, scales)
    want = np.clip(np.rint(af.astype(np.float64) * hw), -128, 127)
    np.testing.assert_array_equal(got["out"].reshape(m, n), np.maximum(want, 0).astype(np.int8))
    # DEQF16 to L1 in NZ: column block j at j*dstStride 32 B blocks, rows of 16 halves
    def to_l1(c1, addr):
        pipe = GetTPipePtr()
        l1 = TBuf(TPosition.A1)
        pipe.InitBuffer(l1, 2 * 40 * 32)
        Fixpipe(l1.Get(half), c1, FixpipeParamsV220(n, m, M16, 40, QuantMode_t.DEQF16,
                                                    _deq(0.25)), config=CFG_NZ)
        seen.append(l1.Get(half).numpy())
    run(int8_t, to_l1, {}, {})
    got = seen[0].view(np.uint16)
    want16 = (a.astype(np.float64) * 0.25).astype(np.float16).view(np.uint16)
    for j in range(n // 16):
        block = got[j * 40 * 16:j * 40 * 16 + m * 16].reshape(m, 16)
        np.testing.assert_array_equal(block, want16[:, j * 16:(j + 1) * 16])
    assert np.all(got[m * 16:40 * 16] == 0xFFFF)            # between the blocks: untouched


def test_fixpipe_errors():
    m = n = 16

    def fix(dst_kind, params, config=CFG_ROW_MAJOR, src_dtype=float32):
        def body(c1, addr):
            if dst_kind == "l1":
                pipe = GetTPipePtr()
                l1 = TBuf(TPosition.A1)
                pipe.InitBuffer(l1, 4096)
                dst = l1.Get(params[0])
            else:
                dst = gm_tensor(params[0], addr["out"], 256)
            Fixpipe(dst, c1, params[1], config=config)
        return body

    def run(body, src_dtype=float32):
        k0 = 32 // np.dtype(src_dtype).itemsize
        inputs = {"a_zz": zz(np.ones((m, n), src_dtype), k0),
                  "eye_zn": zn(np.eye(n, dtype=src_dtype), k0)}
        return aic_run(identity_mmad_kernel(m, n, src_dtype, body), inputs,
                       {"out": (256, np.float32)})

    with pytest.raises(DtypeError, match="quantPre NoQuant does not turn float32 into float16"):
        run(fix("gm", (half, FixpipeParamsV220(n, m, 16, n))))
    with pytest.raises(DtypeError, match="L0C -> L1 cannot keep float32"):
        run(fix("l1", (float32, FixpipeParamsV220(n, m, 16, 1)), CFG_NZ))
    with pytest.raises(KernelError, match="writes NZ only"):
        run(fix("l1", (half, FixpipeParamsV220(n, m, 16, n, QuantMode_t.F322F16))))
    with pytest.raises(KernelError, match="needs cbufWorkspace"):
        run(fix("gm", (half, FixpipeParamsV220(n, m, 16, n, QuantMode_t.VDEQF16))), int8_t)
    with pytest.raises(KernelError, match="no Mmad with unitFlag 3 released it"):
        run(fix("gm", (float32, FixpipeParamsV220(n, m, 16, n, unitFlag=2))))   # test_cube_unitflag
    with pytest.raises(LimitError, match=r"nSize = 4096 is outside \[1, 4095\] \(Fixpipe\.md"):
        run(fix("gm", (float32, FixpipeParamsV220(4096, m, 16, n))))
    with pytest.raises(LimitError, match="dstStride = 0 must be >= 1"):
        run(fix("gm", (float32, FixpipeParamsV220(n, m, 16, 0))))
    with pytest.raises(KernelError, match="Ascend910A has no Fixpipe"):
        def on_910a(addr):
            Fixpipe(gm_tensor(float32, 0, 0), None, FixpipeParamsV220(n, m, 16, n))
        run_kernel(on_910a, 1, ({},), soc=get_soc("Ascend910A"), gm=GlobalMemory(1 << 20))


# -- memories, positions and launches ----------------------------------------------------------

def test_l1_and_l0_capacities_enforced_at_init_buffer():
    def fill(position, nbytes, second=32):
        def kernel(addr):
            pipe = TPipe()
            pipe.InitBuffer(TQue(position), 1, nbytes)
            pipe.InitBuffer(TBuf(position), second)
        return kernel

    aic_run(fill(TPosition.A2, 65536 - 512, 512), {}, {})             # exactly the 64 KiB L0A
    with pytest.raises(UbError, match="exceed the L0A capacity of 65536 B") as err:
        aic_run(fill(TPosition.A2, 65536 - 512, 513), {}, {})        # 513 B rounds to 1024
    assert err.value.line.startswith("test_cube_layouts.py:")
    with pytest.raises(UbError, match="exceed the L0B capacity of 65536 B"):
        aic_run(fill(TPosition.B2, 65536), {}, {})
    with pytest.raises(UbError, match="exceed the L0C capacity of 131072 B"):
        aic_run(fill(TPosition.CO1, 131072), {}, {})
    aic_run(fill(TPosition.A1, 524288 - 32), {}, {})    # a cube-only kernel: all of L1
    with pytest.raises(UbError, match="exceed the L1 capacity of 524288 B"):
        aic_run(fill(TPosition.B1, 524288 - 32, 64), {}, {})          # A1 and B1 share L1
    mix = KernelMetaType.KERNEL_TYPE_MIX_AIC_1_0        # MIX: GetCoreMemSize(L1), 256 B less
    run_kernel(fill(TPosition.A1, 524032 - 32), 1, ({},), soc=SOC, gm=GlobalMemory(1 << 20),
               kernel_type=mix)
    with pytest.raises(UbError, match="exceed the L1 capacity of 524032 B"):
        run_kernel(fill(TPosition.A1, 524032 - 32, 64), 1, ({},), soc=SOC,
                   gm=GlobalMemory(1 << 20), kernel_type=mix)
    with pytest.raises(UbError, match="exceed the BT capacity of 1024 B"):
        aic_run(fill(TPosition.C2, 1024), {}, {})
    with pytest.raises(UbError, match="L0C capacity of 262144 B"):    # the 910A's 256 KiB L0C
        run_kernel(fill(TPosition.CO1, 262144), 1, ({},), soc=get_soc("Ascend910A"),
                   gm=GlobalMemory(1 << 20))


def test_each_kind_of_core_has_its_own_memories():
    def init(position):
        def kernel(addr):
            TPipe().InitBuffer(TQue(position), 1, 512)
        return kernel

    with pytest.raises(KernelError, match="vector core \\(AIV\\) of Ascend910B1 has no L1"):
        run_kernel(init(TPosition.A1), 1, ({},), soc=SOC, gm=GlobalMemory(1 << 20))
    with pytest.raises(KernelError, match="cube core \\(AIC\\) of Ascend910B1 has no UB"):
        aic_run(init(TPosition.VECIN), {}, {})
    with pytest.raises(KernelError, match="CO2 is Global Memory on Ascend910B1"):
        aic_run(init(TPosition.CO2), {}, {})
    mems = []                                 # the coupled core: C1 in UB, C2 in L0C
    run_kernel(lambda addr: mems.extend(LocalTensor.at(float32, p, 0, 16).mem
                                        for p in (TPosition.C1, TPosition.C2, TPosition.A1)),
               1, ({},), soc=get_soc("Ascend910A"), gm=GlobalMemory(1 << 20))
    assert mems == ["UB", "L0C", "L1"]
    with pytest.raises(AlignmentError, match="L0A address 0x20 is not 512 B aligned"):
        aic_run(lambda addr: LocalTensor.at(half, TPosition.A2, 32, 16), {}, {})
    with pytest.raises(UbError, match="outside the 65536 B L0B"):
        aic_run(lambda addr: LocalTensor.at(half, TPosition.B2, 65024, 512), {}, {})
    with pytest.raises(KernelError, match="no DataCopy path L1 -> UB"):
        run_kernel(lambda addr: DataCopy(LocalTensor.at(half, TPosition.VECIN, 0, 16),
                                         LocalTensor.at(half, TPosition.A1, 0, 16), 16),
                   1, ({},), soc=get_soc("Ascend310P3"), gm=GlobalMemory(1 << 20))
    with pytest.raises(KernelError, match="scalar unit reads and writes the UB, not L1"):
        aic_run(lambda addr: LocalTensor.at(half, TPosition.A1, 0, 16).GetValue(0), {}, {})
    with pytest.raises(LimitError, match="KERNEL_TYPE_AIC_ONLY cannot be launched on Ascend910A"):
        run_kernel(lambda addr: None, 1, ({},), soc=get_soc("Ascend910A"),
                   gm=GlobalMemory(1 << 20), kernel_type=AIC)
    with pytest.raises(LimitError, match="MIX_AIC_1_2 cannot be launched on Ascend910A"):
        run_kernel(lambda addr: None, 1, ({},), soc=get_soc("Ascend910A"),
                   gm=GlobalMemory(1 << 20), kernel_type=KernelMetaType.KERNEL_TYPE_MIX_AIC_1_2)
