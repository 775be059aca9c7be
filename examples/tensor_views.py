"""aclTensor views, strides and offsets, events and the profile of a launch.

A teaching example for ``docs/tutorial.md``. One device buffer holds a {2, 4} float
matrix; an aclTensor describes its transpose as a {4, 2} *view* with strides {1, 4}
(the transpose example of docs/reference/api.md §2), and another view starts at an element
offset. aclnnAdd reads the transposed view (the operator gathers strided inputs itself),
the launch is timed with two events, and its msprof-style profile is printed.

Run: ``python examples/tensor_views.py``
"""
from __future__ import annotations

import sys

import numpy as np

import aclnn
from aclnn import acl, runtime


def check(ret, what):
    if ret != aclnn.ACL_SUCCESS:
        raise RuntimeError(f"{what} failed. ERROR: {ret}\n{acl.get_recent_err_msg()}")


def main(argv=None):
    check(acl.init(), "aclInit")
    check(acl.rt.set_device(0), "aclrtSetDevice")
    stream, ret = acl.rt.create_stream()
    check(ret, "aclrtCreateStream")

    # One storage of 8 floats: the {2, 4} matrix 0..7, row-major.
    storage = np.arange(8, dtype=np.float32)
    base, ret = acl.rt.malloc(storage.nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    check(ret, "aclrtMalloc")
    check(acl.rt.memcpy(base, storage.nbytes, acl.util.numpy_to_ptr(storage), storage.nbytes,
                        aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")

    # The transpose as a view: shape {4, 2}, strides {1, 4} (in elements), offset 0,
    # over the storage shape {2, 4}; no data moves.
    transposed = aclnn.aclCreateTensor([4, 2], aclnn.ACL_FLOAT, [1, 4], 0, aclnn.ACL_FORMAT_ND,
                                       [2, 4], base)
    # The second row alone: shape {4}, stride {1}, starting 4 elements into the storage.
    row1 = aclnn.aclCreateTensor([4], aclnn.ACL_FLOAT, [1], 4, aclnn.ACL_FORMAT_ND, [8], base)
    print("transposed contiguous?", transposed.is_contiguous(), "| row1 starts at element",
          row1.offset)

    ones_host = np.ones(8, dtype=np.float32)
    ones, _ = acl.rt.malloc(ones_host.nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    check(acl.rt.memcpy(ones, 32, acl.util.numpy_to_ptr(ones_host), 32,
                        aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy")
    other = aclnn.aclCreateTensor([4, 2], aclnn.ACL_FLOAT, [2, 1], 0, aclnn.ACL_FORMAT_ND,
                                  [4, 2], ones)
    out_ptr, _ = acl.rt.malloc(32, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    out = aclnn.aclCreateTensor([4, 2], aclnn.ACL_FLOAT, [2, 1], 0, aclnn.ACL_FORMAT_ND,
                                [4, 2], out_ptr)
    alpha = aclnn.aclCreateScalar(1.0, aclnn.ACL_FLOAT)

    # Time the launch on the device clock with two events on the same stream.
    start, _ = acl.rt.create_event()
    end, _ = acl.rt.create_event()
    check(acl.rt.record_event(start, stream), "aclrtRecordEvent")
    workspace_size, executor, ret = aclnn.aclnnAddGetWorkspaceSize(transposed, other, alpha, out)
    check(ret, "aclnnAddGetWorkspaceSize")
    workspace = 0
    if workspace_size > 0:      # the gather of the strided input needs scratch memory
        workspace, ret = acl.rt.malloc(workspace_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "aclrtMalloc workspace")
    check(aclnn.aclnnAdd(workspace, workspace_size, executor, stream), "aclnnAdd")
    check(acl.rt.record_event(end, stream), "aclrtRecordEvent")
    check(acl.rt.synchronize_stream(stream), "aclrtSynchronizeStream")
    ms, ret = acl.rt.event_elapsed_time(start, end)
    check(ret, "aclrtEventElapsedTime")

    result = np.zeros(8, dtype=np.float32)
    check(acl.rt.memcpy(acl.util.numpy_to_ptr(result), 32, out_ptr, 32,
                        aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy")
    print("transpose + 1 =", result.reshape(4, 2).tolist())
    print(f"workspace {workspace_size} B, elapsed {ms * 1000:.2f} us between the events")

    # Every launch leaves a profile on the device: Task Duration, pipe times, bandwidth.
    for profile in runtime.current_device().profiles:
        print(profile.summary())

    for t in (transposed, row1, other, out):
        aclnn.aclDestroyTensor(t)
    aclnn.aclDestroyScalar(alpha)
    for ptr in (base, ones, out_ptr) + ((workspace,) if workspace else ()):
        acl.rt.free(ptr)
    for ev in (start, end):
        acl.rt.destroy_event(ev)
    acl.rt.destroy_stream(stream)
    acl.rt.reset_device(0)
    acl.finalize()
    return result.reshape(4, 2)


if __name__ == "__main__":
    main()
    sys.exit(0)
