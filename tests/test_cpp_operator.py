"""aclnnAdd with its C++ (Ascend C) kernel, kernels/add/add_kernel.cpp, against its Python
kernel: the same operator, tiling and launch, the same output bytes, and Task Durations
within 0.5 % of each other (both lower onto the same engine; the C++ kernel also issues the
headers' mask-register writes on the scalar pipe: 5.381 against 5.380 us for 100 003 fp32).

Needs a C++ compiler and asc-devkit's headers (test_cpp.py's rules); skips saying which is
missing otherwise. The first run builds the kernel (about 20-60 s, cached)."""
from __future__ import annotations

import numpy as np
import pytest

import aclnn
from aclnn import acl, kernel_impl, runtime
from aclnn.ops.add import aclnnAdd, aclnnAddGetWorkspaceSize
from npusim.kernels.add import cpp as add_cpp
from npusim.kernels.add import tiling as add_tiling

from aclnn_helpers import from_device, run_two_phase, to_device
from test_cpp import require_devkit

#: Task Durations of the two kernels agree within this fraction
TASK_BOUND = 0.005


@pytest.fixture
def devkit(monkeypatch):
    d = require_devkit()
    monkeypatch.setenv("NPUSIM_ASC_DEVKIT", str(d))
    yield d
    kernel_impl.set_kernel_impl("Add", None)


def _add(stream, impl, a, b, alpha, alpha_dtype):
    kernel_impl.set_kernel_impl("Add", impl)
    out = to_device(np.zeros(np.broadcast_shapes(a.shape, b.shape), a.dtype))
    _, ex = run_two_phase(stream, aclnnAddGetWorkspaceSize, aclnnAdd, to_device(a),
                          to_device(b), aclnn.aclCreateScalar(alpha, alpha_dtype), out)
    prof = runtime.current_device().profiles[-1]
    return from_device(out, a.dtype), prof, ex.kernel_impl


@pytest.mark.parametrize("dtype,n,alpha,alpha_dtype", [
    (np.float32, 20_003, 1.5, aclnn.ACL_FLOAT),       # Axpy: Muls then Add; a ragged tail
    (np.float16, 4099, 1.0, aclnn.ACL_FLOAT),         # Add
    (np.int16, 5000, -2, aclnn.ACL_INT32),            # Mul+Add, wrapping int16
])
def test_cpp_kernel_matches_the_python_kernel(devkit, stream, dtype, n, alpha, alpha_dtype):
    rng = np.random.default_rng(7)
    a = (rng.standard_normal(n) * 300).astype(dtype)
    b = (rng.standard_normal(n) * 300).astype(dtype)
    py, py_prof, py_impl = _add(stream, "python", a, b, alpha, alpha_dtype)
    cc, cc_prof, cc_impl = _add(stream, "cpp", a, b, alpha, alpha_dtype)
    assert (py_impl, cc_impl) == ("python", "cpp")
    assert cc.tobytes() == py.tobytes()
    assert cc_prof.block_dim == py_prof.block_dim > 1
    assert cc_prof.bytes_read == py_prof.bytes_read and cc_prof.bytes_written == py_prof.bytes_written
    assert abs(cc_prof.duration_us - py_prof.duration_us) <= TASK_BOUND * py_prof.duration_us, \
        (cc_prof.duration_us, py_prof.duration_us)


def test_uncovered_recipes_run_the_python_kernel(devkit, stream):
    """bf16 computes in fp32 through Casts, which the C++ kernel does not do."""
    a = np.arange(64, dtype=np.float32).astype(add_tiling.BF16)
    got, _, impl = _add(stream, "cpp", a, a, 1.0, aclnn.ACL_FLOAT)
    assert impl == "python"
    assert np.array_equal(got.astype(np.float32), 2 * np.arange(64, dtype=np.float32))


def test_tiling_bytes_follow_the_struct():
    td = add_tiling.tiling(_soc(), 1000, np.float16, np.float16, np.float16, alpha=np.float32(0.5))
    raw = add_cpp.tiling_bytes(td)
    fields = np.frombuffer(raw, "<u4")
    assert len(raw) == 32
    assert list(fields[:5]) == [td.totalLength, td.blockFactor, td.tailBlockFactor, td.ubFactor,
                                td.blockDim]
    assert fields[5] == 1 and fields[6] == 1 and fields[7] == 0x3800        # half 0.5
    bf = add_tiling.tiling(_soc(), 1000, add_tiling.BF16, add_tiling.BF16, add_tiling.BF16)
    assert not add_cpp.covers(bf)
    with pytest.raises(ValueError, match="does not compute"):
        add_cpp.tiling_bytes(bf)


def test_kernel_impl_choice(monkeypatch):
    monkeypatch.delenv("NPUSIM_KERNEL_IMPL", raising=False)
    assert kernel_impl.kernel_impl("Add") == "python"
    monkeypatch.setenv("NPUSIM_KERNEL_IMPL", "Softmax=python, Add=cpp")
    assert kernel_impl.kernel_impl("Add") == "cpp"
    kernel_impl.set_kernel_impl("Add", "python")          # the call wins over the environment
    assert kernel_impl.kernel_impl("Add") == "python"
    kernel_impl.set_kernel_impl("Add", None)
    assert kernel_impl.kernel_impl("Add") == "cpp"
    with pytest.raises(ValueError, match="Softmax has no C\\+\\+ kernel"):
        kernel_impl.set_kernel_impl("Softmax", "cpp")
    with pytest.raises(ValueError, match="'rust'"):
        kernel_impl.set_kernel_impl("Add", "rust")
    monkeypatch.setenv("NPUSIM_KERNEL_IMPL", "Add=fortran")
    with pytest.raises(ValueError, match="NPUSIM_KERNEL_IMPL"):
        kernel_impl.kernel_impl("Add")


def _soc():
    from npusim.soc import get_soc
    return get_soc("Ascend910B1")


class _CppAddTiling:
    """The Add tiling for a CustomOp of the C++ kernel: ``blockDim`` for the launch, and
    ``__bytes__`` the C struct the kernel's ``GM_ADDR tiling`` points to."""

    def __init__(self, td):
        self.td, self.blockDim, self.workspaceSize = td, td.blockDim, 0

    def __bytes__(self):
        return add_cpp.tiling_bytes(self.td)


def test_a_cpp_kernel_is_a_custom_aclnn_operator(devkit, stream):
    """npusim.cpp's kernel as the ``kernel`` of a CustomOp: the generated two-phase API runs
    it with the tiling object packed as its C struct; the result is numpy's x + 0.5 y."""
    from aclnn.custom import CustomOp

    def tiling(soc, shapes, dtypes, attrs):
        n = int(np.prod(shapes["x"]))
        dt = dtypes["x"]
        return _CppAddTiling(add_tiling.tiling(soc, n, dt, dt, dt, alpha=np.float32(attrs["alpha"])))

    op = CustomOp("AddCpp", kernel=add_cpp.kernel(), tiling=tiling, inputs=("x", "y"),
                  outputs=("z",), attrs=("alpha",), dtypes=("float32",))
    get_ws, run = op.aclnn_api()
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal(10_007).astype(np.float32), rng.standard_normal(10_007).astype(np.float32)
    z = to_device(np.zeros_like(x))
    ws, ex, ret = get_ws(to_device(x), to_device(y), 0.5, z)
    assert ret == 0, acl.get_recent_err_msg()
    assert run(0, ws, ex, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
    got = from_device(z, np.float32)
    want = x + np.float32(0.5) * y                     # Muls then Add, each rounded to fp32
    assert got.tobytes() == want.tobytes()
    assert runtime.current_device().profiles[-1].block_dim > 1
