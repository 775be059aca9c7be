"""A LocalTensor's ShapeInfo (SetShapeInfo/GetShapeInfo) and SoftMax reading it: without a
SoftMaxShapeInfo, the library takes the shape from the source tensor's ShapeInfo (last
dimension K, the others M; softmax_base_impl.h SoftMaxImpl) and recomputes the tiling for it,
so an empty SoftMaxTiling works. Checked against a float64 softmax over the original K."""
import numpy as np

from npusim.ascendc import *  # noqa: F403

from kernel_helpers import ub_run


def softmax64(x, ori_k):
    x = x.astype(np.float64)
    e = np.exp(x - x[:, :ori_k].max(axis=1, keepdims=True))
    return e / e[:, :ori_k].sum(axis=1, keepdims=True)


def test_shape_info_forms():
    s = ShapeInfo(3, [2, 4, 64])
    assert (s.shape, s.originalShape, s.dataFormat) == ((2, 4, 64), (2, 4, 64), DataFormat.ND)
    s = ShapeInfo(2, [8, 64], 2, [8, 60], DataFormat.ND)
    assert s.last_axis_nd() == (8, 64) and s.last_axis_nd(original=True) == (8, 60)
    assert ShapeInfo().last_axis_nd() == (0, 0)


def test_softmax_takes_the_shape_from_the_source_tensor():
    rng = np.random.default_rng(4)
    m, k, ori_k = 6, 64, 60
    x = (rng.random((m, k)) * 4).astype(np.float32)
    arrays = {"x": x, "y": np.zeros_like(x), "s": np.zeros((m, 8), np.float32),
              "mx": np.zeros((m, 8), np.float32), "tmp": np.zeros(8192, np.uint8)}

    def body(t):
        t["x"].SetShapeInfo(ShapeInfo(3, [2, 3, k], 3, [2, 3, ori_k]))     # M = 2 * 3
        assert t["x"].GetShapeInfo().last_axis_nd() == (m, k)
        SoftMax(t["y"], t["s"], t["mx"], t["x"], t["tmp"], SoftMaxTiling())

    after, _ = ub_run(body, arrays)
    y = after["y"].reshape(m, k)
    np.testing.assert_allclose(y[:, :ori_k], softmax64(x, ori_k)[:, :ori_k], rtol=1e-5)
    np.testing.assert_allclose(after["mx"][:, 0], x[:, :ori_k].max(axis=1))
