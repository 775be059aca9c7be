"""Which implementation of an operator's kernel the aclnn operators launch: the Python kernel
(``npusim.kernels.<op>.kernel``, the default) or its C++ (Ascend C) twin, built by
:mod:`npusim.cpp` against the user's Ascend C headers (docs/cpp.md, "Our operators in C++").

    from aclnn import kernel_impl
    kernel_impl.set_kernel_impl("Add", "cpp")     # aclnnAdd now launches add_kernel.cpp

or, for a whole process, the environment variable ``NPUSIM_KERNEL_IMPL="Add=cpp"`` (entries
separated by commas; read when an operator plans its launch). Operators with a C++ kernel:
:data:`CPP_KERNELS`. Both implementations take the same tiling and give the same bytes; the
C++ one needs a C++ compiler and the headers (``NPUSIM_ASC_DEVKIT``), and its first build
takes tens of seconds (cached after).
"""
from __future__ import annotations

import os

#: Operators (aclnn op types) that have a C++ kernel, and what it covers.
CPP_KERNELS = {"Add": "npusim.kernels.add.cpp (FLOAT, FLOAT16, INT32, INT16 without casts)"}
IMPLS = ("python", "cpp")

_CHOSEN: dict = {}


def set_kernel_impl(op: str, impl: str | None) -> None:
    """Launch ``op``'s kernel as ``impl`` ("python" or "cpp"); None returns to the
    environment's choice (``NPUSIM_KERNEL_IMPL``), else "python".

    Raises:
        ValueError: ``op`` has no C++ kernel (:data:`CPP_KERNELS`), or ``impl`` is neither.
    """
    if impl is None:
        _CHOSEN.pop(op, None)
        return
    _check(op, impl, "set_kernel_impl")
    _CHOSEN[op] = impl


def kernel_impl(op: str) -> str:
    """"python" or "cpp": the implementation ``op``'s next launch uses (set_kernel_impl,
    else ``NPUSIM_KERNEL_IMPL``, else "python").

    Raises:
        ValueError: ``NPUSIM_KERNEL_IMPL`` names an implementation that is neither, or a C++
        kernel for an operator without one.
    """
    got = _CHOSEN.get(op)
    if got is not None:
        return got
    for entry in os.environ.get("NPUSIM_KERNEL_IMPL", "").split(","):
        name, _, impl = entry.partition("=")
        if name.strip() == op and impl.strip():
            _check(op, impl.strip(), "NPUSIM_KERNEL_IMPL")
            return impl.strip()
    return "python"


def _check(op: str, impl: str, where: str) -> None:
    if impl not in IMPLS:
        raise ValueError(f"{where}: implementation {impl!r} of {op}: use 'python' or 'cpp'")
    if impl == "cpp" and op not in CPP_KERNELS:
        raise ValueError(f"{where}: {op} has no C++ kernel (operators with one: "
                         f"{', '.join(CPP_KERNELS)})")
