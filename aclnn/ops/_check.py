"""Parameter checks shared by the first phases of the operators.

Each check raises :class:`ParamError` carrying the aclnn status and a message that names
the argument; the operator turns it into ``report_error(code, message)`` and returns the
code, so a failed call changes nothing (``docs/reference/api.md`` §1 and §4 "Null checks").

Codes: 161001 (ACLNN_ERR_PARAM_NULLPTR) for a null (None) tensor or scalar, as CANN's
``OP_CHECK_NULL``; 161002 (ACLNN_ERR_PARAM_INVALID) for everything else the operator
documents as a parameter error (dtype, format, dims, shapes). Python lets a caller pass
what C's types forbid -- an object that is not an aclTensor, a destroyed one, a descriptor
whose fields were overwritten, a number of the wrong type -- and those are 161002 too, the
closest documented code ("parameter check error", ``docs/reference/api.md`` §1) [R].
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from aclnn import runtime
from aclnn.constants import (ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_PARAM_NULLPTR,
                             ACLNN_ERR_RUNTIME_ERROR, aclDataType, aclFormat)
from aclnn.tensor import aclTensor

#: Formats that are plain row-major data (accepted where a document says "ND"); torch_npu
#: passes NCL/NCHW/NCDHW for 3-, 4- and 5-D tensors (docs/reference/api.md §2).
ND_COMPATIBLE = frozenset({aclFormat.ACL_FORMAT_ND, aclFormat.ACL_FORMAT_NCHW,
                           aclFormat.ACL_FORMAT_NHWC, aclFormat.ACL_FORMAT_NCL,
                           aclFormat.ACL_FORMAT_NCDHW, aclFormat.ACL_FORMAT_NDHWC,
                           aclFormat.ACL_FORMAT_HWCN, aclFormat.ACL_FORMAT_NC})


class ParamError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _int_tuple(value, n: int | None = None) -> bool:
    """Whether ``value`` is a tuple of ints (of length ``n`` when given)."""
    return (isinstance(value, tuple) and all(_is_int(v) for v in value)
            and (n is None or len(value) == n))


def well_formed(name: str, t) -> None:
    """161002 when an aclTensor's fields are not what aclCreateTensor builds.

    aclCreateTensor validates its arguments, but a Python caller can overwrite the
    descriptor's attributes afterwards (``t.view_dims = (-1, 4)``); every later check
    and the launch read those fields, so they are checked once here [R].
    """
    problems = []
    if not _int_tuple(t.view_dims) or any(d < 0 for d in t.view_dims):
        problems.append(f"view dims {t.view_dims!r} (ints >= 0)")
    elif not _int_tuple(t.strides, len(t.view_dims)):
        problems.append(f"strides {t.strides!r} (one int per view dim)")
    if not _int_tuple(t.storage_dims) or any(d < 0 for d in t.storage_dims):
        problems.append(f"storage dims {t.storage_dims!r} (ints >= 0)")
    if not _is_int(t.offset) or t.offset < 0:
        problems.append(f"offset {t.offset!r} (an int >= 0, elements)")
    if not isinstance(t.data_type, aclDataType):
        problems.append(f"dataType {t.data_type!r} (an aclDataType)")
    if not isinstance(t.format, aclFormat):
        problems.append(f"format {t.format!r} (an aclFormat)")
    if not _is_int(t.tensor_data) or t.tensor_data < 0:
        problems.append(f"tensorData {t.tensor_data!r} (an int device address)")
    if problems:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} is not a well-formed aclTensor: "
                         f"bad {'; bad '.join(problems)}")


def objects(*args) -> None:
    """Check ``(name, object, cls)`` triples (or ``(name, object, cls, hint)``, the hint
    ending the message of an object that is not a ``cls``): the nulls first, then the
    objects.

    * 161001 for the first argument that is None ("Expected a proper Tensor but got null
      for argument ...", the ``OP_CHECK_NULL`` message of ops-nn), checked over all the
      arguments before anything else, as ``CheckNotNull`` does;
    * 161002 for one that is not a ``cls`` (aclTensor, aclScalar...), that was destroyed
      (aclDestroyTensor / aclDestroyScalar), or -- for a tensor -- that is not well
      formed (:func:`well_formed`) [R: Python-only cases, see the module docstring].
    """
    for name, obj, cls, *_ in args:
        if obj is None:
            what = "Tensor" if cls is aclTensor else cls.__name__.removeprefix("acl")
            raise ParamError(ACLNN_ERR_PARAM_NULLPTR,
                             f"Expected a proper {what} but got null for argument {name}.")
    for name, obj, cls, *hint in args:
        if not isinstance(obj, cls):
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} must be an {cls.__name__}, got "
                             f"{type(obj).__name__}{''.join(hint)}")
        if obj.destroyed:
            destroy = "aclDestroyTensor" if cls is aclTensor else "aclDestroyScalar"
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} was destroyed ({destroy})")
        if cls is aclTensor:
            well_formed(name, obj)


def not_null(scalar_inputs=(), **tensors) -> None:
    """Every keyword is a tensor argument: 161001 for None, then 161002 for an object
    that is not a live, well-formed aclTensor (see :func:`objects`). The message for a
    name in ``scalar_inputs`` given in another form (a number, an aclScalar) says what to
    pass instead (:data:`SCALAR_INPUT_RULE`)."""
    hint = f"; {SCALAR_INPUT_RULE}"
    objects(*((name, t, aclTensor, hint if name in scalar_inputs else "")
              for name, t in tensors.items()))


#: How an optimizer's scalar inputs (lr, beta1, epsilon...) are passed to the aclnn layer:
#: one-element aclTensors on the device, of the updated tensor's dtype -- aclnnApplyAdamW
#: takes beta1Power, beta2Power, lr, weightDecay, beta1, beta2 and eps so ("shape要求为[1]",
#: dtype "与varRef保持一致", 161002 when "shape大小不为1"; ops-nn
#: optim/apply_adam_w/docs/aclnnApplyAdamW.md). docs/tutorial.md §10.
SCALAR_INPUT_RULE = ("pass a scalar input as a one-element aclTensor (shape [1]) of the updated "
                     "tensor's dtype in device memory, as aclnnApplyAdamW takes lr and the "
                     "betas; Python numbers and aclScalar are not accepted")


def scalar_tensors(ref_name: str, ref, **scalars) -> None:
    """161002 unless each scalar input is a one-element aclTensor (at most 8 dims, as
    every aclnn tensor) with ``ref``'s dtype (:data:`SCALAR_INPUT_RULE`)."""
    for name, t in scalars.items():
        if t.data_type != ref.data_type:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has dtype {t.data_type.name} "
                             f"but {ref_name} has {ref.data_type.name}; they must be equal")
        if t.numel() != 1:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has shape {list(t.view_dims)} "
                             f"({t.numel()} elements); it must be a scalar of one element")
        ndim_between(name, t, 0, 8)


def device():
    """This thread's current device, or 361001 when it has none (acl.init and
    acl.rt.set_device or acl.rt.set_context not called in this thread)."""
    dev = runtime.current_device()
    if dev is None:
        raise ParamError(ACLNN_ERR_RUNTIME_ERROR, runtime.no_context_reason())
    return dev


def dtype_in(name: str, t, allowed) -> None:
    if t.data_type not in allowed:
        names = ", ".join(a.name for a in allowed)
        raise ParamError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} has dtype {t.data_type.name}; supported: {names}")


def same_dtype_shape(ref_name: str, ref, **tensors) -> None:
    for name, t in tensors.items():
        if t.data_type != ref.data_type:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has dtype {t.data_type.name} but "
                             f"{ref_name} has {ref.data_type.name}; they must be equal")
        if t.view_dims != ref.view_dims:
            raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} has shape {list(t.view_dims)} but "
                             f"{ref_name} has {list(ref.view_dims)}; they must be equal")


def ndim_between(name: str, t, lo: int, hi: int) -> None:
    if not lo <= t.ndim <= hi:
        raise ParamError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} has {t.ndim} dimensions; expected {lo} to {hi}")


def nd_format(name: str, t) -> None:
    if t.format not in ND_COMPATIBLE:
        raise ParamError(ACLNN_ERR_PARAM_INVALID,
                         f"{name} has format {t.format.name}; only ND (and plain NCHW-style) "
                         "formats are supported")


def in_storage(name: str, t) -> None:
    """161002 when the view reaches outside its storage.

    Every element the view addresses, ``offset + sum(i_k * strides[k])``, must lie in
    ``[0, prod(storageDims))`` (:meth:`aclTensor.in_storage_bounds`). CANN does not
    check it and reads whatever the strides point at; here such a descriptor is a
    parameter error, so the kernel never touches bytes the caller did not describe [R].
    """
    if not t.in_storage_bounds():
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name}'s view (shape {list(t.view_dims)}, "
                         f"strides {list(t.strides)}, offset {t.offset}) reaches outside its "
                         f"storage of {list(t.storage_dims)} = {t.storage_numel()} elements")


def contiguous_on_device(name: str, t, dev) -> None:
    """The view stays inside its storage (:func:`in_storage`), is contiguous, and its bytes
    lie inside one live device allocation (a freed or foreign pointer is 161002)."""
    in_storage(name, t)
    if not t.is_contiguous():
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} is not contiguous (strides "
                         f"{list(t.strides)} for shape {list(t.view_dims)}); this simulator "
                         "runs the operator on contiguous tensors only")
    nbytes = t.view_nbytes()
    if nbytes and not dev.gm.contains(t.data_address(), nbytes):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name}'s data 0x{t.data_address():x} + "
                         f"{nbytes} B is not inside one device allocation (aclrtMalloc)")


def number(name: str, value) -> float:
    """A ``double`` attribute: a real number (not a bool) that fits a double; 161002 else."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} = {value} does not fit a double "
                         "(C's type of the attribute)") from None


def boolean(name: str, value) -> bool:
    """A ``bool`` attribute: True/False (Python or numpy) or the ints 0 and 1; 161002 else
    [R: C's bool cannot hold anything else, so other Python values are rejected rather
    than tested for truth]."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if _is_int(value) and value in (0, 1):
        return bool(value)
    raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{name} must be a bool, got {value!r}")


# -- aliasing --------------------------------------------------------------------------------
#: The exact overlap test enumerates at most this many contiguous runs of each view inside
#: the two views' common byte window; beyond it the views are taken to overlap (see
#: :func:`overlap`).
MAX_RUNS = 1 << 20


def _layout(t):
    """The bytes a view addresses as ``(base, dims, run)``: every ``base + sum(i_k * s_k)``
    for ``0 <= i_k < n_k`` over ``dims = ((n_k, s_k), ...)`` (byte strides, largest first)
    starts a run of ``run`` bytes. Size-1 and stride-0 dims are dropped (they repeat the
    same bytes), negative strides flipped, dims that tile each other merged, and a
    contiguous innermost dim folded into the run. None for an empty view."""
    if t.is_empty():
        return None
    isz = t.itemsize
    base = t.data_address()
    dims = []
    for n, s in zip(t.view_dims, t.strides):
        if n == 1 or s == 0:
            continue
        s *= isz
        if s < 0:
            base += (n - 1) * s
            s = -s
        dims.append((n, s))
    dims.sort(key=lambda d: -d[1])
    merged = []
    for n, s in dims:
        if merged and merged[-1][1] == n * s:          # the outer dim steps over this one
            merged[-1] = (merged[-1][0] * n, s)
        else:
            merged.append((n, s))
    run = isz
    if merged and merged[-1][1] == isz:
        run = merged.pop()[0] * isz
    return base, tuple(merged), run


def _bounds(t):
    """``[first byte, last byte + 1)`` of a view, or None when it is empty."""
    lo = hi = 0
    for n, st in zip(t.view_dims, t.strides):
        if n == 0:
            return None
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    isz = t.itemsize
    base = t.data_address()
    return base + lo * isz, base + (hi + 1) * isz


def _runs(layout, lo: int, hi: int):
    """The start addresses of the runs of ``layout`` that touch ``[lo, hi)``, or None when
    there are more than :data:`MAX_RUNS`. Dim by dim, largest stride first, only the
    indices whose remaining sub-view can reach the window are kept, so the work is the
    number of runs near the window, not the view's size."""
    base, dims, run = layout
    starts = np.array([base], dtype=np.int64)
    extent = [run]                                      # bytes below a start, per level
    for n, s in reversed(dims):
        extent.append(extent[-1] + (n - 1) * s)
    extent.reverse()                                    # extent[k]: dims k.. and the run
    for k, (n, s) in enumerate(dims):
        rest = extent[k + 1]
        first = np.clip((lo - rest - starts) // s + 1, 0, n)     # start + i*s + rest > lo
        stop = np.clip(-((starts - hi) // s), 0, n)              # start + i*s < hi
        count = np.maximum(stop - first, 0)
        total = int(count.sum())
        if total > MAX_RUNS:
            return None
        # the ragged ranges first[j] .. stop[j] of every start, flattened
        owner = np.repeat(np.arange(starts.size), count)
        step = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
        starts = starts[owner] + (first[owner] + step) * s
    return starts


def overlap(a, b) -> bool:
    """Whether aclTensors ``a`` and ``b`` address a common device byte.

    Exact for views of any strides: two views of one allocation that share no byte (row
    slices, interleaved columns, the real and the imaginary halves...) do not overlap.
    First the byte spans are compared; when they meet and both views are dense (their
    bytes fill their spans), they overlap. Then the bytes modulo the gcd ``g`` of all the
    strides: each view's lie in one residue interval ``base + [0, run)`` mod ``g``, and
    disjoint intervals mean no common byte (interleaved columns of any size). Otherwise
    the runs of contiguous bytes each view has inside the common window are listed with
    numpy and intersected. Only when a view has more than :data:`MAX_RUNS` runs in that
    window is the answer the conservative "they overlap" [R: the exact test, and that
    bound, are the simulator's].
    """
    return _overlap(a, b, _bounds(a), _bounds(b))


def _overlap(a, b, sa, sb) -> bool:
    """:func:`overlap` given the views' :func:`_bounds`."""
    if sa is None or sb is None or sa[1] <= sb[0] or sb[1] <= sa[0]:
        return False                                   # the common case: cheap
    la, lb = _layout(a), _layout(b)
    lo, hi = max(sa[0], sb[0]), min(sa[1], sb[1])
    if not la[1] and not lb[1]:                        # two runs: each fills its span
        return True
    # every byte of a view is base + (a multiple of g) + [0, run): views whose residues
    # modulo g are disjoint share no byte (interleaved columns, real/imaginary parts)
    g = math.gcd(*(s for _, s in la[1] + lb[1]))
    if (lb[0] - la[0]) % g >= la[2] and (la[0] - lb[0]) % g >= lb[2]:
        return False
    ra, rb = _runs(la, lo, hi), _runs(lb, lo, hi)
    if ra is None or rb is None:
        return True
    if ra.size == 0 or rb.size == 0:
        return False
    # a's runs as a union of disjoint intervals, then each run of b against its neighbour
    ra = np.sort(ra)
    ends = np.maximum.accumulate(ra + la[2])
    i = np.searchsorted(ra, rb + lb[2], side="left") - 1     # a's last run starting before b's end
    hit = (i >= 0) & (ends[np.maximum(i, 0)] > rb)
    return bool(hit.any())


def same_elements(a, b) -> bool:
    """Whether ``a`` and ``b`` address the same bytes element for element, in the same
    order: the same first address, element size, and dims with their strides once the
    dims of size 1 are dropped (``(8,)`` and ``(1, 8)`` of one buffer are the same)."""
    def dims(t):
        return [(n, s) for n, s in zip(t.view_dims, t.strides) if n != 1]
    return (a.data_address() == b.data_address() and a.itemsize == b.itemsize
            and dims(a) == dims(b))


def _byte_range(t) -> str:
    lo, hi = _bounds(t)
    return f"[0x{lo:x}, 0x{hi:x})"


def no_aliasing(outputs: dict, elementwise: dict | None = None, whole: dict | None = None) -> None:
    """161002 when an output shares device memory with what the operator still reads.

    Args:
        outputs: ``{name: aclTensor}`` the operator writes (in-place ``Ref`` tensors
            included). No two may share a byte: which write lands last is not defined.
        elementwise: ``{name: aclTensor}`` inputs the kernel reads tile by tile at the
            positions it writes the outputs (each tile read before it is written): an
            output may be exactly such an input (:func:`same_elements`: in place), but may
            not overlap it otherwise (a shifted or reinterpreted view would read bytes
            another tile, or core, has already written).
        whole: ``{name: aclTensor}`` inputs read by every core or out of order (scalars,
            a broadcast gamma, the matrices of a product, gathered rows): no output may
            share a byte with them.

    Inputs the operator first copies into its workspace (Contiguous, Cast, Sort...) by an
    earlier kernel of its chain are not listed: they are read before any output changes.
    The message names both arguments [R: CANN does not check aliasing; the simulator
    refuses what would give a wrong result].
    """
    elementwise, whole = elementwise or {}, whole or {}
    bounds = {id(t): _bounds(t) for t in (*outputs.values(), *elementwise.values(),
                                           *whole.values())}

    def overlap(a, b):
        return _overlap(a, b, bounds[id(a)], bounds[id(b)])

    names = list(outputs)
    for i, x in enumerate(names):
        for y in names[i + 1:]:
            if overlap(outputs[x], outputs[y]):
                raise ParamError(ACLNN_ERR_PARAM_INVALID, f"the outputs {x} {_byte_range(outputs[x])} "
                                 f"and {y} {_byte_range(outputs[y])} overlap in device memory: "
                                 "each must have memory of its own")
    for out_name, out in outputs.items():
        for name, t in elementwise.items():
            if overlap(out, t) and not same_elements(out, t):
                raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{out_name} {_byte_range(out)} "
                                 f"partially overlaps {name} {_byte_range(t)}: an output may "
                                 f"be exactly the input {name} (same address, dtype size, shape "
                                 "and strides) or share no byte with it, since the kernel "
                                 f"would read bytes of {name} it has already overwritten")
        for name, t in whole.items():
            if overlap(out, t):
                raise ParamError(ACLNN_ERR_PARAM_INVALID, f"{out_name} {_byte_range(out)} "
                                 f"overlaps {name} {_byte_range(t)} in device memory: the "
                                 f"kernel reads {name} while it writes {out_name}, so the result "
                                 "would be wrong; give them separate memory")


def aliasing(outputs: dict, elementwise: dict | None = None, whole: dict | None = None):
    """The rule of :func:`no_aliasing` over these tensors as a function of no arguments
    that returns the message of the first violation, or None. The first phase raises it
    as a :class:`ParamError`; the executor keeps it (``aclOpExecutor.alias_check``) so
    that the second phase checks again after ``aclSetInputTensorAddr`` /
    ``aclSetOutputTensorAddr`` moved a tensor."""
    def problem():
        try:
            no_aliasing(outputs, elementwise, whole)
        except ParamError as exc:
            return str(exc)
        return None
    return problem


def check_aliasing(rule) -> None:
    """Raise :func:`aliasing`'s message as 161002."""
    message = rule()
    if message is not None:
        raise ParamError(ACLNN_ERR_PARAM_INVALID, message)
