"""The ``asc`` namespace a pyasc kernel sees on npusim: pyasc's names, npusim's machine.

Every name of pyasc's ``asc.language`` (basic, framework, core) and ``asc.language.adv``
is bound to one of:

* npusim's Ascend C function of the same API (``asc.add`` -> ``Add``, ``asc.data_copy`` ->
  ``DataCopy``, ``asc.adv.softmax`` -> ``SoftMax``...) behind an adapter that maps pyasc's
  argument order onto the C++ one (see :func:`_map_args`);
* npusim's parameter struct of the same name (``asc.BinaryRepeatParams(dst_blk_stride=...)``
  -> ``BinaryRepeatParams(dstBlkStride=...)``), fields matched by name;
* a value type of :mod:`npusim.pyasc._values` (tensors, queues, the pipe, scalars);
* pyasc's own enums, data types and constants (converted by name where npusim takes them);
* or, for an API npusim does not implement, a stub that raises
  :class:`PyascNotSupported` naming it (``asc.fused_mul_add_relu``...).

Argument order (pyasc's docs/python-api conventions): pyasc lists runtime-required,
template-required, runtime-optional, then template-optional parameters; npusim takes C++'s
runtime parameters in order and template parameters as keyword arguments
(``isSetMask=``, ``taylorExpandLevel=``). So a pyasc parameter whose name matches a keyword
parameter of npusim's function is passed by keyword; the others positionally, in order;
an optional temporary buffer (``temp_buffer``) goes where Ascend C puts
``sharedTmpBuffer``, right after the tensor operands.
"""
from __future__ import annotations

import enum
import functools
import inspect
import types
import typing

import npusim.ascendc as _N
from npusim.ascendc import core as _core
from npusim.errors import KernelError
from npusim.pyasc import _values as V

_EMPTY = inspect.Parameter.empty


class PyascNotSupported(KernelError):
    """A pyasc API (or one of its options) that npusim does not implement."""

    category = "pyasc"


def not_supported(api: str, what: str = "") -> PyascNotSupported:
    rule = f"not yet supported by npusim: {api}" + (f" ({what})" if what else "")
    return PyascNotSupported(api, rule)


# -- names ------------------------------------------------------------------------------------
def camel(name: str) -> str:
    """pyasc's snake_case name -> Ascend C's CamelCase (``whole_reduce_sum`` -> ``WholeReduceSum``)."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def _norm(name: str) -> str:
    return name.replace("_", "").lower()


#: pyasc names whose Ascend C name is not their CamelCase (pyasc docstrings' C++ prototypes).
CPP_NAMES = {"bitwise_and": "And", "bitwise_or": "Or", "bitwise_not": "Not",
             "softmax": "SoftMax", "rmsnorm": "RmsNorm", "sort32": "Sort32",
             "gatherb": "Gatherb", "get_tpipe_ptr": "GetTPipePtr",
             "quant": "AscendQuant", "QuantConfig": "AscendQuantConfig"}
#: pyasc template-parameter names whose Ascend C name is not is+CamelCase of them.
TEMPLATE_NAMES = {"reuse_source": "isReuseSource", "basic_block": "isBasicBlock",
                  "data_format_nz": "isDataFormatNZ"}
#: pyasc enum classes whose npusim counterpart has another name.
ENUM_NAMES = {"PipeID": "Pipe", "SelMode": "SELMODE", "QuantModes": "QuantMode_t"}
_TMP_BUFFERS = ("temp_buffer", "shared_tmp_buffer", "tmp_buffer")


# -- argument conversion ---------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _npusim_enum(cls: type):
    target = getattr(_N, ENUM_NAMES.get(cls.__name__, cls.__name__), None)
    return target if isinstance(target, type) and issubclass(target, enum.Enum) else None


def convert(value):
    """A pyasc kernel value as npusim's Ascend C functions take it."""
    if isinstance(value, V.LocalTensor):
        return value.t
    if isinstance(value, V.GlobalTensor):
        return value.g
    if isinstance(value, V.GlobalAddress):
        return value.address
    if isinstance(value, enum.Enum):
        target = _npusim_enum(type(value))
        if target is None:
            return value
        try:
            return target[value.name]
        except KeyError:
            raise not_supported(f"{type(value).__name__}.{value.name}") from None
    if isinstance(value, (list, tuple)):
        return [convert(v) for v in value]
    if type(value).__module__.startswith("asc.language.core.dtype"):
        return V.np_dtype(value)
    if isinstance(value, V.StructView):
        return npusim_struct(value.host)
    if hasattr(type(value), "struct_fields"):     # a Struct built in the kernel (a tiling)
        return npusim_struct(value)
    return value


#: pyasc Struct classes whose npusim counterpart has another name.
STRUCT_NAMES = {"SoftmaxTiling": "SoftMaxTiling"}


def npusim_struct(struct):
    """A pyasc host ``Struct`` (a tiling) as npusim's dataclass of the same C++ name, field
    by field (pyasc's fields carry the C++ names: ``src_m`` is ``srcM``)."""
    name = type(struct).__name__
    target = getattr(_N, STRUCT_NAMES.get(name, name), None)
    if target is None:
        raise not_supported(f"asc.adv.{name}", "npusim has no such struct")
    names = set(inspect.signature(target).parameters)
    values = {}
    for py_name, field in type(struct).struct_fields.items():
        cpp = field.ir_name(py_name)
        if cpp in names:
            values[cpp] = getattr(struct, py_name)
    return target(**values)


# -- function adapters ----------------------------------------------------------------------------
def _signatures(fn) -> list[inspect.Signature]:
    """pyasc's documented forms of ``fn``: its @overload signatures, else its own."""
    forms = typing.get_overloads(fn) or [fn]
    return [inspect.signature(f) for f in forms]


def _keyword_params(target) -> tuple[dict, int]:
    """npusim function's keyword-only parameters (normalised name -> name) and how many
    positional parameters it requires."""
    try:
        params = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return {}, 0
    kw = {_norm(p.name): p.name for p in params if p.kind is p.KEYWORD_ONLY}
    required = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                   and p.default is _EMPTY)
    return kw, required


def _template_key(name: str, kw: dict) -> str | None:
    """npusim's keyword for pyasc parameter ``name``, if npusim takes it as a template one."""
    alias = TEMPLATE_NAMES.get(name)
    if alias is not None and _norm(alias) in kw:
        return kw[_norm(alias)]
    return kw.get(_norm(name)) or kw.get("is" + _norm(name))


def _is_template_like(p: inspect.Parameter) -> bool:
    """pyasc's optional template parameters: boolean switches (is_set_mask, cal_index...)."""
    return isinstance(p.default, bool) and p.kind is p.POSITIONAL_OR_KEYWORD


def _bind(api: str, sigs, args, kwargs) -> tuple[inspect.Signature, dict]:
    for sig in sigs:
        try:
            return sig, sig.bind(*args, **kwargs).arguments
        except TypeError:
            continue
    forms = "; ".join(f"asc.{api}{s}" for s in sigs)
    raise KernelError(api, f"the arguments match no form of asc.{api} (pyasc's forms: {forms})")


def _tmp_position(target) -> int | None:
    """Where npusim's function takes its temporary buffer among its positional parameters,
    when it names one (BilinearInterpolation's sharedTmpBuffer is its last); None: right
    after the tensor operands, as most Ascend C APIs take it."""
    try:
        params = [p for p in inspect.signature(target).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    names = {_norm(n) for n in _TMP_BUFFERS}
    return next((i for i, p in enumerate(params) if _norm(p.name) in names), None)


def _map_args(api: str, sigs, kw: dict, required: int, args, kwargs,
              tmp_at: int | None = None) -> tuple[list, dict]:
    """pyasc call -> (positional, keyword) arguments of npusim's function (module doc)."""
    sig, bound = _bind(api, sigs, args, kwargs)
    pos, out_kw, pending, tmp = [], {}, [], None
    for name, p in sig.parameters.items():
        given = name in bound
        value = bound.get(name, p.default)
        if p.kind is p.VAR_POSITIONAL:
            pos.extend(convert(v) for v in value)
            continue
        if p.kind is p.VAR_KEYWORD:
            out_kw.update({k: convert(v) for k, v in value.items()})
            continue
        key = _template_key(name, kw)
        if key is not None:
            if given:
                out_kw[key] = convert(value)
            continue
        if name in _TMP_BUFFERS:
            tmp = convert(value) if given and value is not None else None
            continue
        if _is_template_like(p):
            if given and bool(value) != p.default:
                raise not_supported(f"asc.{api}", f"{name}={value!r} is not modelled")
            continue
        if not given:
            pending.append(p.default)
            continue
        pos.extend(convert(v) for v in pending)     # defaults before a later given argument
        pending = []
        pos.append(convert(value))
    while len(pos) < required and pending and pending[0] not in (None, _EMPTY):
        pos.append(convert(pending.pop(0)))
    if tmp is not None:                               # Ascend C: after the tensor operands
        n = 0
        while n < len(pos) and isinstance(pos[n], _N.LocalTensor):
            n += 1
        pos.insert(n if tmp_at is None else min(tmp_at, len(pos)), tmp)
    return pos, out_kw


def adapter(api: str, pyasc_fn, target):
    """A pyasc function bound to npusim's ``target`` (module doc for the argument order)."""
    sigs = _signatures(pyasc_fn)
    kw, required = _keyword_params(target)
    tmp_at = _tmp_position(target)

    def call(*args, **kwargs):
        pos, kws = _map_args(api, sigs, kw, required, args, kwargs, tmp_at)
        return V.wrap(target(*pos, **kws))

    call.__name__ = api.rsplit(".", 1)[-1]
    call.__qualname__ = f"asc.{api}"
    call.__doc__ = (f"``asc.{api}`` on npusim: :func:`npusim.ascendc.{target.__name__}` "
                    f"(pyasc's forms: {'; '.join(str(s) for s in sigs)}).")
    call.npusim_target = target
    return call


def struct_adapter(api: str, pyasc_cls, target):
    """A pyasc parameter struct (``asc.DataCopyParams(block_count=...)``) built as npusim's
    ``target`` dataclass, fields matched by name (``block_count`` -> ``blockCount``)."""
    sig = inspect.signature(pyasc_cls.__init__)
    params = [p for name, p in sig.parameters.items() if name not in ("self", "handle")]
    sig = sig.replace(parameters=params)
    fields = {_norm(name): name for name in inspect.signature(target).parameters}

    def make(*args, **kwargs):
        bound = sig.bind(*args, **kwargs).arguments
        out = {}
        for name, value in bound.items():
            field = fields.get(_norm(name))
            if field is None:
                if name != "dtype":      # DataCopyPadExtParams' dtype: a template argument
                    raise not_supported(f"asc.{api}", f"field {name}")
                continue
            out[field] = convert(value)
        return target(**out)

    make.__name__ = make.__qualname__ = api
    make.__doc__ = f"``asc.{api}`` on npusim: :class:`npusim.ascendc.{target.__name__}`."
    make.npusim_target = target
    return make


def stub(api: str, cpp: str | None = None):
    """An ``asc`` API npusim lacks: calling it raises :class:`PyascNotSupported`."""
    def missing(*args, **kwargs):
        raise not_supported(f"asc.{api}", f"Ascend C {cpp}" if cpp else "")
    missing.__name__ = api.rsplit(".", 1)[-1]
    missing.__qualname__ = f"asc.{api}"
    missing.__doc__ = f"``asc.{api}``: not implemented by npusim (raises PyascNotSupported)."
    missing.npusim_missing = True
    return missing


# -- APIs with no one-to-one npusim function -------------------------------------------------------
def get_block_idx() -> V.Int:
    return V.Int(_core.GetBlockIdx())


def get_block_num() -> V.Int:
    return V.Int(_core.GetBlockNum())


def ascend_is_aic() -> bool:
    """``asc.ascend_is_aic()``: this block runs on a cube core (ASCEND_IS_AIC)."""
    return _core.current_core().core_kind == _core.AIC


def ascend_is_aiv() -> bool:
    """``asc.ascend_is_aiv()``: this block runs on a vector core (ASCEND_IS_AIV)."""
    return _core.current_core().core_kind == _core.AIV


def set_sys_workspace(workspace) -> None:
    """``SetSysWorkspace``: remember the system workspace (the Matmul API's GM scratch; a
    second call keeps the first, :func:`npusim.ascendc.crosscore.SetSysWorkspace`)."""
    from npusim.ascendc.crosscore import SetSysWorkspace
    SetSysWorkspace(convert(workspace))


def get_sys_workspace():
    """``GetSysWorkspacePtr``: what set_sys_workspace stored (a GlobalAddress of uint8)."""
    ws = getattr(_core.current_core(), "sys_workspace", None)
    if ws is None:
        raise KernelError("GetSysWorkspacePtr", "set_sys_workspace was not called in this kernel")
    from asc.language.core.dtype import KnownTypes
    return V.GlobalAddress(ws, KnownTypes.uint8)


def prop(p) -> V.Int:
    """``asc.property(asc.DEFAULT_C0_SIZE)``: an Ascend C platform constant."""
    soc = _core.current_core().soc
    values = {"DEFAULT_C0_SIZE": 32, "ONE_BLK_SIZE": 32, "TOTAL_L1_SIZE": soc.l1_size,
              "TOTAL_L0C_SIZE": soc.l0_c_size}
    name = p.name.rsplit("::", 1)[-1]
    if name not in values:
        raise not_supported(f"asc.property({name})")
    return V.Int(values[name])


def printf(desc: str, *params) -> None:
    """``AscendC::printf`` (DumpTensor's sibling): printed on the host, block first."""
    text = desc.replace("%s", "{}").replace("%d", "{}").replace("%f", "{}").replace("%u", "{}")
    print(f"[block {_core.GetBlockIdx()}] " + text.format(*params))


def dump_tensor(tensor, desc, dump_size, shape_info=None) -> None:
    """``DumpTensor``: print the first ``dump_size`` elements on the host (costs nothing)."""
    t = convert(tensor)
    n = int(dump_size)
    if isinstance(t, _N.LocalTensor):
        data = t.elements(n, "DumpTensor").copy()
    else:
        data = t.bytes_view(n * t.dtype.itemsize, "DumpTensor", None).view(t.dtype)
    print(f"[block {_core.GetBlockIdx()}] DumpTensor desc={int(desc)}: {data}")


def trans_data_to_5hd(dst_or_list, src_or_list, params) -> None:
    """``asc.trans_data_to_5hd``: :func:`npusim.ascendc.TransDataTo5HD` in its three forms
    (16 LocalTensors, 16 addresses, a uint64 LocalTensor of 16 addresses). For the address
    forms the element type is, as pyasc's code generator infers it, that of the tensors
    whose ``get_phy_addr()`` gave the addresses."""
    name = "TransDataTo5HD"
    dtype = None
    if isinstance(dst_or_list, V.LocalTensor):
        known = V.addr_types(_core.current_core())
        for lst in (dst_or_list, src_or_list):
            t = lst.t
            for i in range(_N.NCHW_CONV_ADDR_LIST_SIZE):
                dtype = dtype or known.get(t.offset + 8 * i)
        if dtype is None:
            raise KernelError(name, "the uint64 address tensors hold no get_phy_addr() values "
                              "set with set_value: the element type of TransDataTo5HD<T> is "
                              "unknown (pyasc infers it from those)", pipe="PIPE_V")
    elif dst_or_list and not isinstance(dst_or_list[0], V.LocalTensor):
        dtype = next((a.dtype for a in (*dst_or_list, *src_or_list)
                      if isinstance(a, V.PhyAddr)), None)
        if dtype is None:
            raise KernelError(name, "the address lists hold no get_phy_addr() values: the "
                              "element type of TransDataTo5HD<T> is unknown", pipe="PIPE_V")
    _N.TransDataTo5HD(convert(dst_or_list), convert(src_or_list), convert(params), dtype=dtype)


def set_aipp_functions(*args) -> None:
    """``asc.set_aipp_functions(src0[, src1], input_format, config)``:
    :func:`npusim.ascendc.SetAippFunctions` (the ``asc.Aipp*Params`` are kept as given)."""
    _N.SetAippFunctions(*[convert(a) for a in args])


def aipp_params(dtype, padding_params=None, swap_params=None, single_line_params=None,
                dtc_params=None, c_padding_params=None, csc_params=None):
    """``asc.AippParams(dtype, ...)``: :class:`npusim.ascendc.AippParams` (pyasc's
    parameter groups kept as they are)."""
    return _N.AippParams(V.np_dtype(dtype), padding_params, swap_params, single_line_params,
                         dtc_params, c_padding_params, csc_params)


def static_assert(cond, msg: str = "") -> None:
    if not cond:
        raise AssertionError(msg or "static_assert failed")


def pyasc_range(*args):
    """``range``/``asc.range``/``asc.static_range`` in a kernel: loop indices are Ints."""
    return map(V.Int, range(*[int(a) for a in args]))


SPECIAL = {
    "get_block_idx": get_block_idx, "get_block_num": get_block_num,
    "ascend_is_aic": ascend_is_aic, "ascend_is_aiv": ascend_is_aiv,
    "set_sys_workspace": set_sys_workspace, "get_sys_workspace": get_sys_workspace,
    "property": prop, "printf": printf, "dump_tensor": dump_tensor,
    "static_assert": static_assert, "ceildiv": V.ceildiv,
    "trans_data_to_5hd": trans_data_to_5hd, "set_aipp_functions": set_aipp_functions,
    "AippParams": aipp_params,
    "range": pyasc_range, "static_range": pyasc_range,
    "GlobalTensor": V.GlobalTensor, "LocalTensor": V.LocalTensor, "GlobalAddress": V.GlobalAddress,
    "TPipe": V.TPipe, "LocalTensorAuto": V.LocalTensorAuto, "TQue": V.TQue, "TQueBind": V.TQueBind, "TBuf": V.TBuf,
    "get_tpipe_ptr": V.get_tpipe_ptr, "array": V.array, "ShapeInfo": V.ShapeInfo,
}

#: pyasc names that are types, constants or helpers usable as they are.
_PASS_THROUGH = ("ConstExpr", "DataType", "inline", "number", "Property",
                 # AIPP's parameters: plain values SetAippFunctions keeps for LoadImageToLocal
                 "AippPaddingParams", "AippSwapParams", "AippSingleLineParams",
                 "AippDataTypeConvParams", "AippChannelPaddingParams",
                 "AippColorSpaceConvParams")


def _bind_name(api: str, obj, lookup_name: str | None = None):
    """The npusim binding of one pyasc name (see the module doc)."""
    short = api.rsplit(".", 1)[-1]
    if api.startswith("adv."):
        from npusim.pyasc._matmul import ADV
        if short in ADV:
            return ADV[short]
        if short == "MatmulType":        # a plain dataclass: asc.adv.Matmul converts it
            return obj
    elif short in SPECIAL:
        return SPECIAL[short]
    if isinstance(obj, type) and issubclass(obj, enum.Enum):
        return obj
    if short in _PASS_THROUGH or type(obj).__module__.startswith("asc.language.core.dtype"):
        return obj
    if type(obj).__name__ == "Property" or isinstance(obj, (int, float, str)):
        return obj
    cpp = lookup_name or CPP_NAMES.get(short, camel(short))
    target = getattr(_N, cpp, None) if cpp in _N.__all__ else None
    if isinstance(obj, type):
        if target is not None and isinstance(target, type):
            return struct_adapter(api, obj, target)
        if hasattr(obj, "struct_fields"):      # a host-side Struct (tilings): pyasc's own
            return obj
        return stub(api, cpp)
    if callable(obj):
        if target is not None and callable(target):
            return adapter(api, obj, target)
        return stub(api, cpp)
    return obj


class Namespace(types.SimpleNamespace):
    """A namespace whose unknown attributes name the missing API."""

    def __getattr__(self, name: str):
        raise AttributeError(f"asc.{name}: not a pyasc API npusim knows (npusim.pyasc)")


def build_namespace() -> Namespace:
    """The ``asc`` object a kernel sees: every pyasc language name bound for npusim, with
    ``adv`` (the high-level APIs) and the submodules ``basic``, ``core``, ``fwk``,
    ``language`` pointing at the same names."""
    import asc.language as L
    import asc.language.adv as A
    root = Namespace()
    for name in L.__all__:
        if name in ("adv", "basic", "core", "fwk"):
            continue
        setattr(root, name, _bind_name(name, getattr(L, name)))
    adv = Namespace()
    for name in A.__all__:
        setattr(adv, name, _bind_name(f"adv.{name}", getattr(A, name)))
    for name in ("range", "static_range"):
        setattr(root, name, pyasc_range)
    root.adv = adv
    for sub in ("basic", "core", "fwk", "language"):
        setattr(root, sub, root)
    return root


@functools.lru_cache(maxsize=1)
def namespace() -> Namespace:
    """The shared ``asc`` namespace (built once)."""
    return build_namespace()


def coverage() -> dict[str, list[str]]:
    """Which pyasc APIs run on npusim: {"mapped": [...], "missing": [...]} (functions and
    parameter structs; enums, dtypes and constants pass through)."""
    ns = namespace()
    mapped, missing = [], []
    for prefix, space in (("", ns), ("adv.", ns.adv)):
        for name, obj in vars(space).items():
            if not callable(obj) or isinstance(obj, Namespace) or isinstance(obj, type):
                continue
            (missing if getattr(obj, "npusim_missing", False) else mapped).append(prefix + name)
    # asc.adv.Matmul's methods: those npusim's Matmul defines, and pyasc's others
    import asc.language.adv as pyasc_adv
    from npusim.pyasc._matmul import Matmul
    mapped.append("adv.Matmul")
    for name in vars(pyasc_adv.Matmul):
        if not name.startswith("_") and name not in ("from_ir", "to_ir"):
            (mapped if name in vars(Matmul) else missing).append(f"adv.Matmul.{name}")
    return {"mapped": sorted(mapped), "missing": sorted(missing)}


__all__ = ["PyascNotSupported", "namespace", "coverage", "camel", "convert", "npusim_struct"]
