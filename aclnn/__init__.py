"""aclnn: the host API of the simulated Ascend NPU.

It follows CANN's aclnn two-phase operator API and pyACL's Python conventions (values
first, status last; pointers, streams and events are ints)::

    import aclnn
    from aclnn import acl

    ret = acl.init()
    ret = acl.rt.set_device(0)
    stream, ret = acl.rt.create_stream()
    ptr, ret = acl.rt.malloc(nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    t = aclnn.aclCreateTensor(shape, aclnn.ACL_FLOAT, strides, 0, aclnn.ACL_FORMAT_ND, shape, ptr)
    workspaceSize, executor, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(...)
    ret = aclnn.aclnnApplyFusedEmaAdam(workspace, workspaceSize, executor, stream)
    ret = acl.rt.synchronize_stream(stream)

Every constant (``aclnn.ACL_FLOAT``, ``aclnn.ACL_FORMAT_ND``, ``aclnn.ACLNN_SUCCESS``,
``aclnn.ACL_MEM_MALLOC_HUGE_FIRST``, ``aclnn.ACL_MEMCPY_HOST_TO_DEVICE``, ...) is importable
from here. Sources: ``docs/reference/api.md``.
"""
from aclnn import acl  # noqa: F401  (pyACL-style runtime: acl.init, acl.rt.*, acl.util.*)
from aclnn.constants import *  # noqa: F401,F403
from aclnn.constants import __all__ as _constants_all
from aclnn.errmsg import get_recent_err_msg as aclGetRecentErrMsg
from aclnn.executor import (aclDestroyAclOpExecutor, aclOpExecutor, aclSetAclOpExecutorRepeatable,
                            aclSetInputTensorAddr, aclSetOutputTensorAddr)
from aclnn import optim  # noqa: F401  (AdamOffload)
from aclnn.ops.add import (aclnnAdd, aclnnAddGetWorkspaceSize, aclnnInplaceAdd,
                           aclnnInplaceAddGetWorkspaceSize)
from aclnn.ops.apply_add_sign import aclnnApplyAddSign, aclnnApplyAddSignGetWorkspaceSize
from aclnn.ops.apply_fused_ema_adam import (aclnnApplyFusedEmaAdam,
                                            aclnnApplyFusedEmaAdamGetWorkspaceSize)
from aclnn.ops.embedding_dense_backward import (PrecisionCaveatWarning,
                                                aclnnEmbeddingDenseBackward,
                                                aclnnEmbeddingDenseBackwardGetWorkspaceSize)
from aclnn.ops.fused_sparse_adam import aclnnFusedSparseAdam, aclnnFusedSparseAdamGetWorkspaceSize
from aclnn.ops.matmul import (aclnnBatchMatMul, aclnnBatchMatMulGetWorkspaceSize, aclnnMatmul,
                              aclnnMatmulGetWorkspaceSize, aclnnMm, aclnnMmGetWorkspaceSize)
from aclnn.ops.rms_norm import aclnnRmsNorm, aclnnRmsNormGetWorkspaceSize
from aclnn.ops.softmax import aclnnSoftmax, aclnnSoftmaxGetWorkspaceSize
from aclnn.tensor import *  # noqa: F401,F403
from aclnn.tensor import __all__ as _tensor_all

__all__ = list(_constants_all) + list(_tensor_all) + [
    "acl", "aclGetRecentErrMsg", "aclDestroyAclOpExecutor", "aclOpExecutor",
    "aclSetAclOpExecutorRepeatable", "aclSetInputTensorAddr", "aclSetOutputTensorAddr",
    "aclnnApplyFusedEmaAdam", "aclnnApplyFusedEmaAdamGetWorkspaceSize",
    "aclnnAdd", "aclnnAddGetWorkspaceSize", "aclnnInplaceAdd", "aclnnInplaceAddGetWorkspaceSize",
    "aclnnApplyAddSign", "aclnnApplyAddSignGetWorkspaceSize", "optim",
    "aclnnEmbeddingDenseBackward", "aclnnEmbeddingDenseBackwardGetWorkspaceSize",
    "PrecisionCaveatWarning", "aclnnFusedSparseAdam", "aclnnFusedSparseAdamGetWorkspaceSize",
    "aclnnSoftmax", "aclnnSoftmaxGetWorkspaceSize", "aclnnRmsNorm", "aclnnRmsNormGetWorkspaceSize",
    "aclnnMatmul", "aclnnMatmulGetWorkspaceSize", "aclnnMm", "aclnnMmGetWorkspaceSize",
    "aclnnBatchMatMul", "aclnnBatchMatMulGetWorkspaceSize",
]
