"""Add: ``out = self + alpha * other`` (aclnnAdd / aclnnInplaceAdd), laid out like an Ascend
ops repository: ``tiling.py`` (host: recipe, Add tiling, BroadcastTo tiling), ``kernel.py``
(device: KernelAdd, KernelBroadcastTo), ``golden.py`` (numpy from the documented formula)."""
