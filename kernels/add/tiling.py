"""Host side of Add: the computation recipe, the Add tiling and the BroadcastTo tiling.

Sources: ``hicann/ops-math: math/add/op_api/aclnn_add.cpp`` (the l0 chain of aclnnAdd),
``math/add/op_api/add.cpp``, ``math/axpy/op_api/axpy.cpp``, ``math/mul/op_api/mul.cpp``
and the TBE implementations behind those l0 ops on Atlas A2 (``impl/dynamic/add.py``,
``axpy.py``, ``mul.py``), read for their order of operations only.

**Recipe** (:func:`add_recipe`), as aclnnAdd builds it on Atlas A2 (not RegBase):

* ``alpha == 1`` (``!(alpha.ToFloat() > 1 || alpha.ToFloat() < 1)``; note that a NaN alpha
  therefore counts as 1, as in CANN) -> l0 ``Add``; FLOAT16+FLOAT and BF16+FLOAT inputs go
  to the mixed-dtype Add kernel, which computes in FLOAT;
* else promote type FLOAT, FLOAT16 or INT32 -> l0 ``Axpy(self, other, alpha.ToFloat())``.
  Its TBE kernel computes fp16/fp32 as ``vmuls(other, alpha)`` then ``vadd`` (or one
  ``vaxpy`` when the inputs need no broadcast beyond the last axis), and INT32 by casting
  both inputs to fp32, ``vmuls``/``vadd`` in fp32 and casting back with truncation
  (``f322s32z``);
* else l0 ``Mul(other, alphaTensor)`` then ``Add``, with alpha converted to the promote type
  first (``ConvertToTensor``): BF16 rounds alpha and the product to bf16; integer types
  wrap; BOOL is ``self | (other & bool(alpha))``.

How the simulated kernel computes each case (``computeDtype``), and why:

* FLOAT, FLOAT16: natively, ``Muls(other, alpha)`` then ``Add``: two roundings, the order of
  the TBE broadcast path. The single ``vaxpy`` of the no-broadcast path is not modelled
  [R]: its rounding is not published, and the Ascend C high-level ``Axpy`` page says that
  ``Muls`` + ``Add`` gives *better* precision than the basic instruction.
* BF16: cast to fp32 (CAST_NONE), computed in fp32, cast back with CAST_RINT (A2 has no
  bf16 vector arithmetic); with alpha != 1 the product is rounded to bf16 before the Add,
  as the separate Mul kernel's bf16 output is.
* INT32: ``Add`` natively (wrapping) when alpha == 1; the Axpy path in fp32 otherwise.
* INT16: natively (``Add``/``Muls`` wrap). On A2 the real l0 Add sends INT16 to the AI CPU;
  the wrapping integer result is the same [R].
* INT8, UINT8, BOOL (as the TBE Add/Mul do): cast to fp16 (alpha == 1) or fp32, add
  exactly, wrap modulo 256 with floor arithmetic (``uint8_int8_overflow_proc``), cast
  back; BOOL clamps the sum to 1. The product and the sum are wrapped once at the end,
  which gives the same integers as wrapping each (the wrap is a ring homomorphism). These
  need ``Cast`` int8/uint8 <-> half, which the simulated vector unit does not offer yet
  (see :func:`cast_path`); until it does they raise :class:`NotSupportedOnSimulator`.
* INT64, DOUBLE, COMPLEX: not computable on the simulated vector unit (no 64-bit or
  complex arithmetic); :class:`NotSupportedOnSimulator`.

Every conversion goes through the simulated vector ``Cast`` (:data:`npusim.ascendc.vector`
``CAST_MODES``); :func:`cast_path` finds the shortest chain of supported casts and the
recipe is refused when there is none.

**Add tiling** (:func:`tiling`): ``blockDim = min(cores, ceil(total / BLOCK_MIN))``; each
block takes ``blockFactor`` elements (a multiple of ``BLOCK_ALIGN_BYTES`` of the narrowest
dtype so every block starts 512 B aligned), the last one the rest; the UB tile
``ubFactor`` fills the usable UB with double-buffered input/output queues plus the
compute-dtype scratch buffers the recipe needs. No workspace.

**BroadcastTo tiling** (:func:`broadcast_to_tiling`): the strided/broadcast read that
materialises an input in the output's shape (l0 ``BroadcastTo``/``Contiguous``). See the
function for the row model.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from math import prod

import ml_dtypes
import numpy as np

from npusim.ascendc import vector as _vector
from npusim.ascendc.types import RoundMode

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
BF16 = np.dtype(ml_dtypes.bfloat16)
I8, U8, I16, I32, I64 = (np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.int32, np.int64))
BOOL = np.dtype(np.bool_)
C64, C128 = np.dtype(np.complex64), np.dtype(np.complex128)

#: Double buffering of every queue (docs/reference/hardware.md §3 "Double buffering").
BUFFER_NUM = 2
#: Fewest elements worth a core of its own [R]: below ~4 KiB per core the fixed DMA latency
#: dominates (transfers of 16 KB or more reach full bandwidth, docs/reference/hardware.md §2).
BLOCK_MIN = 1024
#: Per-block GM start alignment: "GM地址尽量512B对齐" (docs/reference/hardware.md §2).
BLOCK_ALIGN_BYTES = 512
#: UB tiles are multiples of this many elements, so every buffer stays 32 B aligned even
#: for 1-byte types (docs/reference/hardware.md §3 "Memory and alignment").
UB_ALIGN_ELEMS = 64
#: DataCopyPad limits (docs/reference/hardware.md §3): rows per copy and the GM gap in bytes.
MAX_BLOCK_COUNT = 4095
MAX_GM_STRIDE = 2**32 - 1
#: Bytes of one UB scratch element: the widest intermediate type of a cast chain (fp32/int32).
SCRATCH_BYTES = 4


class NotSupportedOnSimulator(ValueError):
    """A valid aclnnAdd case that the simulated vector unit cannot compute."""


# -- dtype rules -----------------------------------------------------------------------------
_INT_BITS = {U8: 8, I8: 8, I16: 16, I32: 32, I64: 64}
_FLOAT_RANK = {F16: 1, BF16: 1, F32: 2, F64: 3}
_COMPLEX_RANK = {C64: 1, C128: 2}


def promote_types(a, b) -> np.dtype:
    """``op::PromoteType(a, b)`` for the dtypes aclnnAdd accepts (PyTorch's promotion table).

    bool < integers < floating < complex; uint8 with a signed integer gives the signed type
    of at least 16 bits; FLOAT16 with BF16 gives FLOAT; a complex with DOUBLE gives COMPLEX128.
    """
    a, b = np.dtype(a), np.dtype(b)
    if a == b:
        return a
    if a == BOOL or b == BOOL:
        return b if a == BOOL else a
    if a in _INT_BITS and b in _INT_BITS:
        if U8 in (a, b):
            signed = b if a == U8 else a
            return np.dtype(f"int{max(_INT_BITS[signed], 16)}")
        return a if _INT_BITS[a] > _INT_BITS[b] else b
    if a in _INT_BITS or b in _INT_BITS:
        return b if a in _INT_BITS else a
    if a in _COMPLEX_RANK or b in _COMPLEX_RANK:
        if a in _COMPLEX_RANK and b in _COMPLEX_RANK:
            return C128
        c, f = (a, b) if a in _COMPLEX_RANK else (b, a)
        return C128 if (c == C128 or f == F64) else C64
    if {a, b} == {F16, BF16}:
        return F32
    return a if _FLOAT_RANK[a] > _FLOAT_RANK[b] else b


def device_dtype(dtype) -> np.dtype:
    """The element type a kernel uses in GM/UB: BOOL is handled as uint8_t (0 or 1)."""
    dtype = np.dtype(dtype)
    return U8 if dtype == BOOL else dtype


# -- casts through the simulated vector unit ---------------------------------------------------
def vector_casts() -> dict:
    """(src, dst) -> accepted RoundModes of the simulated vector ``Cast``.

    Read from ``npusim.ascendc.vector.CAST_MODES`` so the recipe follows the simulator: a pair
    added there becomes usable here.
    """
    return dict(_vector.CAST_MODES)


def vector_arith_dtypes() -> tuple:
    """The dtypes the simulated vector ``Add``/``Muls`` accept (``vector.ARITH_TYPES``)."""
    return tuple(_vector.ARITH_TYPES)


def _step_mode(src: np.dtype, dst: np.dtype, modes) -> RoundMode:
    """Round mode of one cast step: RINT when a float narrows, truncation when a float becomes
    an integer (TBE ``cast_to`` uses ``f322s32z``), otherwise exact (CAST_NONE)."""
    float_src = src.kind == "f" or src == BF16
    float_dst = dst.kind == "f" or dst == BF16
    if float_src and not float_dst:
        prefer = (RoundMode.CAST_TRUNC, RoundMode.CAST_RINT)
    elif float_src and float_dst and src.itemsize > dst.itemsize:
        prefer = (RoundMode.CAST_RINT, RoundMode.CAST_NONE)
    else:
        prefer = (RoundMode.CAST_NONE, RoundMode.CAST_RINT)
    for mode in prefer:
        if mode in modes:
            return mode
    return sorted(modes, key=lambda m: m.value)[0]


def cast_path(src, dst) -> tuple[tuple[np.dtype, RoundMode], ...] | None:
    """The shortest chain of simulated vector Casts from ``src`` to ``dst`` (device dtypes).

    Returns ``((dtype, round_mode), ...)``, one entry per Cast instruction (``()`` when the
    dtypes are equal), or None when no chain exists. Among equally short chains, the one
    through FLOAT is taken.
    """
    src, dst = device_dtype(src), device_dtype(dst)
    if src == dst:
        return ()
    casts = vector_casts()
    edges: dict[np.dtype, list[np.dtype]] = {}
    for (a, b) in casts:
        if a != b:
            edges.setdefault(a, []).append(b)
    for a in edges:
        edges[a].sort(key=lambda d: (d != F32, d.itemsize, d.name))
    prev = {src: None}
    queue = deque([src])
    while queue:
        cur = queue.popleft()
        if cur == dst:
            break
        for nxt in edges.get(cur, ()):
            if nxt not in prev:
                prev[nxt] = cur
                queue.append(nxt)
    if dst not in prev:
        return None
    chain = []
    node = dst
    while prev[node] is not None:
        chain.append(node)
        node = prev[node]
    steps, cur = [], src
    for nxt in reversed(chain):
        steps.append((nxt, _step_mode(cur, nxt, casts[(cur, nxt)])))
        cur = nxt
    return tuple(steps)


# -- the recipe --------------------------------------------------------------------------------
@dataclass(frozen=True)
class AddRecipe:
    """What one aclnnAdd computes on the vector unit (dtypes are device dtypes).

    Attributes:
        opType: the l0 op(s) the kernel stands for: "Add", "Axpy" or "Mul+Add".
        promoteDtype: ``op::PromoteType(self, other)`` (numpy dtype; BOOL stays bool here).
        computeDtype: the dtype of the vector arithmetic.
        selfCasts, otherCasts: Cast chains from each input dtype to computeDtype.
        outCasts: Cast chain from computeDtype to out's dtype (through the promote type).
        alpha: None when alpha == 1 (no Muls), else alpha as a computeDtype scalar.
        productDtype: round ``alpha * other`` to this dtype before the Add (BF16 Mul path).
        wrap: "int8", "uint8" or "bool": the TBE overflow processing of 8-bit/bool sums.
    """

    opType: str
    promoteDtype: np.dtype
    computeDtype: np.dtype
    selfCasts: tuple
    otherCasts: tuple
    outCasts: tuple
    alpha: np.generic | None
    productDtype: np.dtype | None
    wrap: str | None


def alpha_to_float(alpha) -> np.float32:
    """``aclScalar::ToFloat()``: the value as float32."""
    value = np.asarray(alpha)
    if value.dtype.kind == "c":
        value = value.real
    return np.float32(value.astype(np.float64) if value.dtype != BF16 else value.astype(F32))


def alpha_is_one(alpha) -> bool:
    """``IsEqualToOne`` on A2: ``!(alpha.ToFloat() > 1 || alpha.ToFloat() < 1)`` (NaN -> True)."""
    a = alpha_to_float(alpha)
    return not (a > 1 or a < 1)


def convert_scalar(alpha, dtype) -> np.generic:
    """``ConvertToTensor(alpha, dtype)``: alpha converted to ``dtype`` (integers wrap, floats
    round to nearest, BOOL is ``alpha != 0``)."""
    dtype = np.dtype(dtype)
    value = np.asarray(alpha)
    if dtype == BOOL:
        return np.bool_(value != 0)
    if dtype.kind in "iu":
        if value.dtype.kind in "iub":
            return value.astype(np.int64).astype(np.uint64).astype(dtype)[()]
        return value.astype(dtype)[()]
    if value.dtype == BF16:
        value = value.astype(F32)
    return value.astype(dtype)[()]


def _compute_dtype(promote: np.dtype, alpha_one: bool) -> np.dtype:
    if promote == BF16:
        return F32
    if promote in (I8, U8):
        return F16 if alpha_one else F32
    if promote == BOOL:
        return F16
    return promote


def _chain(src, dst, what):
    steps = cast_path(src, dst)
    if steps is None:
        def name(d):
            d = np.dtype(d)
            return "bool (uint8_t on device)" if d == BOOL else d.name
        raise NotSupportedOnSimulator(
            f"{what} needs Cast {name(src)} -> {name(dst)}, which the simulated vector unit "
            "does not model yet (npusim.ascendc.vector Cast table)")
    return steps


def add_recipe(self_dtype, other_dtype, out_dtype, alpha, promote_dtype=None) -> AddRecipe:
    """Choose the computation aclnnAdd performs on Atlas A2 (module docstring).

    Args:
        self_dtype, other_dtype, out_dtype: numpy dtypes (bool, ints, float16, bfloat16,
            float32, ...).
        alpha: the aclScalar's value (numpy scalar of its dtype).
        promote_dtype: ``op::PromoteType(self, other)``; computed when None.

    Raises:
        NotSupportedOnSimulator: the case needs an instruction the simulated vector unit
            lacks (64-bit/complex arithmetic, a Cast pair not modelled).
    """
    xs, ys, zs = np.dtype(self_dtype), np.dtype(other_dtype), np.dtype(out_dtype)
    promote = promote_types(xs, ys) if promote_dtype is None else np.dtype(promote_dtype)
    one = alpha_is_one(alpha)
    mixed = {xs, ys} in ({F16, F32}, {BF16, F32})
    product = None
    if promote in (I64, F64, C64, C128):
        raise NotSupportedOnSimulator(
            f"the promoted type {promote.name} needs 64-bit or complex vector arithmetic, which "
            "the simulated vector unit does not model (A2's TBE kernels emulate INT64; DOUBLE "
            "and COMPLEX run on the AI CPU)")
    if one:
        op_type = "Add"
        compute = F32 if mixed else _compute_dtype(promote, True)
        alpha_c = None
    elif promote in (F32, F16, I32):
        op_type = "Axpy"
        compute = F32 if promote == I32 else promote
        alpha_c = compute.type(alpha_to_float(alpha))
    else:
        op_type = "Mul+Add"
        compute = _compute_dtype(promote, False)
        alpha_p = convert_scalar(alpha, promote)
        alpha_c = compute.type(np.asarray(alpha_p).astype(F32) if alpha_p.dtype == BF16
                               else alpha_p)
        if promote == BF16:
            product = BF16
    if compute not in vector_arith_dtypes():
        raise NotSupportedOnSimulator(f"the simulated vector unit has no {compute.name} Add")
    wrap = {I8: "int8", U8: "uint8", BOOL: "bool"}.get(promote)
    if mixed and one:
        self_casts = _chain(xs, compute, "self")
        other_casts = _chain(ys, compute, "other")
    else:
        self_casts = _chain(xs, promote, "self") + _chain(promote, compute, "self")
        other_casts = _chain(ys, promote, "other") + _chain(promote, compute, "other")
    result = F32 if (mixed and one) else promote
    out_casts = _chain(compute, result, "out") + _chain(result, zs, "out")
    if product is not None:
        _chain(compute, product, "alpha * other")
        _chain(product, compute, "alpha * other")
    if wrap in ("int8", "uint8"):
        _chain(compute, I32, "the 8-bit wrap")
        _chain(I32, compute, "the 8-bit wrap")
    return AddRecipe(op_type, promote, device_dtype(compute), self_casts, other_casts,
                     out_casts, alpha_c, product, wrap)


# -- Add tiling ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class AddTilingData:
    """TilingData of the Add kernel (counts in elements, sizes in bytes).

    Block ``b < blockDim - 1`` computes elements ``[b*blockFactor, (b+1)*blockFactor)``, the
    last block ``tailBlockFactor`` elements; each block loops over UB tiles of ``ubFactor``.
    ``scratchNum`` fp32-sized (``ubFactor * 4`` B) scratch buffers hold cast intermediates.
    """

    totalLength: int
    blockFactor: int
    tailBlockFactor: int
    ubFactor: int
    selfDtype: np.dtype
    otherDtype: np.dtype
    outDtype: np.dtype
    computeDtype: np.dtype
    selfCasts: tuple
    otherCasts: tuple
    outCasts: tuple
    alpha: np.generic | None
    productDtype: np.dtype | None
    wrap: str | None
    scratchNum: int
    opType: str
    # launch parameters, kept with the tiling as the host hands them to the runtime
    blockDim: int
    workspaceSize: int


def _align_up(x: int, a: int) -> int:
    return -(-int(x) // a) * a


def add_bytes_per_element(recipe: AddRecipe, self_dtype, other_dtype, out_dtype) -> tuple[int, int]:
    """(UB bytes per tile element, number of scratch buffers) for a recipe."""
    xs, ys, zs = (device_dtype(d).itemsize for d in (self_dtype, other_dtype, out_dtype))
    cs = recipe.computeDtype.itemsize
    longest = max(len(recipe.selfCasts), len(recipe.otherCasts), len(recipe.outCasts))
    scratch = min(max(longest - 1, 0), 2)
    if recipe.wrap in ("int8", "uint8") or recipe.productDtype is not None:
        scratch = max(scratch, 1)
    per = BUFFER_NUM * (xs + ys + zs)
    per += cs * (bool(recipe.selfCasts) + bool(recipe.otherCasts) + bool(recipe.outCasts))
    per += SCRATCH_BYTES * scratch
    return per, scratch


def tiling(soc, total: int, self_dtype, other_dtype, out_dtype, alpha=1.0, *,
           promote_dtype=None, recipe: AddRecipe | None = None, core_num: int | None = None,
           ub_size: int | None = None) -> AddTilingData:
    """TilingData of the Add kernel for ``total`` elements of the output.

    Args:
        soc: the SocSpec; ``core_num`` defaults to its vector core count
            (``vector_block_num``) and ``ub_size`` to ``GetCoreMemSize(UB)`` less the 8 KiB
            Ascend C reserve (``soc.ub_usable - soc.ascendc_reserved_ub``,
            docs/reference/hardware.md §1.7): the kernel is launched with the reserve.
        total: elements of the (broadcast) output, >= 0.
        self_dtype, other_dtype, out_dtype: numpy dtypes of the contiguous kernel inputs
            and output.
        alpha: the aclScalar value; recipe: a precomputed :func:`add_recipe` (else built).

    Returns:
        AddTilingData; ``blockDim`` 0 for an empty output (nothing is launched).

    Raises:
        NotSupportedOnSimulator: from :func:`add_recipe`.
    """
    core_num = soc.vector_block_num if core_num is None else int(core_num)
    ub = soc.ub_usable - soc.ascendc_reserved_ub if ub_size is None else int(ub_size)
    if recipe is None:
        recipe = add_recipe(self_dtype, other_dtype, out_dtype, alpha, promote_dtype)
    total = int(total)
    dts = [device_dtype(d) for d in (self_dtype, other_dtype, out_dtype)]
    per, scratch = add_bytes_per_element(recipe, *dts)
    ub_factor = ub // per // UB_ALIGN_ELEMS * UB_ALIGN_ELEMS
    if total == 0:
        block_dim = block_factor = tail = 0
    else:
        align = BLOCK_ALIGN_BYTES // min(d.itemsize for d in dts)
        block_dim = min(core_num, -(-total // BLOCK_MIN))
        block_factor = _align_up(-(-total // block_dim), align)
        block_dim = -(-total // block_factor)
        tail = total - (block_dim - 1) * block_factor
        ub_factor = min(ub_factor, _align_up(block_factor, UB_ALIGN_ELEMS))
    return AddTilingData(
        totalLength=total, blockFactor=block_factor, tailBlockFactor=tail, ubFactor=ub_factor,
        selfDtype=dts[0], otherDtype=dts[1], outDtype=dts[2], computeDtype=recipe.computeDtype,
        selfCasts=recipe.selfCasts, otherCasts=recipe.otherCasts, outCasts=recipe.outCasts,
        alpha=recipe.alpha, productDtype=recipe.productDtype, wrap=recipe.wrap,
        scratchNum=scratch, opType=recipe.opType, blockDim=block_dim, workspaceSize=0)


# -- BroadcastTo tiling --------------------------------------------------------------------------
ROWS = "ROWS"                    # rows are contiguous runs, rowStride >= colNum: one DMA per tile
ROWS_EACH = "ROWS_EACH"          # rows overlap or are too far apart: one DMA per row
ROW_BROADCAST = "ROW_BROADCAST"  # rowStride 0: one row, Broadcast<T, 2, 0> to the tile
SPLAT = "SPLAT"                  # colStride 0, rowStride 1: a column, Broadcast<T, 2, 1>
SPLAT_EACH = "SPLAT_EACH"        # colStride 0, rowStride > 1: one Broadcast<T, 1> per row


@dataclass(frozen=True)
class BroadcastToTilingData:
    """TilingData of the BroadcastTo (strided gather) kernel.

    The output, contiguous, is ``outerDims + (rowNum, colNum)``; its element
    ``(o..., r, c)`` is the input element at ``sum(o_k * outerStrides_k) + r * rowStride +
    c * colStride`` (element offsets from the input's first element; ``colStride`` is 0 or 1,
    a 0 stride broadcasts). A task is a tile of ``tileRows x tileCols`` output elements (UB
    rows padded to ``tileColsPad``, a 32 B multiple); tasks are numbered with the column
    tile fastest, and block ``b`` takes ``coreTaskNum`` tasks if ``b < frontCoreNum``, one
    fewer otherwise.
    """

    dtype: np.dtype
    mode: str
    outerDims: tuple
    outerStrides: tuple
    rowNum: int
    rowStride: int
    colNum: int
    colStride: int
    tileRows: int
    tileCols: int
    tileColsPad: int
    rowTiles: int
    colTiles: int
    taskNum: int
    frontCoreNum: int
    coreTaskNum: int
    bufferBytes: int
    blockDim: int
    workspaceSize: int


def coalesce(shape, strides) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Drop size-1 dims and merge neighbours whose strides chain (``s[i] == s[i+1] * d[i+1]``).

    ``coalesce((4, 5), (1, 0)) == ((4, 5), (1, 0))``; ``coalesce((2, 3, 4), (12, 4, 1)) ==
    ((24,), (1,))``; a single element gives ``((1,), (1,))``.
    """
    dims = [(int(d), int(s)) for d, s in zip(shape, strides) if int(d) != 1]
    if not dims:
        return (1,), (1,)
    out = [dims[0]]
    for d, s in dims[1:]:
        pd, ps = out[-1]
        if ps == s * d:
            out[-1] = (pd * d, s)
        else:
            out.append((d, s))
    return tuple(d for d, _ in out), tuple(s for _, s in out)


def broadcast_strides(in_shape, in_strides, out_shape) -> tuple[int, ...]:
    """The input's strides in the output's rank, 0 along broadcast (and size-1) dims."""
    pad = len(out_shape) - len(in_shape)
    strides = [0] * pad
    for d, s, o in zip(in_shape, in_strides, out_shape[pad:]):
        strides.append(0 if int(d) == 1 else int(s))
    return tuple(strides)


def needs_gather(in_shape, in_strides, out_shape) -> bool:
    """True unless the input, read contiguously, already is the output-shaped tensor."""
    if prod(out_shape) == 0:
        return False
    expanded = broadcast_strides(in_shape, in_strides, out_shape)
    expect = 1
    for d, s in zip(reversed(out_shape), reversed(expanded)):
        if d != 1:
            if s != expect:
                return True
            expect *= d
    return False


def broadcast_to_tiling(soc, out_shape, in_shape, in_strides, dtype, *,
                        core_num: int | None = None, ub_size: int | None = None
                        ) -> BroadcastToTilingData:
    """TilingData of the BroadcastTo kernel that writes ``in`` (a strided view) as a
    contiguous tensor of ``out_shape``.

    The view is coalesced (:func:`coalesce`); its last dim becomes the row (``colNum``
    elements) and the one before the row count. A last dim that is neither contiguous nor
    broadcast becomes rows of one element. Row kinds (module constants): ROWS,
    ROWS_EACH, ROW_BROADCAST, SPLAT, SPLAT_EACH. The UB holds an input and an output queue
    of ``BUFFER_NUM`` buffers of ``bufferBytes`` each [R: the real A2 BroadcastTo/ViewCopy
    kernels are TBE-generated; this tiling is the simulator's].

    Args:
        out_shape: the output shape (non-empty); in_shape/in_strides: the input's view
            (strides in elements, >= 0) with numpy broadcasting against ``out_shape``.
        dtype: the element dtype (device dtype: bool as uint8).
    """
    core_num = soc.vector_block_num if core_num is None else int(core_num)
    ub = soc.ub_usable - soc.ascendc_reserved_ub if ub_size is None else int(ub_size)
    dtype = device_dtype(dtype)
    isz = dtype.itemsize
    strides = broadcast_strides(in_shape, in_strides, out_shape)
    if any(s < 0 for s in strides):
        raise ValueError("negative strides are not supported")
    dims, strs = coalesce(out_shape, strides)
    dims, strs = list(dims), list(strs)
    if strs[-1] not in (0, 1):             # a strided last dim: rows of one element
        dims.append(1)
        strs.append(1)
    col_num, col_stride = dims[-1], strs[-1]
    row_num, row_stride = (dims[-2], strs[-2]) if len(dims) > 1 else (1, 0)
    outer_dims, outer_strides = tuple(dims[:-2]), tuple(strs[:-2])
    buffer_bytes = ub // (2 * BUFFER_NUM) // 32 * 32
    col_max = buffer_bytes // 32 * (32 // isz) if isz <= 32 else 1
    tile_cols = min(col_num, col_max)
    tile_cols_pad = _align_up(tile_cols * isz, 32) // isz
    tile_rows = max(1, min(row_num, MAX_BLOCK_COUNT, buffer_bytes // (tile_cols_pad * isz)))
    if col_stride == 1:
        if row_num == 1:
            row_stride = col_num
        if row_stride == 0:
            mode = ROW_BROADCAST
        elif row_stride >= col_num and (row_stride - 1) * isz <= MAX_GM_STRIDE:
            mode = ROWS
        else:
            mode = ROWS_EACH
    else:
        if row_num == 1:
            row_stride = 1
        mode = SPLAT if row_stride == 1 else SPLAT_EACH
        if mode == SPLAT_EACH and (row_stride - 1) * isz > MAX_GM_STRIDE:
            raise ValueError("row stride too large for DataCopyPad")
    row_tiles = -(-row_num // tile_rows)
    col_tiles = -(-col_num // tile_cols)
    task_num = prod(outer_dims) * row_tiles * col_tiles
    block_dim = min(core_num, task_num)
    core_tasks = -(-task_num // block_dim)
    front = task_num - (core_tasks - 1) * block_dim
    return BroadcastToTilingData(
        dtype=dtype, mode=mode, outerDims=outer_dims, outerStrides=outer_strides,
        rowNum=row_num, rowStride=row_stride, colNum=col_num, colStride=col_stride,
        tileRows=tile_rows, tileCols=tile_cols, tileColsPad=tile_cols_pad, rowTiles=row_tiles,
        colTiles=col_tiles, taskNum=task_num, frontCoreNum=front, coreTaskNum=core_tasks,
        bufferBytes=buffer_bytes, blockDim=block_dim, workspaceSize=0)
