"""RmsNorm: ``y = x * rstd * gamma``, ``rstd = 1 / sqrt(mean(x^2) + epsilon)`` over the last
dims gamma covers (aclnnRmsNorm), laid out like an Ascend ops repository: ``tiling.py``
(host: the RmsNorm tiling of ops-nn, its MERGE_N / NORMAL / SPLIT_D modes), ``kernel.py``
(device: KernelRmsNorm), ``golden.py`` (numpy from the documented formula)."""
