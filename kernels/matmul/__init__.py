"""MatMul: ``C = A @ B`` on the cube unit (aclnnMatmul / aclnnMm / aclnnBatchMatMul, the l0
``MatMulV3`` / ``BatchMatMulV3``), laid out like an Ascend ops repository: ``tiling.py``
(host: base blocks, L1 depths, the split over the AICs), ``kernel.py`` (device: a cube-only
kernel GM -> L1 (ND -> NZ) -> L0A/L0B -> Mmad -> Fixpipe, double-buffered), ``golden.py``
(numpy from the formula in float64, rounded once to the output dtype)."""
