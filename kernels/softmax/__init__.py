"""Softmax: ``out = exp(x - max) / sum(exp(x - max))`` along one dim (aclnnSoftmax, the l0
``SoftmaxV2``), laid out like an Ascend ops repository: ``tiling.py`` (host: the fused
[A1, R, A0] view and the four SoftmaxV2 templates), ``kernel.py`` (device: KernelSoftmaxAR,
KernelSoftmaxARA), ``golden.py`` (numpy from the documented formula)."""
