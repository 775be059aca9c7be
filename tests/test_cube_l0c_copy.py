"""DataCopy out of L0C with DataCopyCO12DstParams and the Fixpipe registers
(SetFixpipeNz2ndFlag, SetFixpipePreQuantFlag, SetFixPipeConfig with a table copied to the
Fixpipe buffer), as the data_copy_l0c2gm sample uses them: the results against numpy."""
import numpy as np
import pytest

from npusim import KernelError
from npusim.ascendc import *  # noqa: F403
from tests.test_cube_layouts import aic_run, gm_tensor, sync

M, N, K = 32, 48, 32


def scale_bits(s: np.ndarray) -> np.ndarray:
    """uint64 quantisation words holding float scales in bits [31:13] (Fixpipe.md)."""
    return np.asarray(s, np.float32).view(np.uint32).astype(np.uint64)


def product_kernel(dtype, out_dtype, copy_out):
    """C = A @ B into L0C (A, B through L1 and Load3Dv2 / Load2D), then ``copy_out(addr,
    c1)``."""
    acc = np.int32 if dtype == np.int8 else np.float32

    def kernel(addr):
        c0 = 32 // np.dtype(dtype).itemsize
        a1 = LocalTensor.at(dtype, TPosition.A1, 0, M * K)
        b1 = LocalTensor.at(dtype, TPosition.B1, 8192, K * N)
        a2 = LocalTensor.at(dtype, TPosition.A2, 0, M * K)
        b2 = LocalTensor.at(dtype, TPosition.B2, 0, K * N)
        c1 = LocalTensor.at(acc, TPosition.CO1, 0, M * N)
        DataCopy(a1, gm_tensor(dtype, addr["a"], M * K), Nd2NzParams(1, M, K, 0, K, M, 1, 0))
        # B kept n x k (B^T), so its NZ fractals load into L0B's ZN by plain Load2D
        DataCopy(b1, gm_tensor(dtype, addr["bt"], K * N), Nd2NzParams(1, N, K, 0, K, N, 1, 0))
        sync(HardEvent.MTE2_MTE1)
        LoadData(a2, a1, LoadData3DParamsV2(l1H=1, l1W=M, channelSize=K, kExtension=K,
                                            mExtension=M))
        for i in range(K // c0):                  # one row of k fractals of B per LoadData
            LoadData(b2[i * (N // 16) * 16 * c0], b1[i * N * c0],
                     LoadData2DParams(0, N // 16, 1, 0, 0, False, 0))
        sync(HardEvent.MTE1_M)
        Mmad(c1, a2, b2, MmadParams(M, N, K, 0, False, True))
        sync(HardEvent.M_FIX)
        copy_out(addr, c1)

    return kernel


def run(dtype, out_dtype, copy_out, extra=None):
    rng = np.random.default_rng(5)
    a = rng.integers(-8, 8, (M, K)).astype(dtype)
    b = rng.integers(-8, 8, (K, N)).astype(dtype)
    inputs = {"a": a, "bt": np.ascontiguousarray(b.T), **(extra or {})}
    got, _ = aic_run(product_kernel(dtype, out_dtype, copy_out), inputs,
                     {"c": (M * N, out_dtype)})
    return got["c"], a.astype(np.int64) @ b.astype(np.int64)


def test_nz2nd_with_scalar_half_conversion_and_relu():
    def out(addr, c1):
        SetFixpipeNz2ndFlag(1, 0, 0)
        DataCopy(gm_tensor(half, addr["c"], M * N), c1,
                 DataCopyCO12DstParams(N, M, N, M, QuantMode_t.F322F16, 1, False, True))

    got, exact = run(np.float16, np.float16, out)
    np.testing.assert_array_equal(got.reshape(M, N), np.maximum(exact, 0).astype(np.float16))


def test_nz_output_and_a_per_column_table_in_the_fixpipe_buffer():
    """int8 x int8 -> int32, VDEQF16 with one scale per column from the Fixpipe buffer
    (L1 -> C2PIPE2GM by DataCopy, blockLen in 128 B), NZ output (dstStride: 32 B blocks
    between column blocks)."""
    scales = (2.0 ** np.arange(-3, 3))[np.arange(N) % 6].astype(np.float32)

    def out(addr, c1):
        table1 = LocalTensor.at(uint64_t, TPosition.C1, 65536, N)
        fb = LocalTensor.at(uint64_t, TPosition.C2PIPE2GM, 0, N)
        DataCopy(table1, gm_tensor(uint64_t, addr["scales"], N), N)
        sync(HardEvent.MTE2_FIX)
        DataCopy(fb, table1, DataCopyParams(1, -(-N * 8 // 128), 0, 0))
        SetFixPipeConfig(fb)
        DataCopy(gm_tensor(half, addr["c"], M * N), c1,
                 DataCopyCO12DstParams(N, M, M, M, QuantMode_t.VDEQF16, 0, False, False))

    got, exact = run(np.int8, np.float16, out, {"scales": scale_bits(scales)})
    want = (exact * scales).astype(np.float16)                       # M x N
    nz = got.reshape(N // 16, M, 16)                                 # column block, row, col
    np.testing.assert_array_equal(nz.transpose(1, 0, 2).reshape(M, N), want)


def test_register_form_rules():
    def no_table(addr, c1):
        DataCopy(gm_tensor(half, addr["c"], M * N), c1,
                 DataCopyCO12DstParams(N, M, M, M, QuantMode_t.VDEQF16))
    with pytest.raises(KernelError, match="copy it there .* SetFixPipeConfig first"):
        run(np.int8, np.float16, no_table)

    def split(addr, c1):
        DataCopy(gm_tensor(float32, addr["c"], M * N), c1,
                 DataCopyCO12DstParams(N, M, N, M, QuantMode_t.NoQuant, 0, True, True))
    with pytest.raises(KernelError, match="isChannelSplit splits float NZ output"):
        run(np.float16, np.float32, split)


def test_channel_split_writes_float_nz_in_16_by_8_fractals():
    """channelSplit (Fixpipe's f32 channel split): each 16 x 16 float fractal of L0C leaves
    as two 16 x 8 ones; column block j (8 columns, rows of 32 B) at j * dstStride 32 B
    blocks, here packed (dstStride = M)."""
    def out(addr, c1):
        DataCopy(gm_tensor(float32, addr["c"], M * N), c1,
                 DataCopyCO12DstParams(N, M, M, M, QuantMode_t.NoQuant, 0, True, False))

    got, exact = run(np.float16, np.float32, out)
    nz = got.reshape(N // 8, M, 8)                                   # column block, row, col
    np.testing.assert_array_equal(nz.transpose(1, 0, 2).reshape(M, N), exact.astype(np.float32))
