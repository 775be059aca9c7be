"""ApplyAddSign: the AddSign optimizer update of var and m (MindSpore ``ops.ApplyAddSign``,
Ascend op ``ApplyAddSignD``), as a tiled Ascend C style elementwise kernel.

``tiling.py`` (host), ``kernel.py`` (device), ``golden.py`` (numpy from the documented
formula); docs/reference/operators.md §3.
"""
