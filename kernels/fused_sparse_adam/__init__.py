"""FusedSparseAdam: Adam on a sparse gradient, duplicates merged on the device
(aclnnFusedSparseAdam, the project's two-phase API for MindSpore's ops.FusedSparseAdam).

* ``tiling.py`` — host: rows of var per core, UB tiles, float32 scalars.
* ``kernel.py`` — device: momentum over every row, the runs of the sorted indices summed
  and applied, the weight update over every row (MindSpore's order of operations).
* ``golden.py`` — numpy from the documented algorithm.

The indices are sorted with their positions by the shared Sort kernel
(:mod:`npusim.kernels.common.sorted_index`), as for aclnnEmbeddingDenseBackward.
"""
