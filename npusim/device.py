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
"""
from __future__ import annotations

import itertools

import simpy

from npusim.errors import NpuSimError
from npusim.gm import GlobalMemory
from npusim.launch import KernelProfile, run_kernel
from npusim.soc import get_soc


class DeadlockError(NpuSimError):
    """The device went idle while the host waited for work that can never run."""


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
        self._queue = simpy.Store(device.env)
        self._proc = device.env.process(self._run())
        self.destroyed = False

    def _run(self):
        while True:
            task = yield self._queue.get()
            yield from task(self)

    def enqueue(self, task) -> None:
        """Append ``task``: a generator function ``task(stream)`` run on the device clock."""
        self._queue.put(task)

    def marker(self) -> simpy.Event:
        """An event that fires when every task enqueued so far has finished."""
        ev = self.device.env.event()

        def task(stream):
            ev.succeed()
            yield from ()
        self.enqueue(task)
        return ev


class Device:
    """A simulated Ascend device.

    Args:
        soc: a SoC name or :class:`npusim.soc.SocSpec` (default Ascend910B1).
        device_id: the id the host API uses for it.

    Attributes:
        soc, gm: the SocSpec and its GlobalMemory (capacity ``soc.memory_size`` bytes).
        env: the simpy environment; ``env.now`` is device time in µs.
        profiles: a KernelProfile per kernel launch, in execution order.
        copies: ``(kind, start_us, end_us, nbytes, stream_id)`` per async copy.
        deterministic: the ACL_OPT_DETERMINISTIC system parameter.
    """

    def __init__(self, soc=None, device_id: int = 0):
        self.soc = get_soc(soc)
        self.device_id = device_id
        self.gm = GlobalMemory(self.soc.memory_size)
        self.env = simpy.Environment()
        self.aicore = simpy.Resource(self.env, capacity=1)
        self.links = {"H2D": simpy.Resource(self.env, 1), "D2H": simpy.Resource(self.env, 1),
                      "D2D": simpy.Resource(self.env, 1)}
        self.default_stream = Stream(self)
        self.profiles: list[KernelProfile] = []
        self.copies: list[tuple] = []
        self.deterministic = False

    # -- tasks --------------------------------------------------------------------------
    def launch(self, stream: Stream, kernel, block_dim: int, args: tuple, *, name: str,
               reserve_ub: bool = True, sync_all: bool = False, on_done=None) -> None:
        """Enqueue a kernel launch on ``stream``; it runs when the device runs.

        A kernel error is kept in ``stream.errors`` (reported at synchronize) and the
        launch then costs no time. ``on_done(profile)`` is called after a clean run.
        """
        device = self

        def task(s):
            with device.aicore.request() as req:
                yield req
                try:
                    profile = run_kernel(kernel, block_dim, args, soc=device.soc, gm=device.gm,
                                         name=name, reserve_ub=reserve_ub, sync_all=sync_all)
                except NpuSimError as exc:
                    s.errors.append(exc)
                    return
                profile.start_us = device.env.now
                device.profiles.append(profile)
                if on_done is not None:
                    on_done(profile)
                yield device.env.timeout(profile.duration_us)
        stream.enqueue(task)

    def copy_async(self, stream: Stream, kind: str, nbytes: int, apply) -> None:
        """Enqueue a copy of ``nbytes`` over the link ``kind`` ("H2D", "D2H" or "D2D").

        ``apply()`` performs the bytes' move when the copy starts. H2D/D2H cost
        ``host_link_latency_us + nbytes / host_link_bandwidth``; D2D reads and writes HBM.
        """
        device, soc = self, self.soc

        def task(s):
            with device.links[kind].request() as req:
                yield req
                start = device.env.now
                try:
                    apply()
                except NpuSimError as exc:
                    s.errors.append(exc)
                    return
                if kind == "D2D":
                    dur = 2 * nbytes / soc.hbm_bandwidth * 1e6
                else:
                    dur = soc.host_link_latency_us + nbytes / soc.host_link_bandwidth * 1e6
                yield device.env.timeout(dur)
                device.copies.append((kind, start, device.env.now, nbytes, s.id))
        stream.enqueue(task)

    def record_event(self, stream: Stream, event: Event) -> None:
        """Enqueue a record of ``event``: it takes the device time when the stream gets there."""
        event.record_count += 1

        def task(s):
            event._record_done(self.env.now)
            yield from ()
        stream.enqueue(task)

    def wait_event(self, stream: Stream, event: Event) -> None:
        """Enqueue a wait: ``stream`` stops until the latest record of ``event`` has run.

        A wait on an event that was never recorded does not block.
        """
        generation = event.record_count

        def task(s):
            if generation:
                yield event._wait_for(generation)
        stream.enqueue(task)

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
            self.env.run(until=ev)
        except RuntimeError as exc:
            raise DeadlockError("the device is idle but the awaited work cannot run: a stream "
                                "waits for an event that no stream will record") from exc

    def synchronize_stream(self, stream: Stream) -> list[Exception]:
        """Run until ``stream`` drains; return (and clear) the errors its tasks raised."""
        self.run_until(stream.marker())
        errors, stream.errors = stream.errors, []
        return errors

    def synchronize_event(self, event: Event) -> None:
        """Run until the latest record of ``event`` has executed."""
        if event.record_count:
            self.run_until(event._wait_for(event.record_count))

    def synchronize(self, streams) -> list[Exception]:
        """Run until every stream in ``streams`` drains; return their errors."""
        errors = []
        for s in streams:
            errors.extend(self.synchronize_stream(s))
        return errors
