"""Host <-> device helpers for the operator tests (contiguous ND tensors)."""
import numpy as np

import aclnn
from aclnn import acl


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


def from_device(t, dtype):
    """The view of aclTensor ``t`` copied back to the host as ``dtype``."""
    n = int(np.prod(t.view_dims))
    out = np.zeros(n, dtype=dtype)
    if n:
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, t.tensor_data, out.nbytes,
                             aclnn.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return out.reshape(t.view_dims)
