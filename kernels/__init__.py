"""Operators of npusim, one package per operator, laid out like an Ascend ops repository.

Each package holds ``tiling.py`` (host: SoC + shapes + attributes -> TilingData),
``kernel.py`` (device: per-core code that reads like the Ascend C kernel) and
``golden.py`` (a numpy reference written from the documented formula, independent of
the kernel).
"""
