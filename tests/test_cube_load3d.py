"""LoadData with LoadData3DParamsV2 (img2col v2) into L0A / L0B, SetFmatrix and the Load3D
registers: byte-exact against numpy renderings of the documented layouts, written here
with plain loops (the NC1HWC0 feature map, the img2col M/K order, ZZ in L0A, ZN in L0B:
LoadData 卷积数据搬运 v2; Mmad.md's layouts), and the cost of one instruction."""
import numpy as np
import pytest

from npusim import KernelError, get_soc
from npusim.ascendc import *  # noqa: F403
from tests.test_cube_layouts import BF16, aic_run, gm_tensor, l0_snapshot, sync

SOC = get_soc("Ascend910B1")


def nz_of(mat: np.ndarray) -> np.ndarray:
    """An ND matrix (rows x cols) as Nd2Nz leaves it in L1: column blocks of C0, each the
    rows (padded to 16) of C0 elements — the NC1HWC0 map with H = 1, W = rows16."""
    rows, cols = mat.shape
    c0 = 32 // mat.dtype.itemsize
    r16 = -(-rows // 16) * 16
    out = np.zeros((cols // c0, r16, c0), mat.dtype)
    for c1 in range(cols // c0):
        out[c1, :rows] = mat[:, c1 * c0:(c1 + 1) * c0]
    return out.reshape(-1)


def zz_of(mat: np.ndarray) -> np.ndarray:
    """Mmad.md's A layout: 16 x C0 fractals, row-major inside and between."""
    rows, cols = mat.shape
    c0 = 32 // mat.dtype.itemsize
    out = []
    for i in range(rows // 16):
        for j in range(cols // c0):
            out.append(mat[i * 16:(i + 1) * 16, j * c0:(j + 1) * c0].reshape(-1))
    return np.concatenate(out)


def zn_of(mat: np.ndarray) -> np.ndarray:
    """Mmad.md's B layout (k x n): C0 x 16 fractals, column-major inside, row-major between."""
    rows, cols = mat.shape
    c0 = 32 // mat.dtype.itemsize
    out = []
    for i in range(rows // c0):
        for j in range(cols // 16):
            out.append(mat[i * c0:(i + 1) * c0, j * 16:(j + 1) * 16].T.reshape(-1))
    return np.concatenate(out)


def load(src_flat, l0_pos, dtype, params, pre=None, config=IS_RESER_LOAD3D_DEFAULT_CONFIG,
         l0_bytes=16384):
    """Run one Load3Dv2 of ``src_flat`` (placed at the start of L1) into a poisoned L0;
    returns (the L0 bytes, the profile)."""
    seen = []

    def kernel(addr):
        pipe = TPipe()
        l1, l0 = TBuf(TPosition.A1), TBuf(l0_pos)
        pipe.InitBuffer(l1, src_flat.nbytes)
        pipe.InitBuffer(l0, l0_bytes)
        DataCopy(l1.Get(dtype), gm_tensor(dtype, addr["src"], src_flat.size), src_flat.size)
        sync(HardEvent.MTE2_MTE1)
        if pre:
            pre()
        LoadData(l0.Get(dtype), l1.Get(dtype), params, config=config)
        l0_snapshot(l0.Get(dtype), seen)

    _, prof = aic_run(kernel, {"src": src_flat}, {}, keep_spans=True)
    return seen[0], prof


def matmul_params(rows, cols, transpose, dtype=np.float16):
    c0 = 32 // np.dtype(dtype).itemsize
    return LoadData3DParamsV2(l1H=1, l1W=-(-rows // 16) * 16, channelSize=cols, kExtension=cols,
                              mExtension=-(-rows // 16) * 16, enTranspose=transpose)


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.int8])
def test_a_slice_into_l0a_is_zz_in_one_instruction(dtype):
    rng = np.random.default_rng(1)
    c0 = 32 // np.dtype(dtype).itemsize
    a = rng.integers(-100, 100, (48, 4 * c0)).astype(dtype)       # m x k
    got, prof = load(nz_of(a), TPosition.A2, dtype, matmul_params(48, 4 * c0, False))
    want = zz_of(a).view(np.uint8)
    np.testing.assert_array_equal(got[:want.size], want)
    assert (got[want.size:] == 0xFF).all()                         # nothing else written
    loads = [r for r in prof.records[0] if r[5] == "LoadData"]
    assert len(loads) == 1                                          # one head for the slice
    assert loads[0][2] == SOC.mte1_head_cycles + -(-a.nbytes // 256)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_a_kept_transposed_in_l1_loads_as_zz_with_entranspose(dtype):
    """A^T (k x m) in L1 as Nd2Nz leaves it; enTranspose puts A (m x k) in ZZ (float: the
    16 x 8 fractals of 16 x 16 squares, k a multiple of 16)."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((32, 48)).astype(dtype)               # m = 32, k = 48
    got, _ = load(nz_of(np.ascontiguousarray(a.T)), TPosition.A2, dtype,
                  matmul_params(48, 32, True, dtype))
    np.testing.assert_array_equal(got[:a.nbytes], zz_of(a).view(np.uint8))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_b_into_l0b_is_zn(dtype):
    """B (k x n) kept k x n in L1 lands as L0B's ZN (enTranspose, as the sample sets it,
    changes nothing into L0B)."""
    rng = np.random.default_rng(3)
    b = rng.standard_normal((32, 48)).astype(dtype)                # k = 32, n = 48
    for tr in (False, True):
        got, prof = load(nz_of(b), TPosition.B2, dtype, matmul_params(32, 48, tr, dtype))
        np.testing.assert_array_equal(got[:b.nbytes], zn_of(b).view(np.uint8))
    loads = [r for r in prof.records[0] if r[5] == "LoadData"]
    assert loads[0][2] == SOC.mte1_head_cycles + -(-b.nbytes // 128)


@pytest.mark.parametrize("to", [TPosition.A2, TPosition.B2], ids=["A2", "B2"])
def test_a_float_k_slice_from_any_row(to):
    """The M axis counts positions, so a slice may start at any one: Ascend C's Matmul
    loads a float operand kept k x m (A transposed) or k x n (B) from row kInner * baseK,
    e.g. 40 for a baseK of 40, with CeilAlign(40, 16) = 48 rows (load_to_l0a_loadInstr.h,
    load_to_l0b_loadInstr.h). Rows 40..87 of 96 land as A's ZZ / B's ZN of that k range."""
    rng = np.random.default_rng(4)
    kept = rng.standard_normal((96, 32)).astype(np.float32)         # k x m (or k x n)
    params = LoadData3DParamsV2(l1H=1, l1W=96, channelSize=32, kExtension=32, mExtension=48,
                                mStartPt=40, enTranspose=to == TPosition.A2)
    got, _ = load(nz_of(kept), to, np.float32, params)
    part = kept[40:88]
    want = zz_of(np.ascontiguousarray(part.T)) if to == TPosition.A2 else zn_of(part)
    np.testing.assert_array_equal(got[:part.nbytes], want.view(np.uint8))


def im2col_reference(fmap, H, W, pads, C, stride, filt, dil, pad_value, m0, mext, k0, kext):
    """The documented img2col, element by element: M = output position (row-major over
    Ho x Wo), K = (c1, kh, kw, c0); taps outside the map read the padding value."""
    c0 = 32 // fmap.dtype.itemsize
    left, right, top, bottom = pads
    (sh, sw), (kh, kw), (dh, dw) = stride, filt, dil
    ho_n = (H + top + bottom - ((kh - 1) * dh + 1)) // sh + 1
    wo_n = (W + left + right - ((kw - 1) * dw + 1)) // sw + 1
    out = np.empty((mext, kext), fmap.dtype)
    for m in range(mext):
        p = m0 + m
        ho, wo = divmod(p, wo_n)
        for k in range(kext):
            c1, rest = divmod(k0 + k, kh * kw * c0)
            tap, c = divmod(rest, c0)
            h = ho * sh + (tap // kw) * dh - top
            w = wo * sw + (tap % kw) * dw - left
            inside = 0 <= h < H and 0 <= w < W and p < ho_n * wo_n
            out[m, k] = fmap[((c1 * H + h) * W + w) * c0 + c] if inside else pad_value
    return out


def test_convolution_window_with_padding_stride_and_the_registers():
    """A 3 x 3 window, stride 2, padding, from the fmatrix register (SetFmatrix,
    IsResetLoad3dConfig{false, false}) and SetLoadDataPaddingValue."""
    rng = np.random.default_rng(4)
    H, W, C, pads = 6, 7, 32, (1, 2, 1, 0)
    fmap = rng.integers(-50, 50, (C // 16) * H * W * 16).astype(np.float16)
    p = LoadData3DParamsV2(l1H=99, l1W=99, channelSize=C, kExtension=64, mExtension=16,
                           kStartPt=32, mStartPt=0, strideW=2, strideH=2, filterW=3, filterH=3,
                           padValue=5.0)

    def pre():
        SetFmatrix(H, W, list(pads), FmatrixMode.FMATRIX_LEFT)
        SetLoadDataPaddingValue(-3.0)
        SetLoadDataRepeat(LoadDataRepeatParam(0, 1, 0))
        SetLoadDataBoundary(0)

    got, _ = load(fmap, TPosition.A2, np.float16, p, pre=pre,
                  config=IsResetLoad3dConfig(False, False))
    want = im2col_reference(fmap, H, W, pads, C, (2, 2), (3, 3), (1, 1), -3.0, 0, 16, 32, 64)
    np.testing.assert_array_equal(got[:want.nbytes], zz_of(want).view(np.uint8))
    assert (want == -3.0).any()                                    # padding taps were read


def test_refusals_name_the_field():
    b = np.zeros(512, np.int8)
    with pytest.raises(Exception, match="int8 into L0B"):
        load(b, TPosition.B2, np.int8, matmul_params(16, 32, False, np.int8))
    h = np.zeros(512, np.float16)
    with pytest.raises(KernelError, match="mExtension = 8 is not a multiple of 16"):
        load(h, TPosition.A2, np.float16, LoadData3DParamsV2(l1H=1, l1W=16, channelSize=16,
                                                             kExtension=16, mExtension=8))
    with pytest.raises(KernelError, match="enSmallK .*not supported by current products"):
        p = matmul_params(16, 16, False)
        p.enSmallK = True
        load(h, TPosition.A2, np.float16, p)
    with pytest.raises(KernelError, match="right fmatrix was never set"):
        p = matmul_params(16, 16, False)
        p.fMatrixCtrl = True
        load(h, TPosition.A2, np.float16, p)
    with pytest.raises(KernelError, match="LoadData2DParamsV2 is the 2D load of the 3510"):
        load(h, TPosition.A2, np.float16, LoadData2DParamsV2(0, 0, 1, 1, 1, 1, False, 0))


@pytest.mark.parametrize("mode,stride,to", [(0, 2, TPosition.A2), (0, 0, TPosition.A2),
                                            (1, 3, TPosition.A2), (0, 1, TPosition.B2)])
def test_repeats_move_the_start_along_m_or_k(mode, stride, to):
    """SetLoadDataRepeat(repeatStride, repeatTime 3, repeatMode): iteration r loads the
    img2col block starting repeatStride * r * 16 rows further down M (mode 0) or
    repeatStride * r * C0 columns further along K (mode 1), into the L0 block after the
    previous one; one instruction, one head, the bytes of all three."""
    rng = np.random.default_rng(6)
    H, W, C, pads = 5, 8, 64, (1, 1, 1, 1)
    fmap = rng.integers(-50, 50, (C // 16) * H * W * 16).astype(np.float16)
    mext, kext, reps = 16, 32, 3
    p = LoadData3DParamsV2(padList=list(pads), l1H=H, l1W=W, channelSize=C, kExtension=kext,
                           mExtension=mext, kStartPt=16, mStartPt=0, filterW=3, filterH=3,
                           padValue=7.0)
    got, prof = load(fmap, to, np.float16, p,
                     pre=lambda: SetLoadDataRepeat(LoadDataRepeatParam(stride, reps, mode)))
    layout = zz_of if to == TPosition.A2 else zn_of          # B: the map is k x n
    want = []
    for r in range(reps):
        m0 = r * stride * 16 if mode == 0 else 0
        k0 = 16 + (r * stride * 16 if mode == 1 else 0)
        block = im2col_reference(fmap, H, W, pads, C, (1, 1), (3, 3), (1, 1), 7.0,
                                 m0, mext, k0, kext)
        want.append(layout(block))
    want = np.concatenate(want).view(np.uint8)
    np.testing.assert_array_equal(got[:want.size], want)
    assert (got[want.size:] == 0xFF).all()
    loads = [r for r in prof.records[0] if r[5] == "LoadData"]
    rate = 256 if to == TPosition.A2 else 128
    assert len(loads) == 1 and loads[0][2] == SOC.mte1_head_cycles + -(-want.size // rate)


def test_repeat_time_zero_is_a_nop():
    h = np.arange(512).astype(np.float16)
    got, prof = load(h, TPosition.A2, np.float16, matmul_params(16, 32, False),
                     pre=lambda: SetLoadDataRepeat(LoadDataRepeatParam(0, 0, 0)))
    assert (got == 0xFF).all()
    assert not [r for r in prof.records[0] if r[5] == "LoadData"]
