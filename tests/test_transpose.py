"""Transpose (16 x 16 and the extended NCHW <-> NHWC form) and TransDataTo5HD against numpy
renderings of Transpose.md and TransDataTo5HD.md (the pages' pseudocode, examples and
block rules), with their limits and errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import AlignmentError, DtypeError, KernelError, LimitError, UbError, get_soc
from npusim.ascendc import *  # noqa: F403

from kernel_helpers import ub_run

SOC = get_soc("Ascend910B1")
HEAD = SOC.vec_head_cycles


def names(prof):
    return [r[5] for r in prof.records[0]]


# -- Transpose 16 x 16 ---------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float16, np.int16, np.uint16])
def test_transpose_16x16(dtype):
    m = np.arange(256).astype(dtype)
    after, prof = ub_run(lambda t: Transpose(t["z"], t["x"]), dict(x=m, z=np.zeros(256, dtype)))
    np.testing.assert_array_equal(after["z"].reshape(16, 16), m.reshape(16, 16).T)
    assert [r[2] for r in prof.records[0] if r[5] == "Transpose"] == [HEAD + 2]   # 128/cycle


def test_transpose_in_place_and_the_nd2nd_b16_type():
    m = np.random.default_rng(1).integers(0, 60000, 256).astype(np.uint16)
    ext = TransposeParamsExt(0, 0, 16, 16, TransposeType.TRANSPOSE_ND2ND_B16)
    after, _ = ub_run(lambda t: (Transpose(t["x"], t["x"]),                     # in place
                                 Transpose(t["z"], t["x"], t["tmp"], ext)),
                      dict(x=m, z=np.zeros(256, np.uint16), tmp=np.zeros(32, np.uint8)))
    np.testing.assert_array_equal(after["x"].reshape(16, 16), m.reshape(16, 16).T)
    np.testing.assert_array_equal(after["z"].reshape(16, 16), m.reshape(16, 16))  # twice


def test_transpose_errors():
    def run(body, dtype=np.float16, soc="Ascend910B1"):
        return ub_run(body, dict(x=np.zeros(256, dtype), z=np.zeros(256, dtype),
                                 tmp=np.zeros(4096, np.uint8)), soc=soc)
    with pytest.raises(DtypeError, match="float32"):
        run(lambda t: Transpose(t["z"], t["x"]), dtype=np.float32)
    with pytest.raises(AlignmentError, match="32 B aligned"):
        run(lambda t: Transpose(t["z"][8], t["x"]))
    with pytest.raises(UbError, match="past the end"):
        run(lambda t: Transpose(t["z"][128], t["x"]))
    b16 = TransposeParamsExt(0, 0, 16, 16, TransposeType.TRANSPOSE_ND2ND_B16)
    with pytest.raises(DtypeError, match="float16"):              # uint16 only on A2/A3
        run(lambda t: Transpose(t["z"], t["x"], t["tmp"], b16))
    with pytest.raises(LimitError, match="hSize = wSize = 16"):
        run(lambda t: Transpose(t["z"], t["x"], t["tmp"], TransposeParamsExt(
            0, 0, 8, 32, TransposeType.TRANSPOSE_ND2ND_B16)), dtype=np.uint16)
    with pytest.raises(KernelError, match="needs a sharedTmpBuffer"):
        run(lambda t: Transpose(t["z"], t["x"], None, TransposeParamsExt(
            1, 1, 1, 16, TransposeType.TRANSPOSE_NCHW2NHWC)))
    nz = TransposeParamsExt(1, 16, 16, 16, TransposeType.TRANSPOSE_NZ2ND_0213)
    with pytest.raises(KernelError, match="TRANSPOSE_NZ2ND_0213 is not supported"):
        run(lambda t: Transpose(t["z"], t["x"], t["tmp"], nz))
    run(lambda t: Transpose(t["z"], t["x"]), soc="Ascend910A")     # every SoC has the 16 x 16


def test_transpose_type_none_does_nothing():
    none = TransposeParamsExt(1, 1, 16, 16, TransposeType.TRANSPOSE_TYPE_NONE)
    x = np.arange(256, dtype=np.float16)
    after, prof = ub_run(lambda t: Transpose(t["z"], t["x"], t["tmp"], none),
                         dict(x=x, z=np.full(256, 3, np.float16), tmp=np.zeros(32, np.uint8)))
    np.testing.assert_array_equal(after["z"], np.full(256, 3, np.float16))
    assert "Transpose" not in names(prof)


# -- Transpose NCHW <-> NHWC ----------------------------------------------------------------
def tmp_bytes(c, isz, to_nhwc):
    """The page's sharedTmpBuffer formula for A2/A3."""
    h0, w0 = (32 if isz == 1 else 16), 32 // isz
    return ((c + 2) if to_nhwc else (c * 2 + 1)) * h0 * w0 * isz


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from([np.int8, np.float16, np.float32, np.uint32]),
       n=st.integers(1, 3), c=st.integers(1, 5), h=st.integers(1, 4), to_nhwc=st.booleans())
def test_transpose_nchw_nhwc(dtype, n, c, h, to_nhwc):
    dtype = np.dtype(dtype)
    w = 32 // dtype.itemsize                # h * w * sizeof(T) a multiple of 32 B
    kind = TransposeType.TRANSPOSE_NCHW2NHWC if to_nhwc else TransposeType.TRANSPOSE_NHWC2NCHW
    shape = (n, c, h, w) if to_nhwc else (n, h, w, c)
    x = np.random.default_rng(n * 7 + c).integers(-100, 100, shape).astype(dtype)
    params = TransposeParamsExt(n, c, h, w, kind)
    after, prof = ub_run(lambda t: Transpose(t["z"], t["x"], t["tmp"], params),
                         dict(x=x.reshape(-1), z=np.zeros(x.size, dtype),
                              tmp=np.zeros(tmp_bytes(c, dtype.itemsize, to_nhwc), np.uint8)))
    want = np.transpose(x, (0, 2, 3, 1) if to_nhwc else (0, 3, 1, 2))   # the page's pseudocode
    np.testing.assert_array_equal(after["z"], want.reshape(-1))
    assert names(prof).count("Transpose.TransDataTo5HD") == 2


def test_transpose_nchw_limits():
    def run(params, tmp=4096, dtype=np.float16, z_at=0):
        return ub_run(lambda t: Transpose(t["x"][z_at] if z_at else t["z"], t["x"], t["tmp"],
                                          params),
                      dict(x=np.zeros(512, dtype), z=np.zeros(512, dtype),
                           tmp=np.zeros(tmp, np.uint8)))
    nhwc = TransposeType.TRANSPOSE_NCHW2NHWC
    with pytest.raises(AlignmentError, match="multiple of 32 B"):
        run(TransposeParamsExt(1, 2, 3, 5, nhwc))               # 15 halves a plane
    with pytest.raises(LimitError, match="cSize = 4096"):
        run(TransposeParamsExt(1, 4096, 1, 16, nhwc))
    with pytest.raises(LimitError, match="hSize \\* wSize = 4096"):
        run(TransposeParamsExt(1, 1, 64, 64, nhwc))
    with pytest.raises(UbError, match="needs 2048 B"):          # (2 + 2) * 16 * 16 * 2
        run(TransposeParamsExt(1, 2, 1, 16, nhwc), tmp=1024)
    with pytest.raises(UbError, match="same memory"):
        run(TransposeParamsExt(1, 2, 1, 16, nhwc), z_at=16)
    with pytest.raises(DtypeError, match="int64"):
        run(TransposeParamsExt(1, 2, 1, 16, nhwc), dtype=np.int64)
    run(TransposeParamsExt(0, 2, 1, 16, nhwc))                  # a zero size is a NOP


# -- TransDataTo5HD ------------------------------------------------------------------------
def ref_5hd(ub_src, ub_dst, src_addr, dst_addr, isz, repeat, s_rep, d_rep, s_high=False,
            d_high=False):
    """The page's block rules, element by element, on byte images of the UB."""
    out = ub_dst.copy()
    epb = 32 // isz
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32}[isz]
    src = ub_src.view(dt)
    dst = out.view(dt)
    for r in range(repeat):
        k = r if repeat > 1 else 1          # one repeat starts one RepStride on (page note)
        sblk = [(a + k * s_rep * 32) // isz for a in src_addr]
        dblk = [(a + k * d_rep * 32) // isz for a in dst_addr]
        for i in range(16):
            for e in range(epb):
                if isz == 2:                # dst block e, element i = src block i, element e
                    dst[dblk[e] + i] = src[sblk[i] + e]
                elif isz == 4:              # dst blocks 2e, 2e+1 = element e of src 0-7, 8-15
                    dst[dblk[2 * e + i // 8] + i % 8] = src[sblk[i] + e]
                elif e < 16:                # half blocks of 16 bytes
                    dst[dblk[e] + 16 * d_high + i] = src[sblk[i] + 16 * s_high + e]
    return out


@settings(max_examples=25, deadline=None)
@given(data=st.data(), dtype=st.sampled_from([np.float16, np.int32, np.uint8]),
       repeat=st.integers(0, 3), s_rep=st.integers(0, 2), d_rep=st.integers(0, 2),
       highs=st.tuples(st.booleans(), st.booleans()))
def test_trans_data_to_5hd_block_rules(data, dtype, repeat, s_rep, d_rep, highs):
    dtype = np.dtype(dtype)
    isz = dtype.itemsize
    epb = 32 // isz
    n_blocks = 64
    s_blocks = data.draw(st.permutations(range(40)))[:16]   # any 16 distinct source blocks
    d_blocks = data.draw(st.permutations(range(40)))[:16]
    src = np.random.default_rng(repeat).integers(0, 100, n_blocks * epb).astype(dtype)
    dst = np.full(n_blocks * epb, 7, dtype)
    params = TransDataTo5HDParams(highs[0], highs[1], repeat, d_rep, s_rep)

    def body(t):
        TransDataTo5HD([t["z"][b * epb] for b in d_blocks], [t["x"][b * epb] for b in s_blocks],
                       params)

    after, prof = ub_run(body, dict(x=src, z=dst))
    want = ref_5hd(src.view(np.uint8), dst.view(np.uint8), [b * 32 for b in s_blocks],
                   [b * 32 for b in d_blocks], isz, repeat, s_rep, d_rep, highs[1], highs[0])
    np.testing.assert_array_equal(after["z"].view(np.uint8), want)
    assert [r[2] for r in prof.records[0] if r[5] == "TransDataTo5HD"] == [HEAD + 2 * repeat]


def test_trans_data_to_5hd_nchw_to_nc1hwc0_page_scenario():
    """The page's scenario: half [2, 32, 16, 16] -> [2, 2, 16, 16, 16] with repeatTimes 16,
    dstRepStride 16, srcRepStride 1, address lists of H*W and C0 elements."""
    n, c, h, w, c0 = 2, 32, 16, 16, 16
    x = np.random.default_rng(5).standard_normal((n, c, h, w)).astype(np.float16)
    params = TransDataTo5HDParams(False, False, 16, 16, 1)

    def body(t):
        for loop in range(n * c // 16):
            src = [t["x"][loop * 16 * h * w + i * h * w].GetPhyAddr() for i in range(16)]
            dst = [t["z"][loop * 16 * h * w + i * c0].GetPhyAddr() for i in range(16)]
            TransDataTo5HD(dst, src, params, dtype=half)

    after, _ = ub_run(body, dict(x=x.reshape(-1), z=np.zeros(x.size, np.float16)))
    golden = x.reshape(n, c // c0, c0, h, w).transpose(0, 1, 3, 4, 2)   # gen_data.py scenario 3
    np.testing.assert_array_equal(after["z"], golden.reshape(-1))


def test_trans_data_to_5hd_b8_page_example_and_the_address_tensor_form():
    src = np.tile(np.arange(128, dtype=np.int8).reshape(4, 32), (4, 1))    # the page's input
    params = TransDataTo5HDParams(True, True, 1, 0, 0)

    def body(t):
        for i in range(16):
            t["da"].SetValue(i, t["z"][32 * i].GetPhyAddr())
            t["sa"].SetValue(i, t["x"][32 * i].GetPhyAddr())
        TransDataTo5HD(t["da"], t["sa"], params, dtype=int8_t)

    after, _ = ub_run(body, dict(x=src.reshape(-1), z=np.zeros(512, np.int8),
                                 da=np.zeros(16, np.uint64), sa=np.zeros(16, np.uint64)))
    out = after["z"].reshape(16, 32)
    np.testing.assert_array_equal(out[:, :16], 0)               # the low halves untouched
    np.testing.assert_array_equal(out[0, 16:], [16, 48, 80, 112] * 4)   # the page's row 0
    np.testing.assert_array_equal(out[:, 16:], src[:, 16:].T)


def test_trans_data_to_5hd_errors():
    def run(body, dtype=np.float16):
        return ub_run(body, dict(x=np.zeros(256, dtype), z=np.zeros(256, dtype)))
    p = TransDataTo5HDParams()
    with pytest.raises(KernelError, match="15 entries"):
        run(lambda t: TransDataTo5HD([t["z"]] * 15, [t["x"]] * 16, p))
    with pytest.raises(KernelError, match="dtype="):
        run(lambda t: TransDataTo5HD([t["z"].GetPhyAddr()] * 16, [t["x"].GetPhyAddr()] * 16, p))
    with pytest.raises(AlignmentError, match="not 32 B aligned"):
        run(lambda t: TransDataTo5HD([t["z"].GetPhyAddr() + 2] * 16,
                                     [t["x"].GetPhyAddr()] * 16, p, dtype=half))
    with pytest.raises(DtypeError, match="int64"):
        run(lambda t: TransDataTo5HD([t["z"]] * 16, [t["x"]] * 16, p), dtype=np.int64)
    with pytest.raises(UbError, match="past its buffer"):
        run(lambda t: TransDataTo5HD([t["z"][16 * i] for i in range(16)],
                                     [t["x"][16 * i] for i in range(16)],
                                     TransDataTo5HDParams(False, False, 2, 16, 16)))
    with pytest.raises(DtypeError, match="mix"):
        run(lambda t: TransDataTo5HD([t["z"]] * 16, [t["x"].ReinterpretCast(int16_t)] * 16, p))
    with pytest.raises(KernelError, match="uint64_t addresses"):
        run(lambda t: TransDataTo5HD(t["z"], t["x"], p, dtype=half))
    with pytest.raises(LimitError, match="repeatTime = 256"):
        run(lambda t: TransDataTo5HD([t["z"]] * 16, [t["x"]] * 16,
                                     TransDataTo5HDParams(False, False, 256, 0, 0)))
    with pytest.raises(UbError, match="overlap"):             # dst blocks are src blocks
        run(lambda t: TransDataTo5HD([t["x"][16 * i] for i in range(1, 16)] + [t["z"]],
                                     [t["x"][16 * i] for i in range(16)], p))
