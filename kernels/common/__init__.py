"""Machinery shared by several operators.

* :mod:`npusim.kernels.common.sorted_index` — the device sort of indices with their original
  positions (the ``Sort`` kernel that aclnnEmbeddingDenseBackward launches before
  EmbeddingDenseGradV2, and that FusedSparseAdam uses to merge duplicate indices), and the
  index range error both raise.
* :mod:`npusim.kernels.common.elementwise` — the small tiled kernels an aclnn graph puts around
  an operator: ZerosLike, ViewCopy, Cast (grad to float, indices to int32, results back
  to the output dtype) and Ascend C's InitOutput.
* :mod:`npusim.kernels.common.chain` — enqueueing the kernels of one aclnn call so that a
  failing kernel stops the ones after it, as a stream stops at an AI core exception.
* :mod:`npusim.kernels.common.row_walk` — the simulator's fast path for kernels that walk sorted
  rows one at a time (EmbeddingDenseGradV2): same state machine and fp32 order, batched
  instruction records.
"""
