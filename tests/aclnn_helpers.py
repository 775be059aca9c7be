"""Helpers for the operator tests: host <-> device copies (contiguous ND tensors), the
aclnn two-phase call, and running an example script's ``main`` on a fresh runtime."""
import importlib.util
import json
from pathlib import Path

import numpy as np

import aclnn
from aclnn import acl, runtime

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def init_runtime(tmp_path, soc="Ascend910B1", **npusim):
    """A fresh runtime: ``acl.init`` with an ``npusim`` section naming ``soc`` (plus any
    other keys given), no device set yet."""
    runtime.reset()
    cfg = tmp_path / "acl.json"
    cfg.write_text(json.dumps({"npusim": {"soc": soc, **npusim}}))
    assert acl.init(str(cfg)) == 0


def open_stream(tmp_path, soc="Ascend910B1"):
    """:func:`init_runtime`, ``set_device(0)`` and a new stream, which is returned."""
    init_runtime(tmp_path, soc)
    assert acl.rt.set_device(0) == 0
    s, ret = acl.rt.create_stream()
    assert ret == 0
    return s


def run_two_phase(stream, first, second, *args, expect_sync=0):
    """The aclnn two-phase call: ``first(*args)`` (the ...GetWorkspaceSize phase, which
    must return 0), a workspace from ``acl.rt.malloc`` when it asks for one, ``second`` on
    ``stream``, then the stream synchronised, which must return ``expect_sync``.
    Returns ``(workspace size, executor)``."""
    ws, ex, ret = first(*args)
    assert ret == 0, acl.get_recent_err_msg()
    wptr = 0
    if ws:
        wptr, ret = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0
    assert second(wptr, ws, ex, stream) == 0
    assert acl.rt.synchronize_stream(stream) == expect_sync, acl.get_recent_err_msg()
    return ws, ex


def to_device(arr, acl_dtype=None):
    """Copy ``arr`` into a new device buffer and describe it with an aclTensor."""
    arr = np.ascontiguousarray(arr)
    ptr, ret = acl.rt.malloc(max(arr.nbytes, 1), aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0
    if arr.nbytes:
        assert acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes,
                             aclnn.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    shape = list(arr.shape)
    strides = [int(s // arr.itemsize) for s in arr.strides] if arr.ndim else []
    dt = acl_dtype if acl_dtype is not None else aclnn.numpy_to_acl_dtype(arr.dtype)
    return aclnn.aclCreateTensor(shape, dt, strides, 0, aclnn.ACL_FORMAT_ND, shape, ptr)


def from_device(t, dtype=np.float32):
    """The view of aclTensor ``t`` copied back to the host as ``dtype``."""
    n = int(np.prod(t.view_dims))
    out = np.zeros(n, dtype=dtype)
    if n:
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, t.tensor_data, out.nbytes,
                             aclnn.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return out.reshape(t.view_dims)


def assert_unchanged(tensors, arrays):
    """Each device tensor still holds the host array it was made from (bit for bit)."""
    for t, a in zip(tensors, arrays):
        np.testing.assert_array_equal(from_device(t, a.dtype), a)


def load_example(name: str):
    """The module ``examples/<name>.py``, loaded (its ``main`` not run)."""
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_example(name: str, argv=()):
    """Load ``examples/<name>.py`` and return ``main(argv)``, on a runtime reset before and
    after."""
    module = load_example(name)
    runtime.reset()
    try:
        return module.main(list(argv))
    finally:
        runtime.reset()
