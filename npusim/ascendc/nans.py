"""One NaN per float type: what a simulated instruction writes wherever its result is NaN.

Rule [R: the hardware's NaN encoding is not published; this is the simulator's choice].
Every float result an arithmetic or conversion instruction writes (float32, half,
bfloat16) has its NaNs replaced by the one positive quiet NaN of its type:

=========  ==========
float32    0x7FC00000
half       0x7E00
bfloat16   0x7FC0
=========  ==========

Why. The NaN the host's floating-point unit makes for an invalid operation (``inf - inf``,
``0 * inf``, ``0 / 0``, ``sqrt(-1)``) is negative on x86-64 (the SSE "default NaN"
0xFFC00000) and positive on arm64 (0x7FC00000); when two NaNs meet, which one's sign and
payload survive can depend on the operand order of the SIMD kernel numpy picks; and a
float32 -> half conversion of a NaN's payload may differ between numpy's software path and
F16C. A simulated device gives the same bytes on every host, so its instructions write one
NaN whatever the host made.

Where. The instructions' shared runners apply :func:`canonical` to the array they write
(:func:`npusim.ascendc.vector._compute`, which every element-wise arithmetic instruction of
:mod:`~npusim.ascendc.vector` and :mod:`~npusim.ascendc.arith` goes through, in both forms
and in lockstep groups; Cast; the reductions of :mod:`~npusim.ascendc.reduce`; Mmad's
result; Fixpipe's conversions; atomic adds into GM; the simulator's fast paths that stand
for such instructions). Data movement keeps bytes as they are: DataCopy, Copy, DataCopyPad,
Gather, Brcb, Transpose, Select, Sort, Duplicate (a fill with its scalar converted to T),
GetValue/SetValue, and Fixpipe without a conversion or ReLU, move a NaN's sign and payload
unchanged. :mod:`npusim.ascendc.portable_math` (Exp, Ln, Power) already gives the positive
quiet NaN. Integer results are never touched.

Cost: one read of the result (for float32 arrays of 4096 elements or more its minimum, NaN
if any element is; else ``isnan``), and, only when there is a NaN, an ``isnan`` pass and a
write of the NaN lanes. The read is memory-bound: on ApplyFusedEmaAdam fp32 2^22 (a
lockstep group's [G, 6128] results, ~550 per launch) it is about half the time of the
element-wise operation it follows and ~8% of the launch's host time on a loaded 2-core
host (benchmarks/bench_nan_overhead.py).
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

__all__ = ["CANONICAL_BITS", "canonical", "canonical_scalar"]

_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)

#: the canonical NaN's bits by float dtype
CANONICAL_BITS = {np.dtype(np.float32): 0x7FC00000, np.dtype(np.float16): 0x7E00, _BF16: 0x7FC0}
#: (unsigned type of the same width, the canonical bits in it) by float dtype
_RAW = {dt: (np.dtype(f"u{dt.itemsize}"), np.dtype(f"u{dt.itemsize}").type(bits))
        for dt, bits in CANONICAL_BITS.items()}


#: float32 results from this many elements on are probed first (:func:`canonical`)
PROBE_FROM = 4096


def canonical(out: np.ndarray) -> np.ndarray:
    """Replace, in place, every NaN of the float32/half/bfloat16 array ``out`` by its
    type's canonical NaN (module docstring); other dtypes are returned untouched. The
    NaN lanes are written through an unsigned view, so no float conversion is involved.
    Returns ``out``.

    A float32 array of :data:`PROBE_FROM` elements or more is probed first by its minimum
    (NaN if any element is NaN; one read, no mask written: faster than ``isnan`` on a
    lockstep group's [G, n] rows); only a NaN minimum costs the exact pass."""
    raw = _RAW.get(out.dtype)
    if raw is None:
        return out
    if out.dtype == _F32 and out.size >= PROBE_FROM and \
            not math.isnan(np.minimum.reduce(out, axis=None)):
        return out
    nan = np.isnan(out)
    if nan.any():
        out.view(raw[0])[nan] = raw[1]
    return out


def canonical_scalar(x):
    """A float32/half/bfloat16 numpy scalar, NaN -> its type's canonical NaN (others as
    they are)."""
    raw = _RAW.get(getattr(x, "dtype", None))
    if raw is None or not np.isnan(x):
        return x
    return np.asarray(raw[1]).view(x.dtype)[()]
