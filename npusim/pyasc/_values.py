"""The values a pyasc kernel computes with, when it runs on npusim.

In pyasc a kernel's runtime values are IR values: ``PlainValue`` (an int32 or float32
scalar), ``GlobalAddress`` (a typed GM pointer), ``GlobalTensor``/``LocalTensor`` handles,
``Struct`` members. Here they are the Python objects below, each carrying the same methods
(``PlainValue.ceildiv``, ``GlobalAddress + n``, ``tensor[i:]``, ``x.dtype.sizeof()``...)
around npusim's own objects (:mod:`npusim.ascendc.tensor`, :mod:`npusim.ascendc.pipe`).

Sources: pyasc's ``asc/language/core/ir_value.py`` (PlainValue arithmetic: ``/`` and ``//``
are ``arith.divsi``, ``%`` is ``arith.remsi`` — C semantics, truncating toward zero),
``core/tensor.py`` (``tensor[i]`` and ``tensor[i:]`` are Ascend C's ``operator[]``),
``fwk/tpipe.py`` (TPipe/TQue/TBuf methods).
"""
from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import pipe as _pipe
from npusim.ascendc import shapeinfo as _shapeinfo
from npusim.ascendc import tensor as _tensor
from npusim.ascendc.types import HardEvent, TPosition
from npusim.errors import KernelError

# -- data types ---------------------------------------------------------------------------
_NP_BY_NAME = {"bfloat16": np.dtype(ml_dtypes.bfloat16), "int1": np.dtype(np.bool_),
               "bool": np.dtype(np.bool_)}


def np_dtype(dtype) -> np.dtype:
    """numpy dtype of a pyasc ``DataType`` (``asc.float16``...), a numpy dtype or a name."""
    name = getattr(dtype, "name", None)
    if isinstance(name, str) and not isinstance(dtype, np.dtype):
        return _NP_BY_NAME.get(name) or np.dtype(name)
    return np.dtype(dtype)


def asc_dtype(dtype):
    """The pyasc ``DataType`` of a numpy dtype (``x.dtype`` inside a kernel)."""
    from asc.language.core.dtype import DataType
    return DataType(np.dtype(dtype).name)


# -- scalars --------------------------------------------------------------------------------
def _c_div(a: int, b: int) -> int:
    """arith.divsi: integer division truncating toward zero (C), not Python's floor."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


class Int(int):
    """A runtime integer of a pyasc kernel (pyasc's ``PlainValue`` of an integer type).

    Arithmetic with another integer gives an ``Int`` again; ``/`` and ``//`` truncate
    toward zero and ``%`` keeps the dividend's sign, as ``arith.divsi``/``arith.remsi`` do
    on the device. Values are not wrapped to 32 bits [R: a kernel whose int32 arithmetic
    overflows is outside what the simulator models].
    """

    __slots__ = ()

    def ceildiv(self, other) -> "Int":
        """``PlainValue.ceildiv``: ceil(self / other), rounded toward +infinity whatever the
        signs (``arith.ceildivsi``)."""
        a, b = int(self), int(other)
        q = _c_div(a, b)
        return Int(q + 1 if q * b != a and (a < 0) == (b < 0) else q)

    def cast(self, dtype):
        """``PlainValue.cast``: the value converted to pyasc DataType ``dtype``."""
        value = np_dtype(dtype).type(int(self))
        return Int(value) if isinstance(value, np.integer) else value

    def logical_and(self, other) -> bool:
        return bool(self) and bool(other)

    def logical_or(self, other) -> bool:
        return bool(self) or bool(other)


def _int_op(name: str, fn):
    def op(self, other):
        if isinstance(other, (bool, np.bool_)) or not isinstance(other, (int, np.integer)):
            return getattr(int(self), name)(other)     # float operand: Python/numpy rules
        return Int(fn(int(self), int(other)))
    op.__name__ = name
    return op


for _name, _fn in {
        "__add__": lambda a, b: a + b, "__radd__": lambda a, b: b + a,
        "__sub__": lambda a, b: a - b, "__rsub__": lambda a, b: b - a,
        "__mul__": lambda a, b: a * b, "__rmul__": lambda a, b: b * a,
        "__floordiv__": _c_div, "__rfloordiv__": lambda a, b: _c_div(b, a),
        "__truediv__": _c_div, "__rtruediv__": lambda a, b: _c_div(b, a),
        "__mod__": lambda a, b: a - b * _c_div(a, b),
        "__rmod__": lambda a, b: b - a * _c_div(b, a),
        "__lshift__": lambda a, b: a << b, "__rlshift__": lambda a, b: b << a,
        "__rshift__": lambda a, b: a >> b, "__rrshift__": lambda a, b: b >> a,
        "__and__": lambda a, b: a & b, "__rand__": lambda a, b: b & a,
        "__or__": lambda a, b: a | b, "__ror__": lambda a, b: b | a,
        "__xor__": lambda a, b: a ^ b, "__rxor__": lambda a, b: b ^ a}.items():
    setattr(Int, _name, _int_op(_name, _fn))
Int.__neg__ = lambda self: Int(-int(self))
Int.__pos__ = lambda self: self


def scalar_arg(value):
    """A host scalar as the kernel sees it: pyasc passes ``int`` as int32, ``float`` as
    float32 and ``bool`` as int8 (``Launcher.expand_kernel_args``)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return Int(int(value))
    if isinstance(value, float):
        return np.float32(value)
    return value


def ceildiv(a, b) -> Int:
    """``asc.ceildiv(a, b)``."""
    return Int(a).ceildiv(b)


# -- global memory ----------------------------------------------------------------------
class GlobalAddress:
    """``asc.GlobalAddress``: a typed pointer into GM (a kernel's tensor argument).

    ``addr + n`` points ``n`` elements further (``emitasc.ptr_offset``); ``addr.dtype`` is
    the pyasc DataType of the elements.
    """

    __slots__ = ("address", "dtype")

    def __init__(self, address: int, dtype):
        self.address = int(address)
        self.dtype = dtype

    def __add__(self, offset) -> "GlobalAddress":
        return GlobalAddress(self.address + int(offset) * self.dtype.sizeof(), self.dtype)

    __radd__ = __add__

    def __repr__(self) -> str:
        return f"GlobalAddress<{self.dtype}>(0x{self.address:x})"


def _offset(index) -> int:
    """The element offset of ``tensor[i]`` or ``tensor[i:]`` (pyasc refuses a stop or step)."""
    if isinstance(index, slice):
        if index.stop is not None or index.step is not None:
            raise KernelError("operator[]", "a tensor slice takes only a start (tensor[i:]); "
                              "pyasc refuses a stop or a step")
        return _tensor._index(index.start or 0, "operator[]")
    return _tensor._index(index, "operator[]")


class GlobalTensor:
    """``asc.GlobalTensor()``: filled by ``set_global_buffer(addr[, size])``."""

    __slots__ = ("g", "dtype")

    def __init__(self, g: _tensor.GlobalTensor | None = None, dtype=None):
        self.g = g
        self.dtype = dtype

    def set_global_buffer(self, buffer: GlobalAddress, buffer_size=None) -> None:
        """Point at ``buffer``; without a size, the tensor runs to the end of the GM
        allocation holding it (Ascend C's size is informational; GM accesses are checked
        against the allocation either way)."""
        self.dtype = buffer.dtype
        np_dt = np_dtype(buffer.dtype)
        g = _tensor.GlobalTensor(np_dt)
        if buffer_size is None:
            alloc = _core.current_core().gm.find(buffer.address)
            buffer_size = (alloc.base + alloc.size - buffer.address) // np_dt.itemsize \
                if alloc is not None else 0
        g.SetGlobalBuffer(buffer.address, buffer_size)
        self.g = g

    def __getitem__(self, index) -> "GlobalTensor":
        return GlobalTensor(self.g[_offset(index)], self.dtype)

    def get_size(self) -> Int:
        return Int(self.g.GetSize())

    def get_phy_addr(self, offset=0) -> GlobalAddress:
        return GlobalAddress(self.g.address, self.dtype) + offset

    def get_value(self, offset):
        return _scalar(self.g.GetValue(int(offset)))

    def set_value(self, offset, value) -> None:
        self.g.SetValue(int(offset), value)

    def set_l2_cache_hint(self, mode, rw_mode=None) -> None:
        from npusim.ascendc.types import CacheMode
        self.g.SetL2CacheHint(CacheMode[mode.name])


def _scalar(value):
    """A value read from memory, as the kernel sees it (integers become Int)."""
    return Int(int(value)) if isinstance(value, (np.integer, int)) else value


# -- local memory -----------------------------------------------------------------------------
class PhyAddr(Int):
    """``LocalTensor.get_phy_addr()``: the UB address, remembering the element type of the
    tensor it came from. pyasc emits ``TransDataTo5HD<T>`` for a uint64 tensor of addresses
    with the T of the tensors whose ``get_phy_addr`` values were ``set_value``'d into it;
    npusim keeps that type per UB slot (:func:`addr_types`) to run it the same way."""

    def __new__(cls, value: int, dtype):
        self = super().__new__(cls, value)
        self.dtype = dtype
        return self


def addr_types(ctx) -> dict:
    """{UB byte offset: element type} of the PhyAddr values a kernel stored into UB."""
    types_ = getattr(ctx, "pyasc_addr_types", None)
    if types_ is None:
        types_ = ctx.pyasc_addr_types = {}
    return types_


class LocalTensor:
    """``asc.LocalTensor``: a view on a core's local memory (npusim's LocalTensor ``t``).

    ``asc.LocalTensor(dtype, pos, addr, tile_size)`` is Ascend C's static-tensor
    constructor; ``asc.LocalTensor(dtype)`` an empty tensor a queue fills in place
    (``que.alloc_tensor(t)``, ``que.deque(t)``).
    """

    __slots__ = ("t", "dtype", "user_tag")

    def __init__(self, dtype=None, pos=TPosition.VECIN, addr=None, tile_size=0, *, t=None):
        if t is None and addr is not None:
            t = _tensor.LocalTensor.at(np_dtype(dtype), TPosition(int(pos)), int(addr),
                                       int(tile_size))
        self.t = t
        self.dtype = asc_dtype(t.dtype) if t is not None else dtype

    def __getitem__(self, index) -> "LocalTensor":
        return LocalTensor(t=self.t[_offset(index)])

    def _fill(self, t) -> None:
        self.t, self.dtype = t, asc_dtype(t.dtype)

    def get_length(self) -> Int:
        return Int(self.t.length * self.t.dtype.itemsize)

    def get_size(self) -> Int:
        return Int(self.t.GetSize())

    def get_phy_addr(self, offset=0) -> Int:
        return PhyAddr(self.t.GetPhyAddr() + int(offset) * self.t.dtype.itemsize, self.t.dtype)

    def get_position(self) -> Int:
        return Int(int(self.t.position))

    def get_value(self, index):
        return _scalar(self.t.GetValue(int(index)))

    def set_value(self, index, value) -> None:
        self.t.SetValue(int(index), value)
        if isinstance(value, PhyAddr):       # an address list of TransDataTo5HD: keep its type
            addr_types(self.t.ctx)[self.t.offset + int(index) * self.t.dtype.itemsize] = value.dtype

    def set_size(self, size) -> None:
        """``SetSize``: the tensor now has ``size`` elements (its buffer's end is still the
        limit the checker holds its accesses to)."""
        t = self.t
        self.t = _tensor.LocalTensor(t.ctx, t.dtype, t.offset, int(size), t.limit, t.position,
                                     t.owner, t.mem)

    def set_buffer_len(self, data_len) -> None:
        """``SetBufferLen``: the buffer length the tensor records (npusim checks accesses
        against the buffer the queue or TBuf gave it instead)."""

    def set_user_tag(self, tag) -> None:
        self.user_tag = int(tag)

    def get_user_tag(self) -> Int:
        return Int(getattr(self, "user_tag", 0) or 0)

    def set_addr_with_offset(self, src: "LocalTensor", offset) -> None:
        """``SetAddrWithOffset(src, offset)``: this tensor now starts ``offset`` elements
        (of this tensor's type) into ``src``'s buffer."""
        dtype = self.t.dtype if self.t is not None else np_dtype(self.dtype)
        self._fill(src.t.ReinterpretCast(dtype)[int(offset)])

    def reinterpret_cast(self, dtype) -> "LocalTensor":
        return LocalTensor(t=self.t.ReinterpretCast(np_dtype(dtype)))

    def set_shape_info(self, shape_info) -> None:
        """``SetShapeInfo``: the shape the tensor carries (SoftMax reads it)."""
        self.t.SetShapeInfo(shape_info.info if isinstance(shape_info, ShapeInfo) else shape_info)

    def get_shape_info(self) -> "ShapeInfo":
        info = self.t.GetShapeInfo()
        return ShapeInfo(info=info if info is not None else _shapeinfo.ShapeInfo())

    def numpy(self) -> np.ndarray:
        """npusim extra: a copy of the tensor's elements (for debugging a kernel)."""
        return self.t.numpy()

    def __repr__(self) -> str:
        return f"asc.{self.t!r}"


class LocalTensorAuto(LocalTensor):
    """``asc.LocalTensorAuto(dtype, shape)``: a UB tensor the compiler places (pyasc's
    auto-sync tensors, ``create_asc_LocalTensorAutoOp``), with the synchronisation its uses
    need inserted (the launch's ``auto_sync``, which pyasc turns on for them).

    Placement: each creation site of the kernel (the chain of calls that reaches it, as
    pyasc inlines device functions) gets its own VECCALC buffer in the block's TPipe (one
    made if the kernel has none), reused by every iteration of a loop around it, as one
    operation of the IR is one buffer; the flags auto-sync inserts order the reuse.
    """

    __slots__ = ()

    def __init__(self, dtype=None, shape=None, *, t=None):
        if t is None:
            t = _auto_tensor(dtype, shape)
        super().__init__(t=t)


# -- asc.array and asc.ShapeInfo ------------------------------------------------------------------
def array(dtype, length_or_values, fill_value=None) -> np.ndarray:
    """``asc.array(dtype, n[, fill])`` / ``asc.array(dtype, values)``: a kernel's small local
    array (pyasc's memref alloca), here a numpy array of that type."""
    dt = np_dtype(dtype)
    if isinstance(length_or_values, (int, np.integer)):
        if int(length_or_values) <= 0:
            raise KernelError("asc.array", "the length must be a positive integer")
        return np.full(int(length_or_values), 0 if fill_value is None else fill_value, dt)
    if fill_value is not None:
        raise KernelError("asc.array", "fill_value cannot be given with initial values")
    return np.array([int(v) if isinstance(v, Int) else v for v in length_or_values], dt)


class ShapeInfo:
    """``asc.ShapeInfo(shape[, original_shape][, data_format])``: npusim's ShapeInfo."""

    __slots__ = ("info",)

    def __init__(self, shape=None, original_shape=None, data_format=None, *, info=None):
        if info is None:
            dims = [] if shape is None else list(shape)
            ori = dims if original_shape is None else list(original_shape)
            fmt = _shapeinfo.DataFormat[data_format.name] if data_format is not None \
                else _shapeinfo.DataFormat.ND
            info = _shapeinfo.ShapeInfo(len(dims), dims, len(ori), ori, fmt)
        self.info = info

    def shape(self, dim) -> Int:
        return Int(self.info.shape[int(dim)])

    def original_shape(self, dim) -> Int:
        return Int(self.info.originalShape[int(dim)])


_NPUSIM_DIR = __file__.rsplit("/", 2)[0]


def _creation_site() -> tuple:
    """The kernel's call chain to a LocalTensorAuto (code objects and instruction offsets
    of the frames outside npusim)."""
    import sys
    key = []
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(_NPUSIM_DIR):
            if name.endswith("_session.py"):
                break
        else:
            key.append((frame.f_code, frame.f_lasti))
        frame = frame.f_back
    return tuple(key)


def _auto_tensor(dtype, shape):
    ctx = _core.current_core()
    n = 1
    for d in (shape if isinstance(shape, (tuple, list)) else (shape,)):
        n *= int(d)
    np_dt = np_dtype(dtype)
    nbytes = max(n * np_dt.itemsize, 32)
    table = getattr(ctx, "pyasc_auto_tensors", None)
    if table is None:
        table = ctx.pyasc_auto_tensors = {}
    key = _creation_site()
    buf = table.get(key)
    if buf is None or buf[1] < nbytes:
        pipe = ctx.pipe if ctx.pipe is not None else _pipe.TPipe()
        tbuf = _pipe.TBuf(TPosition.VECCALC)
        pipe.InitBuffer(tbuf, nbytes)
        buf = table[key] = (tbuf, nbytes)
    return buf[0].Get(np_dt, n)


def wrap(value):
    """An npusim result as the kernel sees it: LocalTensors wrapped, ints as Int."""
    if isinstance(value, _tensor.LocalTensor):
        return LocalTensor(t=value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return Int(int(value))
    return value


# -- the framework: TPipe, TQue, TBuf -------------------------------------------------------------
class TQueBind:
    """``asc.TQueBind(src, dst, depth)`` / ``asc.TQue(pos, depth)``: npusim's TQue.

    npusim models queues by one position; a TQueBind whose source and destination differ
    (a VECIN -> VECOUT bind) is refused with a KernelError naming it.
    """

    def __init__(self, src=TPosition.VECIN, dst=TPosition.VECIN, depth=0, mask=0):
        if int(src) != int(dst):
            raise KernelError("TQueBind", f"a queue bound from {TPosition(int(src)).name} to "
                              f"{TPosition(int(dst)).name} is not modelled by npusim; use "
                              "TQue of one position")
        self.q = _pipe.TQue(TPosition(int(src)), max(int(depth), 1))

    def alloc_tensor(self, dtype_or_tensor):
        if isinstance(dtype_or_tensor, LocalTensor):      # in place
            dtype_or_tensor._fill(self.q.AllocTensor(np_dtype(dtype_or_tensor.dtype)))
            return None
        return LocalTensor(t=self.q.AllocTensor(np_dtype(dtype_or_tensor)))

    def enque(self, tensor: LocalTensor) -> bool:
        return self.q.EnQue(tensor.t)

    def deque(self, dtype_or_tensor):
        if isinstance(dtype_or_tensor, LocalTensor):
            dtype_or_tensor._fill(self.q.DeQue(np_dtype(dtype_or_tensor.dtype)))
            return None
        return LocalTensor(t=self.q.DeQue(np_dtype(dtype_or_tensor)))

    def free_tensor(self, tensor: LocalTensor) -> None:
        self.q.FreeTensor(tensor.t)

    def has_tensor_in_que(self) -> bool:
        return self.q.HasTensorInQue()

    def get_tensor_count_in_que(self) -> Int:
        return Int(len(self.q._queue))

    def has_idle_buffer(self) -> bool:
        return bool(self.q._free)

    def vacant_in_que(self) -> bool:
        return len(self.q._queue) < self.q.depth


class TQue(TQueBind):
    """``asc.TQue(pos, depth)``."""

    def __init__(self, pos=TPosition.VECIN, depth=1, mask=0):
        super().__init__(pos, pos, depth, mask)


class TBuf:
    """``asc.TBuf(pos)``: one scratch buffer (npusim's TBuf)."""

    def __init__(self, pos=TPosition.VECCALC):
        self.q = _pipe.TBuf(TPosition(int(pos)))

    def get(self, dtype, len=None, shape=None) -> LocalTensor:     # noqa: A002 (pyasc's name)
        return LocalTensor(t=self.q.Get(np_dtype(dtype), None if len is None else int(len)))

    def get_with_offset(self, size, buf_offset, dtype) -> LocalTensor:
        return LocalTensor(t=self.q.GetWithOffset(int(size), int(buf_offset), np_dtype(dtype)))

    # pyasc's TBuf is a TQueBind, so a kernel may call the queue methods on it; its code
    # generator emits Ascend C's TBuf::AllocTensor<T>() ... for them, whose library
    # implementation gives the whole buffer (Get<T>()) or does nothing (npusim's TBuf).
    # Ascend C's TBuf declares only those forms: the in-place ones (a LocalTensor argument)
    # are hidden there and do not compile.
    def alloc_tensor(self, dtype) -> LocalTensor:
        return LocalTensor(t=self.q.AllocTensor(_tbuf_dtype(dtype, "alloc_tensor")))

    def deque(self, dtype) -> LocalTensor:
        return LocalTensor(t=self.q.DeQue(_tbuf_dtype(dtype, "deque")))

    def enque(self, tensor: LocalTensor) -> None:
        self.q.EnQue(tensor.t)

    def free_tensor(self, tensor: LocalTensor) -> None:
        self.q.FreeTensor(tensor.t)


def _tbuf_dtype(dtype, method: str):
    if isinstance(dtype, LocalTensor):
        raise KernelError(f"TBuf.{method}", "Ascend C's TBuf has no in-place form (TBuf<pos> "
                          f"declares {method} with a type only): call tbuf.{method}(dtype)")
    return np_dtype(dtype)


class TPipe:
    """``asc.TPipe()``: npusim's TPipe of the running block."""

    def __init__(self, p: _pipe.TPipe | None = None):
        self.p = p if p is not None else _pipe.TPipe()

    def init_buffer(self, que=None, num=0, len=0, buf=None) -> None:   # noqa: A002 (pyasc's)
        """``init_buffer(que, num, len)``, or ``init_buffer(buf, num)`` /
        ``init_buffer(buf=tbuf, num=n)`` for a TBuf (num is then its length in bytes, as in
        pyasc's ``TPipe.init_buffer`` overloads)."""
        que = buf if buf is not None else que
        if isinstance(que, TBuf):
            self.p.InitBuffer(que.q, int(num))
        else:
            self.p.InitBuffer(que.q, int(num), int(len))

    def init(self) -> None:
        """``TPipe::Init``: a pipe constructed in the kernel is ready; after ``destroy`` its
        UB starts empty again (npusim's Destroy already did that)."""

    def alloc_event_id(self, event=HardEvent.V_S) -> Int:
        return Int(self.p.AllocEventID(HardEvent[event.name]))

    def fetch_event_id(self, event=HardEvent.V_S) -> Int:
        return Int(self.p.FetchEventID(HardEvent[event.name]))

    def release_event_id(self, id, event=HardEvent.V_S) -> None:    # noqa: A002
        self.p.ReleaseEventID(HardEvent[event.name], int(id))

    def destroy(self) -> None:
        """``Destroy``: the pipe's buffers are released (its UB and its buffer counts: a
        kernel may then ``init``/``init_buffer`` them again, as pyasc's tests do per tile)."""
        self.p.Destroy()
        self.p.buffer_count = 0
        self.p.que_buffers_by_position.clear()

    reset = destroy


def get_tpipe_ptr() -> TPipe:
    """``asc.get_tpipe_ptr()``: the running block's TPipe."""
    return TPipe(_pipe.GetTPipePtr())


# -- structs ---------------------------------------------------------------------------------
class StructView:
    """A pyasc ``Struct`` kernel argument (e.g. ``asc.adv.TCubeTiling``) as the kernel reads
    it: each field an Int (or float), nested structs as views, read from the packed bytes
    pyasc copies to the device (``Struct.pack``)."""

    def __init__(self, struct):
        object.__setattr__(self, "_struct", struct)
        object.__setattr__(self, "_values", {})

    def __getattr__(self, name: str):
        values = object.__getattribute__(self, "_values")
        if name not in values:
            struct = object.__getattribute__(self, "_struct")
            value = getattr(struct, name)
            if hasattr(value, "struct_fields"):
                value = StructView(value)
            elif isinstance(value, ctypes.Structure):
                value = StructView(_struct_of(struct, name, value))
            else:
                value = scalar_arg(value)
            values[name] = value
        return values[name]

    def __setattr__(self, name: str, value) -> None:
        object.__getattribute__(self, "_values")[name] = value

    @property
    def host(self):
        """The host Struct this view reads."""
        return object.__getattribute__(self, "_struct")


def _struct_of(parent, name, raw):
    field = type(parent).struct_fields[name]
    sub = field.struct_cls.__new__(field.struct_cls)
    object.__setattr__(sub, "ctypes_struct", raw)
    return sub
