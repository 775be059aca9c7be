"""One simulated device: its SoC, global memory, streams and events on a simpy clock.

The device clock is a simpy environment in microseconds. Streams are in-order task
queues; a task is a kernel launch, an asynchronous copy over the host link, a memset,
an event record or an event wait. Nothing runs when a task is enqueued: the device runs
when the host synchronises (a stream, an event or the whole device), and then executes
every task that is ready, in simulated-time order, with its functional effect (the
kernel's numpy run, the bytes copied) applied when the task starts.

Kernels take the AI cores one at a time (a kernel occupies the device's cores for its
Task Duration); host-to-device and device-to-host copies each have one copy engine on
the host link (``host_link_bandwidth``, ``host_link_latency_us`` in the SoC preset), so
a copy on one stream overlaps a kernel on another.

Every task that runs leaves a :class:`TaskRecord` in ``Device.tasks`` (what msprof's
task_time and op_summary are made of): its stream, kind, start and end on the device
clock, bytes, and for a kernel its :class:`npusim.launch.KernelProfile`. Recording is a
few tuples per task and always on. *Tracing* — keeping every instruction's span, record
and kernel source line for a timeline (:mod:`npusim.trace`) — is switched on per device
(``Device(profiling=True)`` or ``device.profiling = True``); it is off by default, so a
normal run pays nothing for it.

How many records a device keeps (``Device.tasks``, ``profiles``, ``copies``): while
profiling is on, all of them (what a trace or op summary of the run is made of: msprof
collects when asked, and then everything); otherwise the last ``keep_records`` of each
(default :data:`KEEP_RECORDS`, 1000; None keeps all), so a long run's memory stays flat.
Each list counts every record it was ever given (:attr:`Records.total`), and
:meth:`Records.since` gives those added after a mark, so a caller measures a stretch of
work without holding the device's whole history. :meth:`Device.clear_records` forgets them
(``aclnn.runtime.clear_records`` from the host API; ``acl.rt.reset_device`` of a device
that is not profiling and ``acl.finalize`` release them).

A device can be limited to fewer vector cores than its SoC has (``max_cores``), as
``aclrtSetDeviceResLimit`` / torchair's ``limit_core_num`` limit the cores an operator
gets: the device's SoC record then reports that many cores, so the tilings
(``GetCoreNumAiv``) and the timing model (blocks beyond the limit run in later waves)
both see the limit.

Several host threads may use devices at once: enqueueing a task and running the clock
hold the process-wide lock of :mod:`npusim.runlock`, so each happens as a whole.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

import simpy

from npusim.errors import KernelError, NpuSimError, _outside_name, trim_traceback
from npusim.gm import GlobalMemory
from npusim.launch import KernelProfile, run_kernel
from npusim.runlock import LOCK
from npusim.soc import get_soc


class DeadlockError(NpuSimError):
    """The device went idle while the host waited for work that can never run."""


def kernel_exception(name: str, exc: Exception) -> KernelError:
    """A :class:`KernelError` for an exception a kernel's own Python raised (not a rule
    of the machine: a wrong argument count, a bad attribute...), naming the exception and
    the innermost kernel line of its traceback."""
    from npusim.ascendc.core import CoreContext
    line, core = "?", -1
    tb = exc.__traceback__
    while tb is not None:
        where = _outside_name(tb.tb_frame.f_code)
        if where is not None:
            line = f"{where}:{tb.tb_lineno}"
        ctx = tb.tb_frame.f_locals.get("ctx")     # the launch loop's current block
        if isinstance(ctx, CoreContext):
            core = ctx.block_idx
        tb = tb.tb_next
    err = KernelError(name, f"the kernel raised {type(exc).__name__}: {exc}", core=core,
                      line=line)
    err.__cause__ = exc                 # the original traceback stays reachable
    return err


#: Records of each kind (tasks, kernel profiles, copies) a device keeps while it is not
#: profiling: the last this many (``Device.keep_records``, see the module docstring).
KEEP_RECORDS = 1000


class Records(list):
    """The records of one kind a device keeps, oldest first (a list), and how many it was
    ever given.

    Attributes:
        total: records added since the device was made, including those trimmed or
            cleared since (never lowered).
    """

    def __init__(self):
        super().__init__()
        self.total = 0

    def append(self, item) -> None:
        super().append(item)
        self.total += 1

    def since(self, mark: int) -> list:
        """The records added after the first ``mark`` (a :attr:`total` read earlier) that
        are still kept, oldest first."""
        n = self.total - mark
        if n <= 0:
            return []
        return self[-n:] if n < len(self) else list(self)


#: Kinds of stream task (``TaskRecord.kind``).
KERNEL, MEMCPY, MEMSET, EVENT_RECORD, EVENT_WAIT, TASK = (
    "KERNEL", "MEMCPY", "MEMSET", "EVENT_RECORD", "EVENT_WAIT", "TASK")


@dataclass
class TaskRecord:
    """One stream task as it ran on the device clock.

    Attributes:
        task_id: device-wide sequence number, in the order the tasks ended (the order of
            ``Device.tasks``).
        stream_id: the stream's id (``Stream.id``).
        kind: KERNEL, MEMCPY, MEMSET, EVENT_RECORD, EVENT_WAIT or TASK (any other task,
            e.g. one a caller enqueued with :meth:`Stream.enqueue`).
        name: the kernel's name, the copy's link ("H2D", "D2H", "D2D"), or a label.
        start_us, end_us: device time the task started executing (after waiting for the
            AI cores or the copy engine) and ended (µs).
        nbytes: bytes a copy or memset moved (0 otherwise).
        profile: the kernel's KernelProfile (KERNEL tasks that ran cleanly), else None.
        error: the text of the error the task raised, or None.
    """

    task_id: int
    stream_id: int
    kind: str
    name: str
    start_us: float
    end_us: float
    nbytes: int = 0
    profile: KernelProfile | None = None
    error: str | None = None

    @property
    def duration_us(self) -> float:
        return self.end_us - self.start_us


def limit_cores(soc, max_cores: int | None):
    """``soc`` as seen by a device whose operators may use at most ``max_cores`` vector
    cores (AIV on the split A2/A3, AI cores on the coupled 910A/310P).

    A limit above the SoC's count uses the SoC's count, as torchair's ``limit_core_num``
    does ("如果配置的算子级核数超过AI处理器本身允许的最大核数，系统默认采用最大核数").
    Cube core counts are left alone [R] (a mixed launch's blocks are bounded by both: at
    most the cube cores, and twice them at most the vector cores).

    Raises:
        ValueError: ``max_cores`` is not an int >= 1.
    """
    if max_cores is None:
        return soc
    if isinstance(max_cores, bool) or not isinstance(max_cores, int) or max_cores < 1:
        raise ValueError(f"max_cores must be an int >= 1, got {max_cores!r}")
    if max_cores >= soc.vector_block_num:
        return soc
    if soc.is_split:
        return dataclasses.replace(soc, vector_core_cnt=max_cores)
    return dataclasses.replace(soc, ai_core_cnt=max_cores)


class Event:
    """A device event: a timestamp recorded by a stream.

    ``record_count`` counts records enqueued, ``done_count`` records executed; a wait
    enqueued after the k-th record waits for the k-th record to execute.
    """

    def __init__(self, device: "Device", flags: int = 0):
        self.device = device
        self.flags = flags
        self.record_count = 0
        self.done_count = 0
        self.timestamp_us: float | None = None
        self._waiters: list[tuple[int, simpy.Event]] = []

    @property
    def complete(self) -> bool:
        return self.done_count >= self.record_count and self.record_count > 0

    def _wait_for(self, generation: int):
        ev = self.device.env.event()
        if self.done_count >= generation:
            ev.succeed()
        else:
            self._waiters.append((generation, ev))
        return ev

    def _record_done(self, now: float) -> None:
        self.done_count += 1
        self.timestamp_us = now
        still = []
        for gen, ev in self._waiters:
            if self.done_count >= gen:
                ev.succeed()
            else:
                still.append((gen, ev))
        self._waiters = still


class Stream:
    """An in-order queue of device tasks.

    Attributes:
        errors: kernel errors raised by tasks of this stream since the last synchronize.
    """

    _ids = itertools.count(1)

    def __init__(self, device: "Device"):
        self.device = device
        self.id = next(self._ids)
        self.errors: list[Exception] = []
        with LOCK:                      # the device's clock is shared with other threads
            self._queue = simpy.Store(device.env)
            self._proc = device.env.process(self._run())
        self.destroyed = False

    def _run(self):
        env = self.device.env
        while True:
            task, kind, name, nbytes = yield self._queue.get()
            if kind is None:            # records itself (device tasks) or is a marker
                yield from task(self)
                continue
            start, n_errors = env.now, len(self.errors)
            yield from task(self)
            error = str(self.errors[-1]) if len(self.errors) > n_errors else None
            self.device._record(self, kind, name, start, env.now, nbytes, error=error)

    def enqueue(self, task, *, kind: str | None = TASK, name: str | None = None,
                nbytes: int = 0) -> None:
        """Append ``task``: a generator function ``task(stream)`` run on the device clock.

        The task leaves a :class:`TaskRecord` of ``kind`` (default TASK) named ``name``
        (default: the function's qualified name, e.g. ``_enqueue.task``) from when it
        starts to when it ends; ``kind=None`` records nothing (the device's own tasks
        record themselves).
        """
        if kind is not None and name is None:
            name = getattr(task, "__qualname__", "task").replace(".<locals>", "")
        with LOCK:
            self._queue.put((task, kind, name, nbytes))

    def marker(self) -> simpy.Event:
        """An event that fires when every task enqueued so far has finished."""
        ev = self.device.env.event()

        def task(stream):
            ev.succeed()
            yield from ()
        self.enqueue(task, kind=None)
        return ev


class Device:
    """A simulated Ascend device.

    Args:
        soc: a SoC name or :class:`npusim.soc.SocSpec` (default Ascend910B1).
        device_id: the id the host API uses for it.
        profiling: keep every kernel's instruction spans for traces (see the module
            docstring); can be changed later through the attribute.
        max_cores: at most this many vector cores for the device's kernels
            (:func:`limit_cores`); None for all of them.
        keep_records: while not profiling, keep the last this many records of each kind
            (an int >= 0; None: all). Default :data:`KEEP_RECORDS`.

    Attributes:
        soc, gm: the SocSpec (core counts limited by ``max_cores``) and its GlobalMemory
            (capacity ``soc.memory_size`` bytes).
        full_soc: the SoC preset without the core limit.
        env: the simpy environment; ``env.now`` is device time in µs.
        profiles: a KernelProfile per kernel launch, in execution order.
        copies: ``(kind, start_us, end_us, nbytes, stream_id)`` per async copy.
        tasks: a :class:`TaskRecord` per stream task, in the order they ended.
            ``profiles``, ``copies`` and ``tasks`` are :class:`Records`: all of them while
            profiling, else the last ``keep_records`` of each.
        profiling: whether launches keep their spans (``run_kernel(keep_spans=True)``),
            and every record.
        keep_records: how many records of each kind are kept while not profiling.
        deterministic: the ACL_OPT_DETERMINISTIC system parameter.
        timing_only: True: every launch runs timing-only (``run_kernel(functional=False)``,
            :mod:`npusim.ascendc.timing_only`: the same timing and records, the results
            not computed); False: functional; None (default): as the environment's
            ``NPUSIM_TIMING_ONLY`` says at each launch.

    Raises:
        ValueError: ``max_cores`` is not an int >= 1, or ``keep_records`` not an int >= 0
            or None.
    """

    def __init__(self, soc=None, device_id: int = 0, *, profiling: bool = False,
                 max_cores: int | None = None, keep_records: int | None = KEEP_RECORDS,
                 timing_only: bool | None = None):
        if keep_records is not None and (isinstance(keep_records, bool) or not isinstance(
                keep_records, int) or keep_records < 0):
            raise ValueError(f"keep_records must be an int >= 0 or None, got {keep_records!r}")
        self.keep_records = keep_records
        self.full_soc = get_soc(soc)
        self.soc = limit_cores(self.full_soc, max_cores)
        self.device_id = device_id
        self.profiling = bool(profiling)
        self.tasks = Records()             # TaskRecords
        self._task_ids = itertools.count()
        self.gm = GlobalMemory(self.soc.memory_size)
        self.env = simpy.Environment()
        self.aicore = simpy.Resource(self.env, capacity=1)
        self.links = {"H2D": simpy.Resource(self.env, 1), "D2H": simpy.Resource(self.env, 1),
                      "D2D": simpy.Resource(self.env, 1)}
        self.default_stream = Stream(self)
        self.profiles = Records()          # KernelProfiles
        self.copies = Records()            # (kind, start_us, end_us, nbytes, stream_id)
        self.deterministic = False
        self.timing_only = None if timing_only is None else bool(timing_only)

    def _record(self, stream: Stream, kind: str, name: str, start: float, end: float,
                nbytes: int = 0, profile=None, error: str | None = None) -> TaskRecord:
        rec = TaskRecord(next(self._task_ids), stream.id, kind, name, start, end, int(nbytes),
                         profile, error)
        self._keep(self.tasks, rec)
        return rec

    def _keep(self, records: Records, item) -> None:
        """Add ``item`` to ``records``; while not profiling, keep only the last
        ``keep_records`` (dropped from the front, as a list: O(keep_records) at most)."""
        records.append(item)
        limit = self.keep_records
        if limit is not None and not self.profiling and len(records) > limit:
            del records[:len(records) - limit]

    def clear_records(self) -> None:
        """Forget the profiles, copies and task records kept so far (not the clock, nor
        the lists' ``total`` counts)."""
        self.profiles.clear()
        self.copies.clear()
        self.tasks.clear()

    # -- tasks --------------------------------------------------------------------------
    def launch(self, stream: Stream, kernel, block_dim: int, args: tuple, *,
               name: str | None = None, reserve_ub: bool = True, sync_all: bool = False,
               on_done=None, kernel_type=None) -> None:
        """Enqueue a kernel launch on ``stream``; it runs when the device runs.

        This is ``kernel<<<block_dim, nullptr, stream>>>(*args)`` on the simulated device
        (Ascend C "核函数调用", the kernel invocation operator): ``kernel(*args)`` runs once
        per block with GetBlockIdx() in [0, block_dim); its profile goes into
        ``Device.profiles`` and its TaskRecord into ``Device.tasks``, so traces and op
        summaries show it like any operator's. ``name`` (default: the kernel function's
        ``__name__``) is the OP Type of the records. With handles from ``acl.rt`` use
        ``aclnn.custom.ACLRT_LAUNCH_KERNEL`` instead.

        blockDim and the kernel are checked when the launch runs: blockDim outside [1,
        65535] or above what the launch can keep resident, and any kernel error, become
        the stream's error (reported by :meth:`synchronize_stream`). An exception that is
        not a simulator error (a ``TypeError`` in the kernel's Python, say) becomes a
        :class:`npusim.errors.KernelError` naming the exception and the kernel line.

        A kernel error is kept in ``stream.errors`` (reported at synchronize) and the
        launch then costs no time; as on hardware, the stream then stops running kernels
        and copies until the host has synchronised and seen the error (event records and
        waits still run, so other streams never hang on it). ``on_done(profile)`` is called
        after a clean run. With ``device.profiling`` on, the profile keeps its instruction
        spans for traces. ``kernel_type`` (a :class:`KernelMetaType`, default a vector
        kernel) is passed to :func:`npusim.launch.run_kernel`: e.g. KERNEL_TYPE_AIC_ONLY runs
        the blocks on the cube cores.
        """
        device = self
        if name is None:
            name = getattr(kernel, "__name__", None) or type(kernel).__name__

        def task(s):
            if s.errors:
                device._record(s, KERNEL, name, device.env.now, device.env.now,
                               error="not run: an earlier task of this stream failed")
                return
            with device.aicore.request() as req:
                yield req
                start = device.env.now
                try:
                    profile = run_kernel(kernel, block_dim, args, soc=device.soc, gm=device.gm,
                                         name=name, reserve_ub=reserve_ub, sync_all=sync_all,
                                         keep_spans=device.profiling, kernel_type=kernel_type,
                                         functional=(None if device.timing_only is None
                                                     else not device.timing_only))
                except NpuSimError as exc:
                    s.errors.append(trim_traceback(exc))      # the kernel's frames only
                    device._record(s, KERNEL, name, start, start, error=str(exc))
                    return
                except Exception as exc:     # a bug in the kernel's Python: the stream's error
                    err = kernel_exception(name, exc)
                    s.errors.append(err)
                    device._record(s, KERNEL, name, start, start, error=str(err))
                    return
                profile.start_us = start
                device._keep(device.profiles, profile)
                if on_done is not None:
                    on_done(profile)
                yield device.env.timeout(profile.duration_us)
                device._record(s, KERNEL, name, start, device.env.now, profile=profile)
        stream.enqueue(task, kind=None)

    def copy_async(self, stream: Stream, kind: str, nbytes: int, apply) -> None:
        """Enqueue a copy of ``nbytes`` over the link ``kind`` ("H2D", "D2H" or "D2D").

        ``apply()`` performs the bytes' move when the copy starts. H2D/D2H cost
        ``host_link_latency_us + nbytes / host_link_bandwidth``; D2D reads and writes HBM.
        """
        device, soc = self, self.soc

        def task(s):
            if s.errors:
                device._record(s, MEMCPY, kind, device.env.now, device.env.now, nbytes,
                               error="not run: an earlier task of this stream failed")
                return
            with device.links[kind].request() as req:
                yield req
                start = device.env.now
                try:
                    apply()
                except NpuSimError as exc:
                    s.errors.append(trim_traceback(exc))      # the kernel's frames only
                    device._record(s, MEMCPY, kind, start, start, nbytes, error=str(exc))
                    return
                if kind == "D2D":
                    dur = 2 * nbytes / soc.hbm_bandwidth * 1e6
                else:
                    dur = soc.host_link_latency_us + nbytes / soc.host_link_bandwidth * 1e6
                yield device.env.timeout(dur)
                device._keep(device.copies, (kind, start, device.env.now, nbytes, s.id))
                device._record(s, MEMCPY, kind, start, device.env.now, nbytes)
        stream.enqueue(task, kind=None)

    def memset_async(self, stream: Stream, nbytes: int, apply) -> None:
        """Enqueue a memset of ``nbytes``: ``apply()`` writes the bytes when it starts, then
        it takes ``nbytes / hbm_bandwidth`` of device time [R, as acl.rt.memset_async]."""
        stream.enqueue(self.timed_task(apply, nbytes / self.soc.hbm_bandwidth * 1e6),
                       kind=MEMSET, name="MEMSET", nbytes=nbytes)

    def timed_task(self, apply, duration_us: float):
        """A stream task that runs ``apply()`` and then takes ``duration_us`` of device time.

        It does nothing when an earlier task of its stream failed and the host has not
        synchronised since (the stream stopped there); an :class:`NpuSimError` from
        ``apply`` becomes the stream's error.
        """
        env = self.env

        def task(s):
            if s.errors:                # the stream stopped at an earlier failure
                return
            try:
                apply()
            except NpuSimError as exc:
                s.errors.append(exc)
                return
            yield env.timeout(duration_us)
        return task

    def record_event(self, stream: Stream, event: Event) -> None:
        """Enqueue a record of ``event``: it takes the device time when the stream gets there."""
        def task(s):
            event._record_done(self.env.now)
            yield from ()
        with LOCK:                      # the count and the queue change together
            event.record_count += 1
            stream.enqueue(task, kind=EVENT_RECORD, name="EVENT_RECORD")

    def wait_event(self, stream: Stream, event: Event) -> None:
        """Enqueue a wait: ``stream`` stops until the latest record of ``event`` has run.

        A wait on an event that was never recorded does not block.
        """
        with LOCK:
            generation = event.record_count

            def task(s):
                if generation:
                    yield event._wait_for(generation)
            stream.enqueue(task, kind=EVENT_WAIT, name="EVENT_WAIT")

    # -- running the device --------------------------------------------------------------
    def run_until(self, ev: simpy.Event) -> None:
        """Run the device until ``ev`` fires.

        Raises:
            DeadlockError: the device ran out of work first (a stream waits for an event
                that no stream will record).
        """
        if ev.processed:
            return
        try:
            with LOCK:                  # one thread at a time runs the clock (npusim.runlock)
                self.env.run(until=ev)
        except RuntimeError as exc:
            raise DeadlockError("the device is idle but the awaited work cannot run: a stream "
                                "waits for an event that no stream will record") from exc

    def synchronize_stream(self, stream: Stream) -> list[Exception]:
        """Run until ``stream`` drains; return (and clear) the errors its tasks raised."""
        with LOCK:
            self.run_until(stream.marker())
            errors, stream.errors = stream.errors, []
        return errors

    def synchronize_event(self, event: Event) -> None:
        """Run until the latest record of ``event`` has executed."""
        with LOCK:
            if event.record_count:
                self.run_until(event._wait_for(event.record_count))

    def synchronize(self, streams) -> list[Exception]:
        """Run until every stream in ``streams`` drains; return their errors."""
        errors = []
        for s in streams:
            errors.extend(self.synchronize_stream(s))
        return errors
