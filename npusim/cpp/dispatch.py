"""The C++ front end's runtime: each CCE intrinsic a compiled Ascend C kernel calls arrives here
(one ctypes callback, npusim_intrinsic in include/npusim_runtime.cpp) and runs as
npusim.ascendc's level-0 instruction on the current core: the same records, pipes, checker
and profile as a Python kernel's.

Memory: the headers' own host buffers (``ConstDefiner``: UB, L1, L0A, L0B, L0C, BT, FB) *are*
the core's memories during a block (the core context's UB is bound to the headers' UB), so
the kernel's scalar reads and writes through host pointers and the engine's instructions see
the same bytes. GM pointers are host addresses inside the numpy buffers of the device's
allocations, mapped back to device addresses for the engine.

Errors: a ctypes callback cannot unwind C++ frames, so the first error an intrinsic raises is
kept, every later intrinsic of the block returns 0 at once, and the error is raised when the
kernel function returns.
"""
from __future__ import annotations

import bisect
import contextlib
import ctypes
import os
import signal
import struct
import sys
import threading

import numpy as np

from npusim.ascendc import core as _core
from npusim.ascendc import repeat as _repeat
from npusim.ascendc import types as _types
from npusim.ascendc.tensor import GlobalTensor, LocalTensor
from npusim.cpp import builder as _builder
from npusim.cpp import corestate
from npusim.errors import KernelError

# Argument kinds and element codes (include/stub_fun.h).
K_INT, K_UINT, K_FLOAT, K_DOUBLE, K_HALF, K_BF16, K_PTR, K_STRUCT = 1, 2, 3, 4, 5, 6, 7, 8
ELEMENT = {0: np.uint8, 1: np.int8, 2: np.uint8, 3: np.int16, 4: np.uint16, 5: np.int32,
           6: np.uint32, 7: np.int64, 8: np.uint64, 9: np.float16, 10: _types.bfloat16,
           11: np.float32, 12: np.float64, 13: np.uint8}
#: Order of the headers' host buffers (npusim_hw_buffers in builder.GLUE) and npusim's names.
HW_MEMORIES = (_core.UB, "L1", "L0A", "L0B", "L0C", "BT", "FB")

DISPATCH_FN = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
_UNPACK = [struct.Struct("<" + "IIQ" * n) for n in range(33)]
_MASK64 = (1 << 64) - 1
_PIPE_SHORT = {int(p): p.name[5:] for p in _types.Pipe}


class HeaderAssertion(KernelError):
    """An ASCENDC_ASSERT of the Ascend C headers failed (their message is on stderr): in CPU
    mode they raise SIGABRT, which npusim turns into this error instead of ending Python."""


#: SIGABRTs caught while a kernel or host program runs (abort_as_error)
_ABORTS: list = []
#: [how many callers are inside abort_as_error, then the handler it replaced]
_ABORT_DEPTH: list = [0]


def _abort_error():
    _ABORTS.clear()
    return HeaderAssertion("npusim.cpp", "an assertion of the Ascend C headers failed (SIGABRT; "
                           "their message is printed above)")


@contextlib.contextmanager
def abort_as_error():
    """While a kernel or host program runs: SIGABRT raised by the headers' asserts becomes a
    :class:`HeaderAssertion` (in the main thread; elsewhere Python cannot catch signals). The
    handler only notes the signal: the next intrinsic, or the end of the C++ call, raises."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    # re-entrant: the cores of an interleaved launch (greenlets) enter and leave it in any
    # order; the handler stays while any of them is inside
    if _ABORT_DEPTH[0] == 0:
        _ABORT_DEPTH.append(signal.signal(signal.SIGABRT,
                                          lambda signum, frame: _ABORTS.append(signum)))
    _ABORT_DEPTH[0] += 1
    try:
        yield
        if _ABORTS:
            raise _abort_error()
    finally:
        _ABORT_DEPTH[0] -= 1
        if _ABORT_DEPTH[0] == 0:
            old = _ABORT_DEPTH.pop()       # None: a handler not set from Python
            signal.signal(signal.SIGABRT, signal.SIG_DFL if old is None else old)


class Ptr(int):
    """A pointer argument: its address, with the element type it points to; ``l2_bypass``:
    it came in the L2 cache hint's window (:data:`L2_BYPASS_OFFSET`), the address is the
    one below it."""

    __slots__ = ()
    dtype = np.dtype(np.uint8)
    l2_bypass = False


#: The offset GlobalTensor::SetL2CacheHint(CACHE_MODE_DISABLE) adds to a tensor's GM address
#: in an A2 build (L2CacheAlter; npusim.cpp.builder.L2_BYPASS_OFFSET): a pointer argument
#: with this bit is the same GM bytes, copied around the L2 cache.
L2_BYPASS_OFFSET = _builder.L2_BYPASS_OFFSET


def _decode(kind: int, size: int, bits: int):
    k = kind & 0xFF
    if k == K_INT:
        return bits - (1 << 64) if bits >> 63 else bits
    if k == K_UINT:
        return bits
    if k == K_PTR:
        if bits & L2_BYPASS_OFFSET:
            return _BYPASS_PTR_CLASSES.get(kind >> 8, _BypassPtr)(bits ^ L2_BYPASS_OFFSET)
        return _PTR_CLASSES.get(kind >> 8, Ptr)(bits)
    if k == K_FLOAT:
        return float(np.uint32(bits).view(np.float32))
    if k == K_HALF:
        return np.uint16(bits).view(np.float16)
    if k == K_BF16:
        return np.uint16(bits).view(_types.bfloat16)
    if k == K_DOUBLE:
        return float(np.uint64(bits).view(np.float64))
    return (bits, size)              # a struct: its address and size


def _ptr_class(code):
    return type(f"Ptr{code}", (Ptr,), {"__slots__": (), "dtype": np.dtype(ELEMENT[code])})


_PTR_CLASSES = {code: _ptr_class(code) for code in ELEMENT}
_BypassPtr = type("PtrL2Bypass", (Ptr,), {"__slots__": (), "l2_bypass": True})
_BYPASS_PTR_CLASSES = {code: type(f"Ptr{code}L2Bypass", (cls,), {"__slots__": (), "l2_bypass": True})
                       for code, cls in _PTR_CLASSES.items()}


class KernelRuntime:
    """The intrinsic dispatcher of one loaded kernel library (see the module docstring)."""

    def __init__(self, lib: ctypes.CDLL):
        self.lib = lib
        self.names: dict[int, str] = {}
        self.callback = DISPATCH_FN(self._dispatch)
        ctypes.c_void_p.in_dll(lib, "npusim_dispatch").value = \
            ctypes.cast(self.callback, ctypes.c_void_p).value
        bases, sizes = (ctypes.c_void_p * 7)(), (ctypes.c_uint64 * 7)()
        lib.npusim_hw_buffers(bases, sizes)
        self.hw = {m: (int(b or 0), int(s)) for m, b, s in zip(HW_MEMORIES, bases, sizes)}
        self.ctx = None
        self.error: BaseException | None = None
        self.host = None                 # HostSession while a sample's main runs
        self._gm_index: list = []        # sorted host bases of GM allocations
        self._gm_allocs: list = []
        self._tensors: dict = {}
        self.calls = 0
        self._state = None
        self._gm_flags = None
        corestate.RUNTIMES.add(self)
        #: NPUSIM_CPP_TRACE=1: print each intrinsic and its decoded arguments to stderr
        self.trace = os.environ.get("NPUSIM_CPP_TRACE") == "1"

    # -- per block ---------------------------------------------------------------------
    def begin_block(self, ctx, block_idx: int, block_num: int, sub_block_idx: int = 0,
                    task_ratio: int = 1, core_type: int = 2) -> None:
        """Set the headers' per-core globals and bind the context's memories to the
        headers' host buffers (their bytes start as the context's: poisoned). A core of an
        interleaved launch (its cores run as coroutines) gets C++ state of its own
        (:mod:`npusim.cpp.corestate`), starting from the host program's."""
        lib = self.lib
        rec = corestate.begin_core(self, ctx) if corestate.interleaved(ctx) else None
        if rec is None:
            corestate.end_launch()
        ctypes.c_int64.in_dll(lib, "block_idx").value = block_idx
        ctypes.c_int64.in_dll(lib, "block_num").value = block_num
        ctypes.c_int64.in_dll(lib, "sub_block_idx").value = sub_block_idx
        ctypes.c_int64.in_dll(lib, "g_taskRation").value = task_ratio
        ctypes.c_int32.in_dll(lib, "g_coreType").value = core_type
        self.ctx = ctx
        self.error = None
        self._tensors = {}
        lib.npusim_reset_core_state()
        if ctx.core_kind != _core.AIC:
            base, size = self.hw[_core.UB]
            n = ctx.ub.size
            if n > size:
                raise KernelError("npusim.cpp", f"the headers' UB buffer ({size} B) is smaller "
                                  f"than the {ctx.soc.soc_version} UB ({n} B)")
            host = np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(base))
            if rec is not None:
                rec.bind(_core.UB, host)
            host[:] = ctx.ub
            ctx.ub = host
        else:
            for mem in HW_MEMORIES[1:]:
                base, size = self.hw[mem]
                want = _core.memory_size(ctx.soc, mem)
                if base and want <= size:
                    host = np.ctypeslib.as_array((ctypes.c_uint8 * want).from_address(base))
                    if rec is not None:
                        rec.bind(mem, host)
                    host.fill(_core.UB_POISON)
                    ctx.mems[mem] = host

    @property
    def uses_gm_flags(self) -> bool:
        """Whether the library calls IBSet/IBWait (the CPU library's markers of a block
        waiting for another through a flag in GM)."""
        if self._gm_flags is None:
            with open(self.lib._name, "rb") as f:
                self._gm_flags = b"__ib_wait_stub" in f.read()
        return self._gm_flags

    @property
    def state(self) -> corestate.LibraryState:
        """The library's writable regions (computed on first use)."""
        if self._state is None:
            self._state = corestate.LibraryState(self.lib, self.hw.values())
        return self._state

    def end_block(self) -> None:
        if self.ctx is not None:
            corestate.end_core(self.ctx)
        self.ctx = None
        if self.error is not None:
            err, self.error = self.error, None
            raise err

    def map_gm(self, gm) -> None:
        """Index the device's allocations by the host address of their bytes."""
        allocs = sorted(gm.allocations(), key=lambda a: a.buf.ctypes.data)
        self._gm_allocs = allocs
        self._gm_index = [a.buf.ctypes.data for a in allocs]

    def host_pointer(self, gm, addr: int) -> int:
        """The host address of device address ``addr`` (a kernel argument)."""
        a = gm.find(addr)
        if a is None:
            raise KernelError("npusim.cpp", f"0x{addr:x} is not in a device allocation")
        return a.buf.ctypes.data + (addr - a.base)

    def device_address(self, ptr: int, instruction: str) -> int:
        i = bisect.bisect_right(self._gm_index, ptr) - 1
        if i >= 0:
            a = self._gm_allocs[i]
            off = ptr - self._gm_index[i]
            if off <= a.alloc_size:
                return a.base + off
        raise KernelError(instruction, f"pointer 0x{ptr:x} is neither in a device allocation "
                          "nor in a core memory")

    # -- operands ------------------------------------------------------------------------
    def local(self, ptr: Ptr, instruction: str, dtype=None) -> LocalTensor:
        """The LocalTensor a core-memory pointer addresses (to the end of its memory)."""
        dtype = ptr.dtype if dtype is None else np.dtype(dtype)
        key = (int(ptr), dtype)
        t = self._tensors.get(key)
        if t is not None:
            return t
        for mem, (base, size) in self.hw.items():
            if base <= ptr < base + size:
                off = ptr - base
                limit = _core.memory_size(self.ctx.soc, mem)
                pos = _types.TPosition.VECCALC if mem == _core.UB else None
                t = LocalTensor(self.ctx, dtype, off, (limit - off) // dtype.itemsize, limit,
                                pos or _types.TPosition.A1, None, mem)
                self._tensors[key] = t
                return t
        raise KernelError(instruction, f"pointer 0x{int(ptr):x} is not in a core memory")

    def global_(self, ptr: Ptr, nbytes: int, instruction: str, dtype=np.uint8) -> GlobalTensor:
        """The GlobalTensor of ``nbytes`` at ``ptr``, set to CACHE_MODE_DISABLE when the
        pointer came through the L2 cache hint's window (:class:`Ptr`)."""
        g = GlobalTensor(dtype)
        g.SetGlobalBuffer(self.device_address(int(ptr), instruction),
                          max(1, nbytes // np.dtype(dtype).itemsize))
        if getattr(ptr, "l2_bypass", False):
            g.SetL2CacheHint(_types.CacheMode.CACHE_MODE_DISABLE)
        return g

    # -- the callback ----------------------------------------------------------------------
    def _dispatch(self, name_p, nargs, args_p):
        ctx = _core._current
        if ctx is not self.ctx and ctx is not None:
            corestate.ensure(ctx)            # another core's C++ state is loaded
        if _ABORTS and self.error is None:
            self.error = _abort_error()
        if self.error is not None:
            return 0
        name = self.names.get(name_p)
        if name is None:
            name = self.names[name_p] = ctypes.string_at(name_p).decode()
        try:
            if nargs:
                raw = _UNPACK[nargs].unpack(ctypes.string_at(args_p, 16 * nargs))
                args = [_decode(raw[i], raw[i + 1], raw[i + 2]) for i in range(0, 3 * nargs, 3)]
            else:
                args = []
            if self.trace:
                print(f"[npusim.cpp] {name}{tuple(args)}", file=sys.stderr)
            handler = HANDLERS.get(name)
            if handler is None:
                if name in NOOPS:
                    return 0
                raise KernelError(name, f"the intrinsic {name} ({nargs} arguments) is not "
                                  "modelled by npusim's C++ front end yet (docs/cpp.md)")
            self.calls += 1
            r = handler(self, *args)
            if ctx is not None and _core._current is ctx and self.ctx is not ctx:
                corestate.ensure(ctx)        # the handler handed over to other cores
            return 0 if r is None else int(r) & _MASK64
        except BaseException as exc:   # noqa: BLE001 - kept, raised when the kernel returns
            self.error = exc
            return 0


# -- handlers: intrinsic name -> level-0 instruction ------------------------------------------
HANDLERS: dict = {}
#: Intrinsics with no effect on npusim's state (cache maintenance, hints).
NOOPS = {"dc_preload", "preload", "set_atomic_none_", "icache_preload", "dsb"}


def handler(*names):
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return deco


def _asc():
    import npusim.ascendc as asc
    return asc


@handler("get_block_idx")
def _get_block_idx(rt):
    """The register: the block (AI core) index, the same on an AIC and its AIVs (GetBlockIdx
    of an AIV is block * GetTaskRation + GetSubBlockIdx, computed by the headers)."""
    return rt.ctx.block_idx // rt.ctx.task_ratio


@handler("get_block_num")
def _get_block_num(rt):
    return rt.ctx.block_num


@handler("get_subblockid")
def _get_subblockid(rt):
    return rt.ctx.sub_block_idx


@handler("get_subblockdim")
def _get_subblockdim(rt):
    return rt.ctx.task_ratio


# Scalar bit operations (the TPipe event-ID allocator runs on them): exact 64-bit results.
@handler("sff0")
def _sff0(rt, x):
    """Index of the lowest 0 bit of ``x`` (64 when every bit is 1)."""
    x &= _MASK64
    inv = ~x & _MASK64
    return 64 if inv == 0 else (inv & -inv).bit_length() - 1


@handler("sff1")
def _sff1(rt, x):
    """Index of the lowest 1 bit of ``x`` (64 when ``x`` is 0)."""
    x &= _MASK64
    return 64 if x == 0 else (x & -x).bit_length() - 1


@handler("sbitset0")
def _sbitset0(rt, x, i):
    return (x & _MASK64) & ~(1 << (i & 63))


@handler("sbitset1")
def _sbitset1(rt, x, i):
    return (x & _MASK64) | (1 << (i & 63))


@handler("bcnt1")
def _bcnt1(rt, x):
    return bin(x & _MASK64).count("1")


@handler("bcnt0")
def _bcnt0(rt, x):
    return 64 - bin(x & _MASK64).count("1")


@handler("clz")
def _clz(rt, x):
    return 64 - (x & _MASK64).bit_length()


# Control registers.
@handler("get_ctrl")
def _get_ctrl(rt):
    return getattr(rt.ctx, "cpp_ctrl", 0)


@handler("set_ctrl")
def _set_ctrl(rt, v):
    rt.ctx.cpp_ctrl = v & _MASK64


@handler("set_mask_norm")
def _set_mask_norm(rt):
    _repeat.SetMaskNorm()


@handler("set_mask_count")
def _set_mask_count(rt):
    _repeat.SetMaskCount()


@handler("set_vector_mask")
def _set_vector_mask(rt, high, low):
    mode = _repeat.MaskMode.COUNTER if rt.ctx.mask_counter else _repeat.MaskMode.NORMAL
    _repeat.SetVectorMask(high, low, mode=mode)


@handler("set_atomic_none")
def _set_atomic_none(rt):
    _asc().SetAtomicNone()


# Synchronisation.
def _event(src: int, dst: int, instruction: str):
    try:
        return _types.HardEvent(f"{_PIPE_SHORT[src]}_{_PIPE_SHORT[dst]}")
    except (KeyError, ValueError):
        raise KernelError(instruction, f"no HardEvent from pipe {src} to pipe {dst}") from None


@handler("set_flag")
def _set_flag(rt, src, dst, event_id):
    _asc().SetFlag(_event(src, dst, "SetFlag"), event_id)


@handler("wait_flag")
def _wait_flag(rt, src, dst, event_id):
    _asc().WaitFlag(_event(src, dst, "WaitFlag"), event_id)


@handler("pipe_barrier")
def _pipe_barrier(rt, pipe):
    _asc().PipeBarrier(_types.Pipe(pipe))


# Data movement GM <-> UB (lengths and gaps in 32 B blocks, DataCopyParams).
def _poll(rt, kind: str, ptr: int, size: int) -> None:
    """A GM read: in an interleaved launch, a re-read of unchanged bytes hands over to the
    other cores (corestate.poll: the core polls a flag another core writes)."""
    if size > 0 and getattr(rt.ctx, "cpp_record", None) is not None:
        corestate.poll(rt.ctx, (kind, int(ptr), int(size)),
                       lambda: ctypes.string_at(int(ptr), int(size)))


@handler("copy_gm_to_ubuf")
def _copy_gm_to_ubuf(rt, dst, src, sid, n_burst, len_burst, src_stride, dst_stride):
    span = (n_burst * (len_burst + src_stride)) * 32
    _asc().DataCopy(rt.local(dst, "DataCopy", np.uint8), rt.global_(src, span, "DataCopy"),
                    _types.DataCopyParams(n_burst, len_burst, src_stride, dst_stride))
    _poll(rt, "DataCopy", src, span)


@handler("dcci")
def _dcci(rt, ptr=None, line=0, dst=0):
    """Cache maintenance has no effect on npusim's memory; a flush of one GM cache line (64
    B) is where a scalar poll loop (the Matmul API's message queues) may hand over."""
    if isinstance(ptr, Ptr) and line == 0 and getattr(rt.ctx, "cpp_record", None) is not None:
        try:
            rt.device_address(int(ptr), "dcci")
        except KernelError:
            return
        _poll(rt, "dcci", int(ptr) & ~63, 64)


# Cross-core flags and SyncAll (dav_c220 kernel_operator_sync_impl.h): ffts_cross_core_sync
# carries GetffstMsg(mode, flagId) = 1 + (mode & 3) << 4 + (flagId & 15) << 8.
@handler("ffts_cross_core_sync")
def _ffts_cross_core_sync(rt, pipe, config):
    """CrossCoreSetFlag<mode, pipe>(flagId); flagIds 11-14 are SyncAll's hardware form."""
    ctx = rt.ctx
    flag, mode = (config >> 8) & 0xF, (config >> 4) & 0x3
    if ctx.mix is not None:
        if flag <= 10:
            _asc().CrossCoreSetFlag(flag, modeId=mode, pipe=_types.Pipe(pipe))
        else:                          # SyncAll's flags: the same counters, ids 11-14
            ctx.mix.set_flag(ctx, flag, mode, _types.Pipe(pipe))
        return
    if flag > 10 and mode == 0:        # SyncAll of a vector-only (or cube-only) launch
        ctx.cpp_sync_flags = getattr(ctx, "cpp_sync_flags", set()) | {flag}
        return
    _asc().CrossCoreSetFlag(flag, modeId=mode, pipe=_types.Pipe(pipe))


@handler("wait_flag_dev")
def _wait_flag_dev(rt, flag):
    """CrossCoreWaitFlag(flagId), or the wait of SyncAll's hardware form."""
    ctx = rt.ctx
    if ctx.mix is not None:
        _pair_broadcasts(ctx.mix)
        ctx.cpp_waited = getattr(ctx, "cpp_waited", set()) | {flag}
        if flag <= 10:
            _asc().CrossCoreWaitFlag(flag)
        else:
            ctx.mix.wait_flag(ctx, flag)
        return
    pending = getattr(ctx, "cpp_sync_flags", set())
    if flag in pending:
        pending.discard(flag)
        from npusim.ascendc.syncall import SyncAll
        SyncAll(isAIVOnly=True)
        return
    _asc().CrossCoreWaitFlag(flag)


def _pair_broadcasts(state) -> None:
    """The Matmul API's server answers one AIV with a mode-2 set of flagId
    devEvtID * 2 + subBlockIdx (matmul_server_impl_c220.h, NotifyEvent), which reaches both
    AIVs of its block (CrossCoreSetFlag mode 2): the other AIV never waits on that flagId.
    The end-of-kernel pairing check (CrossCoreState.end_checks) leaves out sets of a flagId
    an AIV never waits on in the launch."""
    if getattr(state, "cpp_pairing", False):
        return
    check = state.end_checks

    def end_checks():
        for (core, flag), q in state.counters.items():
            c = state.ctxs[core]
            if q and c.core_kind == _core.AIV and flag not in getattr(c, "cpp_waited", ()):
                q.clear()
        check()
    state.end_checks = end_checks
    state.cpp_pairing = True


for _n in ("__ib_set_stub", "__ib_wait_stub", "__sync_all_stub"):
    NOOPS.add(_n)      # markers of the CPU library; the waits are GM polls (corestate.poll)


@handler("copy_ubuf_to_gm")
def _copy_ubuf_to_gm(rt, dst, src, sid, n_burst, len_burst, src_stride, dst_stride):
    span = (n_burst * (len_burst + dst_stride)) * 32
    _asc().DataCopy(rt.global_(dst, span, "DataCopy"), rt.local(src, "DataCopy", np.uint8),
                    _types.DataCopyParams(n_burst, len_burst, src_stride, dst_stride))


# Vector instructions: the level-0 form with the mask register (isSetMask=False).
_BINARY = {"vadd": "Add", "vsub": "Sub", "vmul": "Mul", "vdiv": "Div", "vmax": "Max",
           "vmin": "Min", "vand": "And", "vor": "Or", "vaddrelu": "AddRelu",
           "vsubrelu": "SubRelu"}
_UNARY = {"vexp": "Exp", "vln": "Ln", "vabs": "Abs", "vrec": "Reciprocal", "vsqrt": "Sqrt",
          "vrsqrt": "Rsqrt", "vrelu": "Relu", "vnot": "Not"}
_SCALAR = {"vadds": "Adds", "vmuls": "Muls", "vmaxs": "Maxs", "vmins": "Mins",
           "vlrelu": "LeakyRelu"}


def _binary(api):
    def run(rt, dst, src0, src1, repeat, *strides):
        if len(strides) != 6:
            raise KernelError(api, f"the {len(strides) + 4}-argument form (a packed "
                              "configuration word) is not modelled yet")
        getattr(_asc(), api)(rt.local(dst, api), rt.local(src0, api), rt.local(src1, api),
                             _repeat.MASK_PLACEHOLDER, repeat,
                             _repeat.BinaryRepeatParams(*strides), isSetMask=False)
    return run


def _unary(api):
    def run(rt, dst, src, repeat, *strides):
        if len(strides) != 4:
            raise KernelError(api, f"the {len(strides) + 3}-argument form is not modelled yet")
        getattr(_asc(), api)(rt.local(dst, api), rt.local(src, api),
                             _repeat.MASK_PLACEHOLDER, repeat,
                             _repeat.UnaryRepeatParams(*strides), isSetMask=False)
    return run


def _scalar(api):
    def run(rt, dst, src, scalar, repeat, *strides):
        if len(strides) != 4:
            raise KernelError(api, f"the {len(strides) + 4}-argument form is not modelled yet")
        d = rt.local(dst, api)
        getattr(_asc(), api)(d, rt.local(src, api), d.dtype.type(scalar),
                             _repeat.MASK_PLACEHOLDER, repeat,
                             _repeat.UnaryRepeatParams(*strides), isSetMask=False)
    return run


for _n, _api in _BINARY.items():
    HANDLERS[_n] = _binary(_api)
for _n, _api in _UNARY.items():
    HANDLERS[_n] = _unary(_api)
for _n, _api in _SCALAR.items():
    HANDLERS[_n] = _scalar(_api)


@handler("vector_dup")
def _vector_dup(rt, dst, scalar, repeat, dst_blk, src_blk, dst_rep, src_rep):
    d = rt.local(dst, "Duplicate")
    _asc().Duplicate(d, d.dtype.type(scalar), _repeat.MASK_PLACEHOLDER, repeat, dst_blk,
                     dst_rep, isSetMask=False)


# -- the sample's host program: acl calls and <<<>>> launches -----------------------------------
def _cpp_checks():
    from npusim.ascendc.checker import CheckerConfig
    return CheckerConfig(warn={"Uninitialised"})


class HostSession:
    """The device a sample's host ``main`` runs against: its SoC, GM, the launches' profiles
    and the host buffers aclrtMallocHost handed out."""

    def __init__(self, soc, gm, checks=None):
        self.soc = soc
        self.gm = gm
        #: default: uninitialised-UB reads are warnings, since the kernel's C++ scalar stores
        #: (LocalTensor::SetValue through host pointers) are invisible to the checker
        self.checks = checks if checks is not None else _cpp_checks()
        self.profiles: list = []
        self.host_buffers: dict = {}
        self.kernel_type = None          # KERNEL_TYPE_AIC_ONLY for a cube kernel
        self.kernel_types: dict = {}     # kernel name -> builder.kernel_types' kind
        self.mix = False                 # a MIX build: each kernel launches as its type
        #: kernel name -> index of its workspace parameter (GetSysWorkSpacePtr's value)
        self.workspace_params: dict = {}


def _host(rt) -> HostSession:
    if rt.host is None:
        raise KernelError("npusim.cpp", "host runtime calls need a HostSession "
                          "(npusim.cpp.run_host)")
    return rt.host


def _ok(rt, *args):
    _host(rt)
    return 0


for _n in ("aclInit", "aclFinalize", "aclrtSetDevice", "aclrtResetDevice", "aclrtDestroyStream",
           "aclrtSynchronizeStream", "aclrtDestroyContext", "aclrtSynchronizeDevice"):
    HANDLERS[_n] = _ok


@handler("aclrtCreateStream")
def _create_stream(rt, stream_p):
    _host(rt)
    ctypes.c_void_p.from_address(int(stream_p)).value = 0x5
    return 0


@handler("aclrtCreateContext")
def _create_context(rt, context_p, device_id=0):
    """One device, one context: a non-null handle."""
    _host(rt)
    ctypes.c_void_p.from_address(int(context_p)).value = 0x7
    return 0


def _gm_alloc(rt, size: int) -> int:
    h = _host(rt)
    addr = h.gm.malloc(int(size))
    rt.map_gm(h.gm)
    return rt.host_pointer(h.gm, addr)


@handler("aclrtMalloc")
def _acl_malloc(rt, dev_p, size, policy=0):
    ctypes.c_void_p.from_address(int(dev_p)).value = _gm_alloc(rt, size)
    return 0


@handler("GmAlloc")
def _gm_alloc_handler(rt, size):
    return _gm_alloc(rt, size)


@handler("aclrtFree", "GmFree")
def _acl_free(rt, ptr):
    h = _host(rt)
    rt.map_gm(h.gm)
    h.gm.free(rt.device_address(int(ptr), "aclrtFree"))
    rt.map_gm(h.gm)
    return 0


@handler("aclrtMallocHost")
def _acl_malloc_host(rt, host_p, size):
    buf = np.zeros(max(int(size), 1), np.uint8)
    _host(rt).host_buffers[buf.ctypes.data] = buf
    ctypes.c_void_p.from_address(int(host_p)).value = buf.ctypes.data
    return 0


@handler("aclrtFreeHost")
def _acl_free_host(rt, ptr):
    _host(rt).host_buffers.pop(int(ptr), None)
    return 0


@handler("aclrtMemcpy")
def _acl_memcpy(rt, dst, dst_max, src, count, kind):
    _host(rt)
    if count > dst_max:
        return 107000      # ACL_ERROR_INVALID_PARAM (docs/reference/api.md §6)
    ctypes.memmove(int(dst), int(src), int(count))
    return 0


@handler("aclrtMemset")
def _acl_memset(rt, dst, dst_max, value, count):
    _host(rt)
    ctypes.memset(int(dst), int(value), int(min(count, dst_max)))
    return 0


def _ctype_of(arg):
    if isinstance(arg, Ptr):
        return ctypes.c_void_p, int(arg)
    if isinstance(arg, tuple):                      # a struct by value: its bytes
        addr, size = arg
        st = type("ArgStruct", (ctypes.Structure,), {"_fields_": [("b", ctypes.c_uint8 * size)]})
        return st, st.from_buffer_copy(ctypes.string_at(addr, size))
    if isinstance(arg, float):
        return ctypes.c_double, arg
    if isinstance(arg, np.floating):
        return ctypes.c_float, float(arg)           # half/bfloat16 by value: not supported
    return (ctypes.c_int64 if arg < 0 else ctypes.c_uint64), arg


#: kernel_types' kinds -> the launch's KernelMetaType name (A2/A3)
LAUNCH_TYPES = {"aiv": "KERNEL_TYPE_AIV_ONLY", "aic": "KERNEL_TYPE_AIC_ONLY",
                "mix": "KERNEL_TYPE_MIX_AIC_1_2", "mix11": "KERNEL_TYPE_MIX_AIC_1_1"}


def run_block(rt, cfn, args, workspace: int = 0) -> None:
    """Run one core of a launch: ``cfn(*args)`` of ``rt``'s library on the current core,
    with its globals set (and C++ state of its own when the cores interleave)."""
    ctx = _core.current_core()
    core_type = {_core.AIC: 1, _core.AIV: 2}.get(ctx.core_kind, 0)
    # the headers' block_idx is the block (AI core): an AIV's GetBlockIdx is
    # block_idx * g_taskRation + sub_block_idx (kernel_operator_sys_var_impl.h, CPU mode)
    rt.begin_block(ctx, ctx.block_idx // ctx.task_ratio, ctx.block_num, ctx.sub_block_idx,
                   ctx.task_ratio, core_type)
    try:
        if hasattr(rt.lib, "npusim_set_sys_workspace"):
            rt.lib.npusim_set_sys_workspace(ctypes.c_void_p(workspace or None))
        with abort_as_error():
            cfn(*args)
    finally:
        rt.end_block()


def interleave(soc, kind: str, block_dim: int) -> bool:
    """Whether a launch runs its cores as coroutines that may wait for each other (a MIX
    launch always; a vector or cube launch whose blocks are all resident at once, so that
    a block may wait for another: blockDim at most the cores of that kind)."""
    if kind.startswith("mix"):
        return True
    cores = soc.cube_block_num if kind == "aic" else soc.vector_block_num
    return block_dim <= cores


@handler("__npusim_launch__")
def _launch(rt, fn, block_dim, stream, name_p, *args):
    """``kernel<<<blockDim, l2ctrl, stream>>>(args)``: run_kernel on the session's device."""
    from npusim.ascendc.types import KernelMetaType
    from npusim.launch import run_kernel
    h = _host(rt)
    name = ctypes.string_at(int(name_p)).decode()
    types_values = [_ctype_of(a) for a in args]
    proto = ctypes.CFUNCTYPE(None, *[t for t, _ in types_values])
    cfn = proto(int(fn))
    values = tuple(v for _, v in types_values)
    base = name.split("<")[0].split("::")[-1]
    ws = h.workspace_params.get(base)
    workspace = int(args[ws]) if ws is not None and ws < len(args) else 0

    kind = h.kernel_types.get(base, "aic" if h.kernel_type is not None else "aiv")
    kernel_type = h.kernel_type
    if h.mix:                         # one build for both kinds: the kernel's own type
        kernel_type = KernelMetaType[LAUNCH_TYPES[kind]]

    def block(*a):
        run_block(rt, cfn, a, workspace)

    block.npusim_lockstep = False
    block.npusim_timing_only = False
    block.__name__ = name
    rt.map_gm(h.gm)
    sync_all = not kind.startswith("mix") and interleave(h.soc, kind, int(block_dim))
    checks = h.checks
    if rt.uses_gm_flags and checks.cross_block == "error":
        # IBSet/IBWait order blocks through flags in GM, which the end-of-launch comparison
        # of the blocks' GM accesses (SyncAll phases) cannot see: its findings are warnings
        import dataclasses
        checks = dataclasses.replace(checks, cross_block="warn")
    try:
        prof = run_kernel(block, int(block_dim), values, soc=h.soc, gm=h.gm, name=name,
                          checks=checks, kernel_type=kernel_type, sync_all=sync_all)
    finally:
        corestate.end_launch()        # the host program's C++ state again
    h.profiles.append(prof)
    return 0


# -- more vector instructions ------------------------------------------------------------------
_ROUND = {"": "CAST_NONE", "r": "CAST_RINT", "f": "CAST_FLOOR", "c": "CAST_CEIL",
          "a": "CAST_ROUND", "z": "CAST_TRUNC", "o": "CAST_ODD"}


_CONV_TYPES = {"f16": np.float16, "f32": np.float32, "bf16": _types.bfloat16, "s8": np.int8,
               "u8": np.uint8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "s4": None}


def _vconv(src_t, dst_t, round_mode):
    """vconv_<src>2<dst>[round]: Cast with the operands seen as the types the name gives."""
    def run(rt, dst, src, repeat, *strides):
        if len(strides) != 4:
            raise KernelError("Cast", f"the {len(strides) + 3}-argument form is not modelled yet")
        if _CONV_TYPES[src_t] is None or _CONV_TYPES[dst_t] is None:
            raise KernelError("Cast", f"vconv_{src_t}2{dst_t}: int4 conversions are not "
                              "modelled yet")
        _asc().Cast(rt.local(dst, "Cast", _CONV_TYPES[dst_t]),
                    rt.local(src, "Cast", _CONV_TYPES[src_t]),
                    _types.RoundMode[round_mode], _repeat.MASK_PLACEHOLDER, repeat,
                    _repeat.UnaryRepeatParams(*strides), isSetMask=False)
    return run


def _register_vconv():
    import re
    from pathlib import Path
    inc = Path(__file__).with_name("include") / "intrinsics.inc"
    for name in re.findall(r"NPUSIM_INTRINSIC\(\w+, (vconv_\w+)\)", inc.read_text()):
        m = re.fullmatch(r"vconv_(bf16|f16|f32|s4|s8|u8|s16|s32|s64)2(bf16|f16|f32|s4|s8|u8|s16|"
                         r"s32|s64)([rfcazo]?)", name)
        if m:
            HANDLERS[name] = _vconv(m.group(1), m.group(2), _ROUND[m.group(3)])


_register_vconv()


@handler("set_mov_pad_val")
def _set_mov_pad_val(rt, bits):
    rt.ctx.cpp_pad_bits = bits


def _pad_dtype(ptr, name: str):
    size = {"b8": 1, "b16": 2, "b32": 4}[name.rsplit("_", 1)[1]]
    return ptr.dtype if ptr.dtype.itemsize == size else np.dtype(f"uint{8 * size}")


def _copy_gm_to_ubuf_align(name):
    def run(rt, dst, src, sid, n_burst, len_burst, left, right, src_gap, dst_gap):
        dt = _pad_dtype(dst, name)
        bits = getattr(rt.ctx, "cpp_pad_bits", None)
        pad = _types.DataCopyPadExtParams(False, left, right, 0)
        if bits is not None:
            pad.isPad = True
            pad.paddingValue = np.array([bits], np.uint64).view(np.uint8)[:dt.itemsize] \
                .view(dt)[0].item()
        span = n_burst * (len_burst + src_gap)
        _asc().DataCopyPad(rt.local(dst, "DataCopyPad", dt),
                           rt.global_(src, span, "DataCopyPad", dt),
                           _types.DataCopyExtParams(n_burst, len_burst, src_gap, dst_gap), pad)
        _poll(rt, "DataCopyPad", src, span)
    return run


def _copy_ubuf_to_gm_align(name):
    def run(rt, dst, src, sid, n_burst, len_burst, left, right, src_gap, dst_gap):
        dt = _pad_dtype(src, name)
        span = n_burst * (len_burst + dst_gap)
        _asc().DataCopyPad(rt.global_(dst, span, "DataCopyPad", dt),
                           rt.local(src, "DataCopyPad", dt),
                           _types.DataCopyExtParams(n_burst, len_burst, src_gap, dst_gap))
    return run


for _b in ("b8", "b16", "b32"):
    HANDLERS[f"copy_gm_to_ubuf_align_{_b}"] = _copy_gm_to_ubuf_align(f"x_{_b}")
    HANDLERS[f"copy_ubuf_to_gm_align_{_b}"] = _copy_ubuf_to_gm_align(f"x_{_b}")


@handler("copy_ubuf_to_ubuf")
def _copy_ubuf_to_ubuf(rt, dst, src, sid, n_burst, len_burst, src_stride, dst_stride):
    _asc().DataCopy(rt.local(dst, "DataCopy", np.uint8), rt.local(src, "DataCopy", np.uint8),
                    _types.DataCopyParams(n_burst, len_burst, src_stride, dst_stride))


@handler("vcopy")
def _vcopy(rt, dst, src, repeat, dst_stride, src_stride, dst_rep, src_rep):
    from npusim.ascendc.datacopy import CopyRepeatParams
    _asc().Copy(rt.local(dst, "Copy"), rt.local(src, "Copy"), _repeat.MASK_PLACEHOLDER, repeat,
                CopyRepeatParams(dst_stride, src_stride, dst_rep, src_rep), isSetMask=False)


@handler("vbrcb")
def _vbrcb(rt, dst, src, dst_blk, dst_rep, repeat):
    from npusim.ascendc.gather import BrcbRepeatParams
    _asc().Brcb(rt.local(dst, "Brcb"), rt.local(src, "Brcb"), repeat,
                BrcbRepeatParams(dst_blk, dst_rep))


def _vcmpv(mode):
    def run(rt, dst, src0, src1, repeat, *strides):
        if len(strides) != 6:
            raise KernelError("Compare", f"the {len(strides) + 4}-argument form is not "
                              "modelled yet")
        from npusim.ascendc.compare import CMPMODE
        _asc().Compare(rt.local(dst, "Compare"), rt.local(src0, "Compare"),
                       rt.local(src1, "Compare"), CMPMODE[mode], _repeat.MASK_PLACEHOLDER,
                       repeat, _repeat.BinaryRepeatParams(*strides), isSetMask=False)
    return run


for _m in ("eq", "ne", "lt", "le", "gt", "ge"):
    HANDLERS[f"vcmpv_{_m}"] = _vcmpv(_m.upper())


@handler("vcadd")
def _vcadd(rt, dst, src, repeat, dst_rep, src_blk, src_rep, mode=0):
    if mode:
        raise KernelError("WholeReduceSum", f"vcadd mode {mode} is not modelled yet")
    _asc().WholeReduceSum(rt.local(dst, "WholeReduceSum"), rt.local(src, "WholeReduceSum"),
                          _repeat.MASK_PLACEHOLDER, repeat, dst_rep, src_blk, src_rep,
                          isSetMask=False)


def _whole_minmax(api):
    def run(rt, dst, src, repeat, dst_rep, src_blk, src_rep, order=0):
        from npusim.ascendc.reduce import ReduceOrder
        getattr(_asc(), api)(rt.local(dst, api), rt.local(src, api), _repeat.MASK_PLACEHOLDER,
                             repeat, dst_rep, src_blk, src_rep, ReduceOrder(order),
                             isSetMask=False)
    return run


HANDLERS["vcmax"] = _whole_minmax("WholeReduceMax")
HANDLERS["vcmin"] = _whole_minmax("WholeReduceMin")


def _block_reduce(api):
    def run(rt, dst, src, repeat, dst_rep, src_blk, src_rep):
        getattr(_asc(), api)(rt.local(dst, api), rt.local(src, api), repeat,
                             _repeat.MASK_PLACEHOLDER, dst_rep, src_blk, src_rep,
                             isSetMask=False)
    return run


HANDLERS["vcgadd"] = _block_reduce("BlockReduceSum")
HANDLERS["vcgmax"] = _block_reduce("BlockReduceMax")
HANDLERS["vcgmin"] = _block_reduce("BlockReduceMin")
HANDLERS["vcpadd"] = _block_reduce("PairReduceSum")


# -- select, the CMPMASK register, atomics ------------------------------------------------------
@handler("set_cmpmask")
def _set_cmpmask(rt, src):
    """CMPMASK <- 16 bytes at ``src``. In the tensor-tensor select the headers' CPU mode put
    the selMask's host address there: npusim's register holds its UB byte offset instead."""
    t = rt.local(src, "SetCmpMask", np.uint8)
    word = int(np.frombuffer(rt.ctx.ub[t.offset:t.offset + 8].tobytes(), np.int64)[0])
    base, size = rt.hw[_core.UB]
    if base <= word < base + size:
        rt.ctx.ub[t.offset:t.offset + 8] = np.frombuffer(
            np.int64(word - base).tobytes(), np.uint8)
    _asc().SetCmpMask(rt.local(src, "SetCmpMask", np.uint8))


@handler("vsel")
def _vsel(rt, dst, src0, src1, repeat, *rest):
    from npusim.ascendc.compare import SELMODE
    if len(rest) not in (6, 7):
        raise KernelError("Select", f"the {len(rest) + 4}-argument form is not modelled yet")
    mode = SELMODE(rest[6] if len(rest) == 7 else 0)
    _asc().Select(rt.local(dst, "Select"), rt.local(src0, "Select"), rt.local(src1, "Select"),
                  repeat, _repeat.BinaryRepeatParams(*rest[:6]), selMode=mode)


_ATOMIC_TYPES = {"f32": np.float32, "f16": np.float16, "s16": np.int16, "s32": np.int32,
                 "s8": np.int8, "bf16": _types.bfloat16}


def _set_atomic_type(rt, dt) -> None:
    """``set_atomic_<type>``: the type register of the atomic unit. The headers'
    SetAtomicAdd<T> writes the mode first (``set_atomic_add``) and the type after it
    (kernel_operator_set_atomic_impl.h), so a type written while atomic add is on retypes
    the adds from then on."""
    rt.ctx.cpp_atomic_dtype = np.dtype(dt)
    if rt.ctx.atomic_dtype is not None:
        _asc().SetAtomicAdd(dt)


for _t, _dt in _ATOMIC_TYPES.items():
    HANDLERS[f"set_atomic_{_t}"] = (lambda dt: lambda rt: _set_atomic_type(rt, dt))(_dt)


@handler("set_atomic_add")
def _set_atomic_add(rt):
    _asc().SetAtomicAdd(getattr(rt.ctx, "cpp_atomic_dtype", np.dtype(np.float32)))


# -- gather-mask and sort ------------------------------------------------------------------------
@handler("vreducev2")
def _vreducev2(rt, dst, src0, src1, repeat, src0_blk, pattern_mode, src0_rep, src1_rep):
    """GatherMask: Counter mode (the mask register's count) when the unit is in Counter mode,
    else Normal mode; a built-in pattern 1-7 or the pattern tensor ``src1``."""
    from npusim.ascendc.gather import GatherMaskParams
    ctx = rt.ctx
    counter = bool(ctx.mask_counter)
    mask = int(ctx.vector_mask[0]) if counter else 0
    d = rt.local(dst, "GatherMask")
    pattern = int(pattern_mode) if pattern_mode else rt.local(
        src1, "GatherMask", np.uint16 if d.dtype.itemsize == 2 else np.uint32)
    _asc().GatherMask(d, rt.local(src0, "GatherMask"), pattern, counter, mask,
                      GatherMaskParams(src0_blk, repeat, src0_rep, src1_rep))
    if counter:
        _repeat.SetMaskCount()


@handler("get_rsvd_cnt")
def _get_rsvd_cnt(rt):
    return rt.ctx.rsvd_cnt


@handler("vbitsort")
def _vbitsort(rt, dst, src0, src1, repeat):
    _asc().Sort32(rt.local(dst, "Sort32"), rt.local(src0, "Sort32"),
                  rt.local(src1, "Sort32", np.uint32), repeat)


@handler("vtranspose")
def _vtranspose(rt, dst, src):
    """The 16 x 16 transpose of 2-byte elements (Transpose's basic form)."""
    d = rt.local(dst, "Transpose")
    _asc().Transpose(d, rt.local(src, "Transpose", d.dtype))


# TransDataTo5HD's register form: eight VA registers of eight UB addresses each; the headers
# write the 16 dst addresses to VA0/VA1 and the 16 src addresses to VA2/VA3
# (kernel_operator_vec_transpose_impl.h SetVaReg), then issue scatter_vnchwconv_b<bits>
# (VA0, VA2, repeat, dstRepStride, srcRepStride[, dstHighHalf, srcHighHalf]).
@handler("set_va_reg_sb")
def _set_va_reg_sb(rt, va, array):
    """VA register ``va`` := the eight addresses at ``array`` (host pointers into the UB)."""
    base, size = rt.hw[_core.UB]
    addrs = np.frombuffer(ctypes.string_at(int(array), 64), np.uint64).astype(np.int64) - base
    if ((addrs < 0) | (addrs >= size)).any():
        raise KernelError("TransDataTo5HD", f"VA{int(va)}: an address outside the UB")
    regs = rt.ctx.__dict__.setdefault("cpp_va_regs", {})
    regs[int(va)] = [int(a) for a in addrs]


def _va_list(rt, va: int) -> list:
    regs = getattr(rt.ctx, "cpp_va_regs", {})
    if va not in regs or va + 1 not in regs:
        raise KernelError("TransDataTo5HD", f"VA{va}/VA{va + 1} were not set (set_va_reg_sb)")
    return regs[va] + regs[va + 1]


def _scatter_vnchwconv(dtype):
    def run(rt, dst_va, src_va, repeat, dst_rep, src_rep, dst_high=False, src_high=False):
        from npusim.ascendc.transpose import TransDataTo5HDParams
        _asc().TransDataTo5HD(_va_list(rt, int(dst_va)), _va_list(rt, int(src_va)),
                              TransDataTo5HDParams(bool(dst_high), bool(src_high), int(repeat),
                                                   int(dst_rep), int(src_rep)), dtype=dtype)
    return run


for _bits, _dt in ((8, np.uint8), (16, np.uint16), (32, np.uint32)):
    HANDLERS[f"scatter_vnchwconv_b{_bits}"] = _scatter_vnchwconv(_dt)


# Scalar GM access through the data cache (kernel_scalar.h: WriteGmByPassDCache and its read).
@handler("st_dev")
def _st_dev(rt, value, dst, offset):
    """Store ``value`` (the bits of one element of dst's type) at dst + offset bytes (every
    call site of the headers passes offset 0)."""
    dt = dst.dtype
    g = rt.global_(Ptr(int(dst) + offset), dt.itemsize, "WriteGmByPassDCache", dt)
    g.SetValue(0, np.array([value & _MASK64], np.uint64).view(np.uint8)[:dt.itemsize]
               .view(dt)[0])


@handler("ld_dev")
def _ld_dev(rt, src, offset):
    dt = src.dtype
    g = rt.global_(Ptr(int(src) + offset), dt.itemsize, "ReadGmByPassDCache", dt)
    v = np.array([g.GetValue(0)], dt)
    return int(np.concatenate([v.view(np.uint8), np.zeros(8 - dt.itemsize, np.uint8)])
               .view(np.uint64)[0])
from npusim.cpp import dispatch_cube  # noqa: E402,F401  (the cube intrinsics register here)
from npusim.cpp import host_platform  # noqa: E402,F401  (PlatformAscendC answers from here)


# -- the 4-way merge sort (MrgSort; dav_c220 kernel_operator_proposal_impl.h) -------------------
@handler("vmrgsort4")
def _vmrgsort4(rt, dst, addr_array, lengths, config):
    """MrgSort: ``addr_array`` holds the four queues' UB addresses (null for unused ones),
    ``lengths`` their lengths (16 bits each, queue 0 lowest), ``config`` repeatTimes [7:0],
    validBit [11:8], isExhaustedSuspension [12]. The counts merged per queue are kept for
    ``get_vms4_sr`` (VMS4_SR: 16 bits per queue)."""
    from npusim.ascendc.sort import MrgSort, MrgSortSrcList
    ptrs = (ctypes.c_uint64 * 4).from_address(int(addr_array))
    d = rt.local(dst, "MrgSort")
    queues = [rt.local(Ptr(p), "MrgSort", d.dtype) if p else None for p in ptrs]
    counts = [(lengths >> (16 * i)) & 0xFFFF for i in range(4)]
    sorted_num = [0, 0, 0, 0]
    MrgSort(d, MrgSortSrcList(*queues), counts, sorted_num, (config >> 8) & 0xF,
            config & 0xFF, bool((config >> 12) & 1))
    rt.ctx.cpp_vms4_sr = sum((int(n) & 0xFFFF) << (16 * i) for i, n in enumerate(sorted_num))


@handler("get_vms4_sr")
def _get_vms4_sr(rt):
    return getattr(rt.ctx, "cpp_vms4_sr", 0)
