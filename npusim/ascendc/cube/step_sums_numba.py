"""Mmad's per-step sums and their fp32 accumulation in one compiled loop (numba), the same
bits as :mod:`npusim.ascendc.cube.step_sums`'s numpy rendering.

The value of a step is defined once (:mod:`.step_sums`): ``fp32(float64(exact sum of the
k0 products))``; Mmad's float result is ``init + step 0 + step 1 + ...`` in fp32, k order.
The numpy rendering gets there through one BLAS product of every step and checks on whole
arrays, so it writes every step's m x n result to memory and reads it back several times.
This loop (:func:`.step_sums_jit._accumulate`) takes a block of 128 columns of C at a
time (B's part of a step, 16 KiB, stays in the first-level cache), step by step, in
register tiles of 4 rows x 8 columns (:func:`.step_sums_jit._tile`, written as LLVM IR
through numba's ``intrinsic``): the tile's 32 float64 sums stay in eight vector registers
through the step's k0 multiply-adds (per k two vectors of B loaded, four values of A
broadcast), then each vector is checked and its fp32 value added to the block's fp32
accumulator in the same pass, with no sum read back from memory; the few sums the vector
test leaves out are settled one by one (:func:`.step_sums_jit._settle`), and the
accumulator goes to L0C's NZ order once. Each step's value is shown to be the defined
one by the same arguments as there, per element:

* Exact by its bits: the step's row of A and column of B span, from the top of their
  largest magnitude down to the last bit their type allows their smallest nonzero one,
  ``span_A + span_B + ceil(log2 k0) <= 53`` bits: every partial sum is exact, so the
  loop's sum (one chain of multiply-adds in k order; any order would do) is the exact
  sum. float rows are all taken as wide, as :mod:`.step_sums` takes them.
* Rounded alike: otherwise, with the bound ``E`` of any order's error (Higham, §4.2; the
  products are exact, so a fused multiply-add the compiler might form changes nothing),
  ``fp32(r - E) == fp32(r + E)`` gives the value (it is ``fp32(r - E)``, rounding being
  monotone). The tile tests this on every sum of a row that is not exact by its bits
  against every column of the block (a tile of rows that all are keeps its sums as they
  are, with no test); the exact-by-bits test of single elements and the test for finite
  sums are left to the elements that fail it (a NaN fails it; an infinity passes it, as
  its own value), so they cost nothing where it passes. A column of zeros, inf or NaN has
  the bound 0 (its sums are 0 or not finite).
* Computed again: an element that fails both, by an exact sum of its k0 products
  (Shewchuk's error-free partials, rounded once to nearest-even: ``math.fsum``'s result,
  :func:`.step_sums_jit._exact_sum`).
* A sum that is not finite (a product holds inf or NaN) is NaN or the infinity, whatever
  the order; it is taken as summed. NaN's bits are the host's here as there (Mmad makes
  every NaN the canonical one).

No step's value depends on the host's vector width or BLAS, and every value the loop
keeps is one the arguments above pin down. The sums' multiply-adds are LLVM's
``llvm.fmuladd``, which the compiler makes one fused multiply-add where the host has one,
``fma(x, y, z) = round(x * y + z)``, else a multiply and an add; as ``x * y`` is exact
(a product of two half, bfloat16 or float values has at most 48 significant bits and
lies far inside float64's exponent range), both are ``round(round(x * y) + z)``, on every
host (an inf or NaN product is the same inf or NaN either way). Nothing else is relaxed:
no reassociation, no assumption that values are finite or not NaN, no approximate
functions; the checks, the exact sum and the operand figures are compiled with strict
IEEE semantics. The float32 adds of the accumulation are the numpy rendering's, in the
same order.

Selection (:data:`ENABLED`): used by :func:`.step_sums.mmad_steps` and
:func:`.step_sums.rounded_step_sums` when numba imports, unless the environment sets
``NPUSIM_NUMBA=0`` (or a caller sets ``ENABLED = False``). ``pip install 'npusim[fast]'``
installs numba; it is imported on the first Mmad (:func:`kernels`), not with npusim. The
first call compiles the loop (about 10 s of CPU on a 2.4 GHz AMD EPYC, numba's import
included; once per operand layout) or loads it from numba's cache (0.9 s; ``cache=True``:
``__pycache__`` next to the source, else numba's user-wide cache directory).
"""
from __future__ import annotations

import importlib.util
import os
import warnings

import ml_dtypes
import numpy as np

__all__ = ["AVAILABLE", "ENABLED", "mmad_fractals_fused", "mmad_steps_fused",
           "rounded_step_sums_fused", "supports_fractals"]


def _installed() -> bool:
    """numba is on the path (found, not imported: its import costs most of a second)."""
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


#: numba is installed (imported on the loop's first use: :func:`kernels`)
AVAILABLE = _installed()
#: the compiled loop is used (``NPUSIM_NUMBA=0`` turns it off)
ENABLED = AVAILABLE and os.environ.get("NPUSIM_NUMBA", "1") != "0"
_KERNELS = None


def kernels():
    """The module of compiled loops (:mod:`.step_sums_jit`), imported on first use."""
    global _KERNELS
    if _KERNELS is None:
        from npusim.ascendc.cube import step_sums_jit
        # the blocks of B that _blocks makes, the rows of A that _float64 pads to
        assert step_sums_jit.WIDTH == _WIDTH and step_sums_jit.MR == _MR
        _KERNELS = step_sums_jit
    return _KERNELS


def _loads() -> bool:
    """The loops import (numba found but failing to import, e.g. built for another numpy:
    warned once, and the numpy rendering runs from then on)."""
    global ENABLED
    if _KERNELS is None:
        try:
            kernels()
        except Exception as exc:            # noqa: BLE001 - any import failure: numpy's path
            ENABLED = False
            warnings.warn(f"npusim: numba does not import ({exc}); Mmad's step sums run in "
                          "numpy", RuntimeWarning, stacklevel=3)
            return False
    return True


#: (mantissa bits, smallest normal exponent, rows by their bits) of each type
_FORMATS = {np.dtype(np.float16): (10, -14, True),
            np.dtype(ml_dtypes.bfloat16): (7, -126, True),
            np.dtype(np.float32): (23, -126, False)}
_WIDTH = 128                            # columns of B per block (step_sums_jit.WIDTH)
_MR = 4                                 # rows of A per tile (step_sums_jit.MR)
_POW2 = np.ldexp(1.0, np.arange(-1074, 1024))      # 2.0**e at e + 1074


def supports(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the loop is on and takes these operands: half, bfloat16 or float of one
    type, with k0 16, 16 and 8 (Mmad's fractal steps)."""
    fmt = _FORMATS.get(a.dtype)
    return (ENABLED and fmt is not None and b.dtype == a.dtype
            and a.shape[-1] == (8 if a.dtype == np.float32 else 16) and _loads())


_SCRATCH: dict = {}


def _float64(key: str, x: np.ndarray) -> np.ndarray:
    """``x`` (G, S, rows..., k0) as float64 (G, S, Mp, k0) in a work array kept from call
    to call (a fresh array of a few MiB costs more in page faults than the loop's reading
    it; launches run one at a time and an instruction does not yield, as
    :func:`.step_sums._scratch` says): its M rows (the product of the row axes) padded
    with zeros to Mp, a multiple of the loop's tile (``step_sums_jit.MR``)."""
    G, S, k0 = x.shape[0], x.shape[1], x.shape[-1]
    M = x.size // (G * S * k0) if x.size else 0
    Mp = -(-M // _MR) * _MR
    size = G * S * Mp * k0
    buf = _SCRATCH.get(key)
    if buf is None or buf.size < size:
        buf = _SCRATCH[key] = np.empty(size)
    out = buf[:size].reshape(G, S, Mp, k0)
    if Mp == M:
        out.reshape(x.shape)[...] = x        # a view: out is contiguous
    else:
        out[:, :, :M] = x.reshape(G, S, M, k0)
        out[:, :, M:] = 0
    return out


def _blocks(zn5: np.ndarray) -> np.ndarray:
    """B as the loop takes it, float64 (G, blocks, S, k0, :data:`_WIDTH`), C-contiguous,
    from ``zn5`` (G, S, N / 16, 16, k0), any strides: ``zn5[g, s, n1, j, k]`` is
    ``B[g, s, k, 16 n1 + j]`` (L0B's ZN fractals stored column by column; a view of any
    other layout). Every block is :data:`_WIDTH` columns wide, the last one padded with
    zeros (the loop needs a constant row pitch to vectorise; it reads no column of C
    past N)."""
    G, S, N1, _, k0 = zn5.shape
    per = _WIDTH // 16                       # fractal columns per block
    full, rem = divmod(N1, per)
    nblk = full + (rem > 0)
    size = G * nblk * S * k0 * _WIDTH
    buf = _SCRATCH.get("b")
    if buf is None or buf.size < size:
        buf = _SCRATCH["b"] = np.empty(size)
    out = buf[:size].reshape(G, nblk, S, k0, per, 16)
    if full:       # block c, step s, row k, column 16 w + j: fractal (s, per c + w), (j, k)
        out[:, :full] = zn5[:, :, :full * per].reshape(G, S, full, per, 16, k0).transpose(
            0, 2, 1, 5, 3, 4)
    if rem:
        out[:, full, :, :, :rem] = zn5[:, :, full * per:].transpose(0, 1, 4, 2, 3)
        out[:, full, :, :, rem:] = 0
    return out.reshape(G, nblk, S, k0, _WIDTH)


def _operands(a, b):
    """float64 copies of A (G, S, M, k0) and of B (G, S, k0, N; N a multiple of 16) in
    blocks of columns (:func:`_blocks`), and the type's figures."""
    fmt = _FORMATS[a.dtype]
    G, S, k0, N = b.shape
    zn5 = b.reshape(G, S, k0, N // 16, 16).transpose(0, 1, 3, 4, 2)
    return (_float64("a", a), _blocks(zn5), fmt[0], fmt[1], fmt[2],
            max(k0 - 1, 1).bit_length())


def mmad_steps_fused(a: np.ndarray, b: np.ndarray, init: np.ndarray | None,
                     out: np.ndarray) -> np.ndarray:
    """:func:`.step_sums.mmad_steps` (same arguments and result: ``a`` (G, S, M, k0),
    ``b`` (G, S, k0, N), ``init`` None or float32 (G, N/16, M, 16), possibly ``out``
    itself; ``out`` float32 (G, N/16, M, 16)) in the compiled loop; :func:`supports` must
    hold; N a multiple of 16."""
    a64, b64, mbits, emin, by_bits, lk = _operands(a, b)
    has_init = init is not None
    kernels()._accumulate(a64, b64, init if has_init else out, has_init, out, mbits, emin,
                          by_bits, lk, _POW2)
    return out


def supports_fractals(dtype) -> bool:
    """Whether :func:`mmad_fractals_fused` takes Mmad's operands of ``dtype`` (the loop is
    on and the type is one of its own; k0 is the type's: 16, or 8 for float)."""
    return ENABLED and np.dtype(dtype) in _FORMATS and _loads()


def mmad_fractals_fused(zz: np.ndarray, zn: np.ndarray, M1: int, K1: int, N1: int, k0: int,
                        init: np.ndarray | None, out: np.ndarray) -> bool:
    """:func:`mmad_steps_fused` of Mmad's operands as L0A and L0B hold them: ``zz`` A's
    [G, M1 x K1 fractals of 16 x k0] (ZZ) and ``zn`` B's [G, K1 x N1 fractals of k0 x 16,
    each column by column] (ZN), one member block per row; ``init``, ``out`` as there (N =
    N1 * 16); the result in ``out``. Returns whether an element of ``out`` is NaN (its bits
    the host's: the caller makes it canonical).

    The same float64 operands :func:`_operands` makes of Mmad's per-step arrays
    (:func:`.mmad._zz_steps`, :func:`.mmad._zn_steps`), each gathered from the fractals in
    one pass rather than through a contiguous copy first; the same loop and bits.
    :func:`supports_fractals` must hold."""
    fmt = _FORMATS[zz.dtype]
    has_init = init is not None
    lk = max(k0 - 1, 1).bit_length()
    G = len(zz)
    # A: step s, row i*16 + r, column k from fractal (i, s), element (r, k)
    a64 = _float64("a", zz.reshape(G, M1, K1, 16, k0).transpose(0, 2, 1, 3, 4))
    # B in blocks of columns: fractal (s, n1) holds element (j, k) column by column
    b64 = _blocks(zn.reshape(G, K1, N1, 16, k0))
    return bool(kernels()._accumulate(a64, b64, init if has_init else out, has_init, out,
                                      fmt[0], fmt[1], fmt[2], lk, _POW2))


def rounded_step_sums_fused(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> np.ndarray:
    """:func:`.step_sums.rounded_step_sums` (``a`` (S, M, k0), ``b`` (S, k0, N), ``out``
    float32 (S, M, N)) in the compiled loop; :func:`supports` must hold."""
    S, M, k0 = a.shape
    N = b.shape[-1]
    n16 = -(-N // 16) * 16                   # columns of zeros up to whole fractals
    if n16 != N:
        b = np.concatenate([b, np.zeros((S, k0, n16 - N), b.dtype)], axis=-1)
    # each step a member of one step, no start: its value + 0.0 (a zero's sign is free here)
    nz = mmad_steps_fused(a.reshape(S, 1, M, k0), b.reshape(S, 1, k0, n16), None,
                          np.empty((S, n16 // 16, M, 16), np.float32))
    out[...] = nz.transpose(0, 2, 1, 3).reshape(S, M, n16)[:, :, :N]
    return out
