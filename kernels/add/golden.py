"""Numpy golden of aclnnAdd, written from the documented formula.

Source: ``hicann/ops-math: math/add/docs/aclnnAdd&aclnnInplaceAdd_en.md``:
``out_i = self_i + alpha * other_i``, with ``self`` and ``other`` broadcast against each
other (numpy rules), their dtypes promoted (the "deduction relationship": PyTorch's type
promotion) and the result cast to ``out``'s dtype.

The golden computes floating results in float64 and rounds once to ``out``'s dtype;
integer results exactly (modulo 2**64, then wrapped to the promoted integer type, as the
device's integer arithmetic wraps); a BOOL result is ``self or (other and alpha)``. It does
not follow the kernel's order of operations or its rounding of alpha, so comparing the two
checks the kernel rather than repeating it.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

_BF16 = np.dtype(ml_dtypes.bfloat16)


def _is_float(dt: np.dtype) -> bool:
    return dt.kind in "fc" or dt == _BF16


def promote_types(a, b) -> np.dtype:
    """PyTorch's promotion of two dtypes (independent of the operator's table).

    A floating or complex type wins over bool and integers (``int32 + float16 -> float16``,
    unlike numpy); two integer/bool types promote as numpy does (``uint8 + int8 -> int16``);
    ``float16 + bfloat16 -> float32``.
    """
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    if _is_float(a) != _is_float(b):
        return a if _is_float(a) else b
    if {a, b} == {np.dtype(np.float16), _BF16}:
        return np.dtype(np.float32)
    if _BF16 in (a, b):
        other = b if a == _BF16 else a
        return np.result_type(other, np.float32)
    return np.result_type(a, b)


def add_golden(self, other, alpha, out_dtype=None):
    """Return ``self + alpha * other`` broadcast, promoted and cast to ``out_dtype``.

    Args:
        self, other: numpy arrays (any shapes that broadcast; bool, integer, float16,
            ml_dtypes.bfloat16, float32 ...). They are not modified.
        alpha: a Python or numpy number (bool or integer when the promoted type is an
            integer or bool type).
        out_dtype: the result dtype; default: the promoted dtype.

    Returns:
        A new array of the broadcast shape and ``out_dtype``.
    """
    self, other = np.asarray(self), np.asarray(other)
    promoted = promote_types(self.dtype, other.dtype)
    out_dtype = promoted if out_dtype is None else np.dtype(out_dtype)
    s, o = np.broadcast_arrays(self, other)
    if promoted == np.bool_:
        result = s.astype(bool) | (o.astype(bool) & bool(alpha))
    elif not _is_float(promoted):
        a = np.uint64(int(alpha) % 2**64)
        with np.errstate(over="ignore"):
            wide = s.astype(np.int64).astype(np.uint64) + a * o.astype(np.int64).astype(np.uint64)
        result = wide.astype(promoted)        # keeps the low bits: two's-complement wrap
    else:
        result = s.astype(np.float64) + float(alpha) * o.astype(np.float64)
    if out_dtype == _BF16 and result.dtype.kind in "iub":
        result = result.astype(np.float64)
    return result.astype(out_dtype)
