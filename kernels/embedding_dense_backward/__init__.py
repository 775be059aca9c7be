"""EmbeddingDenseBackward: the gradient of an embedding lookup (aclnnEmbeddingDenseBackward).

* ``tiling.py`` — host: routing (V2 / V1, casts, small-dim), the documented A2 caveats, the
  EmbeddingDenseGradV2 tiling and the Atlas training tiling with its embeddingDim bound.
* ``kernel_v2.py`` — device, Atlas A2/A3: the EmbeddingDenseGradV2 kernels (sorted rows with
  ping-pong accumulators, deterministic, small-dim, scale pass, fp16/bf16 staging).
* ``kernel_910.py`` — device, Atlas training: the TBE algorithm (rows of out per core, counts
  in UB, two passes over the indices).
* ``golden.py`` — numpy from the documented PyTorch formula.

The device sort of the indices is shared machinery: :mod:`npusim.kernels.common.sorted_index`.
"""
