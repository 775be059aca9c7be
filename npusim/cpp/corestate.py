"""Per-core C++ state of a compiled kernel library, for cores that run interleaved.

Ascend C's CPU-debug mode assumes one process per core (Huawei's launcher forks one per
core): the headers keep per-core state in C++ globals (``block_idx``, ``g_coreType``, the
TPipe pointer ``g_vecTPipePtr``, the Matmul API's ``g_kfcClient``, ``ConstDefiner``'s set of
used allocators...) and in one host buffer per core memory (``ConstDefiner``: UB, L1, L0A,
L0B, L0C, BT, FB). npusim runs every core of a launch in one process, as greenlets
(:mod:`npusim.launch`) when the cores wait for each other (MIX launches, SyncAll, blocks that
poll GM flags the others write). So each core here gets what a fork would have given it:

* the library's writable data (the part of its writable segment that is not RELRO: ``.data``,
  ``.bss``, ``.got.plt``; and the GNU-unique objects it uses, wherever they live), saved
  when the core hands over and restored when it goes on; a core starts from the state the
  host program left (the launch's base snapshot), as a forked process would;
* the bytes of the headers' core-memory buffers the core is bound to (an AIV's UB; an
  AIC's L1/L0A/L0B/L0C/BT/FB), swapped with them.

Swaps happen lazily: when an intrinsic arrives from a core whose state is not the one
loaded (:func:`ensure`), that is only after a core handed over at a wait. Cost per swap:
a memcpy of the library's globals (a few KiB), and of a core memory (192 KiB for an AIV's
UB, 776 KiB for an AIC's L1/L0/BT/FB) only when the core going on uses a buffer another core
filled since; blocks that never wait never swap twice.

Cross-core polling: a core that re-reads the same GM bytes it read last time (IBWait's and
WaitPreBlock's ``DataCopy`` loops, a ``dcci`` of a message line the Matmul API's server
polls) hands over (:func:`poll`) until those bytes change, or until no other core can run.
"""
from __future__ import annotations

import ctypes
import struct
import subprocess
import weakref

from npusim.errors import SyncError

#: Forced resumes of polling cores in a row (no polled bytes changed, no other core could
#: run) after which the launch is reported as hanging.
STALL_LIMIT = 20000

_PT_LOAD, _PT_GNU_RELRO, _PF_W = 1, 0x6474E552, 2
_libdl = ctypes.CDLL(None)
_libdl.dlsym.restype = ctypes.c_void_p
_libdl.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


class _LinkMap(ctypes.Structure):
    _fields_ = [("l_addr", ctypes.c_size_t), ("l_name", ctypes.c_char_p)]


def _load_base(lib: ctypes.CDLL) -> int:
    """The library's load address (glibc's dlopen handle is its ``struct link_map``)."""
    return ctypes.cast(lib._handle, ctypes.POINTER(_LinkMap)).contents.l_addr


def writable_regions(lib: ctypes.CDLL) -> list[tuple[int, int]]:
    """(address, size) of the library's per-process writable data: its writable PT_LOAD
    segments minus PT_GNU_RELRO (read-only once relocated), plus the GNU-unique data
    objects it binds to (the dynamic linker shares those between libraries)."""
    path = lib._name
    with open(path, "rb") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    loads, relro = [], None
    for i in range(phnum):
        p_type, p_flags, _off, vaddr, _pa, _fsz, memsz, _al = struct.unpack_from(
            "<IIQQQQQQ", table, i * phentsize)
        if p_type == _PT_LOAD and p_flags & _PF_W:
            loads.append((vaddr, vaddr + memsz))
        elif p_type == _PT_GNU_RELRO:
            relro = (vaddr, vaddr + memsz)
    base = _load_base(lib)
    out = []
    for lo, hi in loads:
        if relro is not None and relro[0] <= lo < relro[1]:
            lo = max(lo, relro[1])
        if hi > lo:
            out.append((base + lo, hi - lo))
    # GNU-unique objects (inline functions' statics, inline variables): possibly another
    # library's copy, which this one then uses
    nm = subprocess.run(["nm", "-D", "-S", "--defined-only", path], capture_output=True,
                        text=True).stdout
    writable = _writable_mappings()
    for line in nm.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] == "u":
            addr = _libdl.dlsym(lib._handle, parts[3].encode())
            size = int(parts[1], 16)
            if (addr and size and not any(a <= addr < a + s for a, s in out)
                    and any(lo <= addr and addr + size <= hi for lo, hi in writable)):
                out.append((addr, size))        # not the read-only ones (constants)
    return out


def _writable_mappings() -> list[tuple[int, int]]:
    """The process's writable memory mappings (/proc/self/maps)."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            if perms[1] == "w":
                lo, hi = span.split("-")
                out.append((int(lo, 16), int(hi, 16)))
    return out


class LibraryState:
    """The writable regions of one loaded library (computed once), less the core-memory
    buffers ``exclude`` ((address, size): swapped on their own, see _claim)."""

    def __init__(self, lib: ctypes.CDLL, exclude=()):
        regions = writable_regions(lib)
        for lo, size in exclude:
            if not lo or not size:
                continue
            hi, cut = lo + size, []
            for a, n in regions:
                if a < hi and lo < a + n:
                    if a < lo:
                        cut.append((a, lo - a))
                    if hi < a + n:
                        cut.append((hi, a + n - hi))
                else:
                    cut.append((a, n))
            regions = cut
        self.regions = regions

    def snapshot(self) -> list:
        return [ctypes.string_at(a, s) for a, s in self.regions]

    def load(self, saved: list) -> None:
        for (a, s), b in zip(self.regions, saved):
            ctypes.memmove(a, b, s)


class CoreRecord:
    """One core's C++ state while its launch runs: the library's globals and the core
    memories it is bound to (saved while another core's are loaded), and the runtime's
    per-core fields."""

    def __init__(self, rt, ctx, launch):
        self.rt, self.ctx, self.launch = rt, ctx, launch
        self.saved = launch.base(rt)
        self.bound: dict = {}           # memory name -> the headers' host buffer (a view)
        self.memories: dict = {}        # memory name -> this core's bytes while not loaded
        self.error = None
        self.tensors: dict = {}
        self.finished = False
        self.parked = None              # while parked: a function saying it may go on
        self.last_read = None           # (address, size, bytes) of its last GM read
        self.lines: dict = {}           # dcci'd cache lines -> the bytes seen
        self.wait = ctx.scheduler_wait  # the launch's own park (launch._CoreCoroutine)

    def wait_parked(self, parked, ready, what: str) -> None:
        """Park until ``ready()`` (``what`` names the wait if it never ends), with
        ``parked`` noted as what this core waits on (the poll's idle test reads it); the
        core's C++ state is loaded again when it goes on."""
        self.parked = parked
        try:
            self.wait(ready, what)
        finally:
            self.parked = None
            ensure(self.ctx)

    def save(self) -> None:
        self.saved = self.rt.state.snapshot()
        rt = self.rt
        self.error, self.tensors = rt.error, rt._tensors

    def load(self) -> None:
        rt = self.rt
        rt.state.load(self.saved)
        for mem, host in self.bound.items():
            _claim(self, mem, host)
        rt.ctx, rt.error, rt._tensors = self.ctx, self.error, self.tensors

    def bind(self, mem: str, host) -> None:
        """The core uses the headers' host buffer ``host`` as its memory ``mem``."""
        self.bound[mem] = host
        _claim(self, mem, host)


#: host buffer address -> the CoreRecord whose bytes it holds: a core memory is swapped only
#: when a core that uses the same buffer goes on (an AIC and an AIV never swap each other's)
_OWNER: dict = {}


def _claim(rec, mem: str, host) -> None:
    key = host.ctypes.data
    cur = _OWNER.get(key)
    if cur is rec:
        return
    if cur is not None:
        buf = cur.memories.get(mem)
        if buf is None:
            cur.memories[mem] = host.copy()
        else:
            buf[:] = host
    buf = rec.memories.get(mem)
    if buf is not None:
        host[:] = buf
    _OWNER[key] = rec


class Launch:
    """The cores of one interleaved launch and the base snapshots they start from."""

    def __init__(self, key, expected: int):
        self.key = key
        self.expected = expected
        self.records: list = []
        self.bases: dict = {}           # runtime -> the host program's state of its library
        self.stalls = 0
        self.sync_ranges: list = []     # device [lo, hi) of GM flags polled by a core

    def base(self, rt) -> list:
        b = self.bases.get(rt)
        if b is None:       # a library first loaded during the launch: untouched so far
            b = self.bases[rt] = rt.state.snapshot()
        return b

    def add_sync_range(self, host_addr: int, size: int) -> None:
        """GM bytes a core polls are a flag between cores, not data: the checker's
        end-of-launch comparison of the blocks' GM accesses (which knows SyncAll phases,
        not flags in GM) leaves them out."""
        rec = self.records[0]
        dev = rec.rt.device_address(host_addr, "DataCopy")
        r = (dev, dev + size)
        if r in self.sync_ranges:
            return
        self.sync_ranges.append(r)
        for other in self.records:
            if other.finished:
                scrub(other.ctx, self.sync_ranges)

    def restore_bases(self) -> None:
        for rt, b in self.bases.items():
            rt.state.load(b)
            rt.ctx, rt.error, rt._tensors = None, None, {}


#: The runtimes of the loaded libraries (npusim.cpp.dispatch.KernelRuntime registers each).
RUNTIMES: weakref.WeakSet = weakref.WeakSet()
_ACTIVE: list = [None]       # the CoreRecord whose state is loaded
_LAUNCH: list = [None]       # the Launch running


def _launch_key(ctx):
    if ctx.mix is not None:
        return ctx.mix, len(ctx.mix.ctxs)
    if ctx.sync_all_barrier is not None:
        return ctx.sync_all_barrier, ctx.sync_all_barrier.parties
    return None, 0


def interleaved(ctx) -> bool:
    """Whether ``ctx`` runs as a coroutine (its launch's cores may interleave)."""
    return ctx.scheduler_wait is not None


def _unload() -> None:
    cur = _ACTIVE[0]
    if cur is not None:
        cur.save()
        _ACTIVE[0] = None


def end_launch() -> None:
    """Back to the host program's state of every library (after a launch, or before the
    next one)."""
    _unload()
    launch = _LAUNCH[0]
    if launch is not None:
        launch.restore_bases()
        _LAUNCH[0] = None
    _OWNER.clear()


def begin_core(rt, ctx) -> CoreRecord:
    """A new core of an interleaved launch: unload the running core's state, load the
    launch's base state of ``rt``'s library, and track the core."""
    key, expected = _launch_key(ctx)
    launch = _LAUNCH[0]
    if launch is None or launch.key is not key:
        end_launch()
        launch = _LAUNCH[0] = Launch(key, expected)
        for other in list(RUNTIMES):         # the host program's state of every library
            launch.base(other)
    _unload()
    rec = CoreRecord(rt, ctx, launch)
    rt.state.load(rec.saved)
    launch.records.append(rec)
    ctx.cpp_record = rec
    _ACTIVE[0] = rec

    ctx.scheduler_wait = lambda ready, what: rec.wait_parked(ready, ready, what)
    return rec


def ensure(ctx) -> None:
    """Load ``ctx``'s C++ state if another core's is loaded."""
    rec = getattr(ctx, "cpp_record", None)
    if rec is not None and _ACTIVE[0] is not rec:
        _unload()
        rec.load()
        _ACTIVE[0] = rec


def end_core(ctx) -> None:
    rec = getattr(ctx, "cpp_record", None)
    if rec is not None:
        rec.finished = True
        if rec.launch.sync_ranges:
            scrub(ctx, rec.launch.sync_ranges)


def scrub(ctx, ranges) -> None:
    """Drop the accesses of ``ctx``'s GM log (checker.GmLog) that touch ``ranges``."""
    log = ctx.gm_access
    if log is None or not log.entries:
        return
    from npusim.ascendc.checker import GmLog
    kept = GmLog(keep=log.keep)
    for entry in log.entries:
        rows = entry[1]
        if not any(a < hi and lo < a + (n - 1) * p + w for a, w, p, n in rows
                   for lo, hi in ranges):
            kept.add(*entry)
    log.entries, log.flat = kept.entries, kept.flat


def _others_can_run(rec) -> bool:
    launch = rec.launch
    if len(launch.records) < launch.expected:
        return True                         # a core has not started yet
    for r in launch.records:
        if r is rec or r.finished:
            continue
        if r.parked is None or r.parked():
            return True
    return False


def poll(ctx, key, read) -> None:
    """A GM read of ``ctx`` (``key`` names what it read; ``read()`` returns its bytes
    now). If the core read the same bytes there last time, it is polling: it hands over
    until they change, or until no other core can run (then it goes on: a plain re-read).
    Not in an interleaved launch: nothing."""
    rec = getattr(ctx, "cpp_record", None)
    if rec is None:
        return
    data = read()
    dcci = key[0] == "dcci"
    last = rec.lines.get(key) if dcci else (rec.last_read[1] if rec.last_read is not None
                                            and rec.last_read[0] == key else None)
    if dcci:
        rec.lines[key] = data
    else:
        rec.last_read = (key, data)
    if last is None or last != data:
        return
    launch = rec.launch
    if not dcci:
        launch.add_sync_range(key[1], key[2])
    if not _others_can_run(rec):
        if all(r.finished for r in launch.records if r is not rec):
            return                          # alone: a plain re-read
        launch.stalls += 1                  # the others wait: for this core?
        if launch.stalls > STALL_LIMIT:
            waiting = [r.ctx.name for r in launch.records if r is not rec and not r.finished]
            raise SyncError(key[0], f"the kernel hangs: {rec.ctx.name} polls GM bytes (0x"
                            f"{key[1]:x}, {key[2]} B) that never change while "
                            f"{', '.join(waiting)} wait", core=rec.ctx.block_idx, line="?")
        return

    def changed():
        return read() != data

    def ready():
        if changed():
            launch.stalls = 0
            return True
        if _others_can_run(rec):
            return False
        launch.stalls += 1
        return launch.stalls <= STALL_LIMIT

    what = f"a GM poll ({key[0]} at 0x{key[1]:x}: its bytes never change)"
    rec.wait_parked(changed, ready, what)
