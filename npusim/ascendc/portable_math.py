"""exp, ln and pow for the simulated vector unit: the same bytes on every host.

Why. numpy's exp/log/power loops (float16, float32, and float64 on AVX-512) take a SIMD
path chosen by the host CPU at run time (AVX-512 SVML, AVX2/FMA3, NEON or baseline code),
and the paths differ in the last bit of some results. A simulated device must not: the
Exp, Ln and Power instructions (:mod:`npusim.ascendc.vector`) use this module instead.

How. Every function is computed in float64 from operations IEEE 754 defines as correctly
rounded (``+ - * /``, ``rint``, comparisons) and from integer bit operations on the
float64 encoding; every numpy build and CPU gives these bit for bit, so the float64 value
is a pure function of the input. The instruction then rounds it once to its dtype (float
or half; numpy's float64 -> float32/float16 casts round to nearest even directly).
numpy's own exp/log/power (any dtype), ``np.ldexp``/``np.frexp`` and Python's ``math``
are not used.

Algorithms (the classic ones of fdlibm's e_exp.c/e_log.c, with Taylor coefficients):

* :func:`exp64`: ``x = k ln2 + r``, ``k = rint(x / ln2)``, ``|r| <= ln2 / 2``, with
  ln2 split Cody-Waite style into :data:`LN2_HI` (32 significant bits, so ``k * LN2_HI``
  is exact) and :data:`LN2_LO`; ``exp(r)`` by its Taylor series to degree 13 (truncation
  below 4e-18 relative) in Horner form; ``2**k`` applied as two exact powers of two built
  from their bits (one rounding, only if the result is subnormal or overflows).
* :func:`log64`: ``x = 2**e * m`` from the encoding, ``m`` in ``[sqrt(2)/2, sqrt(2))``,
  ``f = m - 1`` (exact), ``s = f / (2 + f)``; ``ln(1 + f) = 2 atanh(s) = f - (hfsq -
  s (hfsq + R))`` with ``hfsq = f*f/2`` and ``R = sum_{n=1..10} 2 s**(2n) / (2n+1)``
  (truncation below 1e-17 relative); ``ln x = e LN2_HI - ((hfsq - (s (hfsq + R) +
  e LN2_LO)) - f)``. Float64 subnormals are scaled by 2**54 first.
* :func:`pow64`: ``|x|**y = exp64(y * log64(|x|))``, the sign and the special cases of
  C99/IEEE 754 ``pow`` (Annex F.10.4.4) applied by masks; ``y == 2`` is ``x * x``
  (exact in float64 for float and half ``x``).

Accuracy, measured against numpy's longdouble (x87 80-bit, 64-bit significand)
``expl``/``logl`` over 2e6 random inputs each: :func:`exp64` within 1.2 float64 ulp on
``[-745, 709.7]``, :func:`log64` within 0.83 float64 ulp on all positive finite float64.
:func:`pow64` inherits ``log64``'s relative error times ``|y ln x|``: below 2**-44
relative for every result in float range. Rounded once to float32 or half, a result is the
correctly rounded one except when the exact value lies within ~2**-50 (Exp, Ln) or
~2**-44 (Power) relative of the midpoint between two floats; then it may be the other
neighbour, 1 ulp off. Measured: of 10**6 random float32 and 10**6 half inputs per function
(Power with exponents 0.37 and 9), none differs from numpy's float64 value rounded once
(tests/test_portable_math.py checks at most 0.5 ulp + 2**-20 and a 1e-4 bound on the
misrounded share). Power of an exact midpoint (``(1 + 2**-8) ** 3`` in float) may round
either way.

NaN results are the positive quiet NaN (0x7FC00000 in float, 0x7E00 in half), whatever
the input NaN's sign and payload.

Special values: ``exp(nan) = nan``, ``exp(+inf) = inf``, ``exp(-inf) = 0``, overflow to
``inf`` above ln(DBL_MAX), underflow through the float64 subnormals to 0; ``ln(nan) =
nan``, ``ln(x < 0) = nan``, ``ln(-inf) = nan``, ``ln(+-0) = -inf``, ``ln(inf) = inf``,
``ln(1) = 0``; :func:`pow64`: ``pow(x, +-0) = 1`` and ``pow(1, y) = 1`` (NaN included),
``pow(-1, +-inf) = 1``, finite ``x < 0`` with a non-integer finite ``y`` is NaN, a negative
base with an odd integer exponent keeps its sign (``-0`` and ``-inf`` included), ``pow(+-0,
y < 0) = inf``, ``pow(|x| < 1, -inf) = inf``, ``pow(|x| > 1, -inf) = 0`` and so on, as
C99 F.10.4.4 lists them.
"""
from __future__ import annotations

import numpy as np

__all__ = ["exp64", "log64", "pow64", "exp", "ln", "power", "LN2_HI", "LN2_LO"]

#: ln 2's leading 32 significant bits (fdlibm's ln2_hi, 0x3FE62E42FEE00000): ``k * LN2_HI``
#: is exact for ``|k| < 2**21``.
LN2_HI = float.fromhex("0x1.62e42fee00000p-1")
#: ``ln 2 - LN2_HI`` rounded to float64 (fdlibm's ln2_lo, 0x3DEA39EF35793C76).
LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
_INV_LN2 = float.fromhex("0x1.71547652b82fep0")        # 1 / ln 2 rounded to float64

# Taylor coefficients 1/n! (n = 13 down to 2), each a correctly rounded quotient of exact
# integers (n! < 2**53 for n <= 18)
_EXP_COEFFS = []
_fact = 1
for _n in range(1, 14):
    _fact *= _n
    _EXP_COEFFS.append(1.0 / _fact)
_EXP_COEFFS = tuple(reversed(_EXP_COEFFS[1:]))        # 1/13!, ..., 1/2!
# atanh-series coefficients 2/(2n+1), n = 10 down to 1
_LOG_COEFFS = tuple(2.0 / (2 * n + 1) for n in range(10, 0, -1))

# beyond these exp64's result is inf / 0 whatever the input (e**709.79 > DBL_MAX,
# e**-745.14 < half the smallest subnormal): clamping keeps k in the exponent's range
_EXP_HI, _EXP_LO = 710.0, -746.0


_MANT = 0x000FFFFFFFFFFFFF
_SQRT2_MANT = 0x6A09E667F3BCD          # sqrt(2)'s significand bits (0x3FF6A09E667F3BCD)
_ONE_BITS = 0x3FF0000000000000
_SMALLEST_NORMAL = float.fromhex("0x1p-1022")


def exp64(x) -> np.ndarray:
    """e**x in float64 for an array ``x`` (any float dtype; computed in float64).

    Algorithm, accuracy and special values: the module docstring (within 1.2 float64 ulp).
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        xc = np.clip(x, _EXP_LO, _EXP_HI)
        k = np.rint(xc * _INV_LN2)
        r = xc - k * LN2_HI                                    # exact
        r -= k * LN2_LO
        p = r * _EXP_COEFFS[0]
        for c in _EXP_COEFFS[1:-1]:
            p += c
            p *= r
        p += _EXP_COEFFS[-1]   # p = 1/2! + r/3! + ... ; exp(r) = 1 + r (1 + r p)
        p *= r
        p += 1.0
        p *= r
        p += 1.0
        # * 2**k, from the exponent bits (a NaN k gives garbage bits: NaN * it stays NaN)
        ki = k.astype(np.int64)
        if ki.size and (ki.min() < -1021 or ki.max() > 1023):
            # the result may be subnormal or overflow: two factors in the normal range, the
            # first product exact, the second rounding once
            k1 = ki >> 1
            p *= ((k1 + 1023) << 52).view(np.float64)
            ki -= k1
        p *= ((ki + 1023) << 52).view(np.float64)
        nan = np.isnan(x)
        if nan.any():
            p[nan] = np.nan        # one NaN (quiet, positive), whatever the input's payload
    return p


def log64(x) -> np.ndarray:
    """ln x in float64 for an array ``x`` (any float dtype; computed in float64).

    Algorithm, accuracy and special values: the module docstring (within 1 float64 ulp).
    """
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(all="ignore"):
        normal = (x >= _SMALLEST_NORMAL) & (x < np.inf)
        special = not normal.all()
        xs = np.where(x < _SMALLEST_NORMAL, x * float.fromhex("0x1p54"), x) if special else x
        bits = np.ascontiguousarray(xs).view(np.int64)
        mant = bits & _MANT
        big = (mant > _SQRT2_MANT).view(np.int8).astype(np.int64)  # m in [sqrt(2), 2): m / 2
        e = (bits >> 52) - 1023 + big
        m = (mant | (_ONE_BITS - (big << 52))).view(np.float64)    # [sqrt(2)/2, sqrt(2))
        e = e.astype(np.float64)
        if special:
            e[x < _SMALLEST_NORMAL] -= 54.0
        f = m - 1.0                                            # exact (Sterbenz)
        s = f / (2.0 + f)
        z = s * s
        R = z * _LOG_COEFFS[0]
        for c in _LOG_COEFFS[1:]:
            R += c
            R *= z
        hfsq = f * f
        hfsq *= 0.5
        R += hfsq
        R *= s
        R += e * LN2_LO                        # R = s (hfsq + R) + e LN2_LO
        hfsq -= R
        hfsq -= f
        out = e * LN2_HI
        out -= hfsq
        if special:
            out = np.where(normal | ((x > 0) & (x < np.inf)), out,
                           np.where(x == 0, -np.inf, np.where(x == np.inf, np.inf, np.nan)))
    return out


def _is_int(y: np.ndarray) -> np.ndarray:
    return np.isfinite(y) & (np.floor(y) == y)


def _is_odd(y: np.ndarray) -> np.ndarray:
    half = y * 0.5                                             # exact
    return _is_int(y) & (np.floor(half) != half)


def pow64(x, y) -> np.ndarray:
    """x**y in float64 (``x``, ``y`` arrays or scalars that broadcast; computed in
    float64): ``exp64(y * log64(|x|))`` with C99 pow's sign and special cases.

    Algorithm, accuracy and special values: the module docstring.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if y.size == 1:                          # one exponent (the Power instruction's scalar)
        return _pow_scalar(x, float(y.reshape(())), y.shape)
    x, y = np.broadcast_arrays(x, y)
    with np.errstate(all="ignore"):
        out = exp64(y * log64(np.abs(x)))
        out = np.where(y == 2.0, x * x, out)                   # exact, so correctly rounded
        out = np.where(np.signbit(x) & _is_odd(y), -out, out)
        # a finite negative base to a finite non-integer power has no real value
        out = np.where((x < 0) & np.isfinite(x) & np.isfinite(y) & ~_is_int(y), np.nan, out)
        # 0 * inf inside: |x| = 1 with y = +-inf, and y = 0 with x = 0, inf or NaN
        one = (y == 0) | (x == 1) | ((x == -1) & np.isinf(y))
        out = np.where(one, 1.0, out)
    return _one_nan(out)


def _one_nan(out: np.ndarray) -> np.ndarray:
    """NaNs as the positive quiet NaN, whatever sign and payload they carry (a NaN's sign
    after arithmetic differs between x86-64 and arm64)."""
    nan = np.isnan(out)
    if nan.any():
        out[nan] = np.nan
    return out


def _pow_scalar(x: np.ndarray, y: float, y_shape) -> np.ndarray:
    """:func:`pow64` for one exponent ``y`` (the same cases, decided once)."""
    shape = np.broadcast_shapes(x.shape, y_shape)
    x = np.broadcast_to(x, shape)
    if y == 0.0:
        return np.ones(shape)
    if y == 2.0:
        return x * x                                           # exact, so correctly rounded
    with np.errstate(all="ignore"):
        out = exp64(y * log64(np.abs(x)))
        integer = y == np.floor(y) and np.isfinite(y)
        if integer and np.floor(y * 0.5) != y * 0.5:           # odd: the base's sign stays
            np.copysign(out, x, out=out)
        elif np.isfinite(y) and not integer:                   # no real value for x < 0
            out[(x < 0) & (x > -np.inf)] = np.nan
        if np.isnan(y):                                        # pow(1, NaN) = 1
            out[x == 1] = 1.0
        elif np.isinf(y):                                      # 0 * inf inside for |x| = 1
            out[np.abs(x) == 1] = 1.0
    return _one_nan(out)


def _round_into(value: np.ndarray, out):
    """Round the float64 ``value`` once to ``out``'s dtype (or return it as it is)."""
    if out is None:
        return value
    with np.errstate(all="ignore"):
        out[...] = value
    return out


def exp(x, out=None):
    """e**x computed by :func:`exp64` and rounded once into ``out`` (float32/float16)."""
    return _round_into(exp64(x), out)


def ln(x, out=None):
    """ln x computed by :func:`log64` and rounded once into ``out`` (float32/float16)."""
    return _round_into(log64(x), out)


def power(x, y, out=None):
    """x**y computed by :func:`pow64` and rounded once into ``out`` (float32/float16)."""
    return _round_into(pow64(x, y), out)
