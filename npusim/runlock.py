"""The simulator's one lock: what several host threads do is done one call at a time.

The simulated devices and the kernel engine keep process-wide state while they work: a
device's simpy clock and stream queues, and for every launch on any device the current
core (``npusim.ascendc.core``), the library depth (``npusim.ascendc.sync``), the lockstep
engine's UB and memory pools and replay caches (``npusim.lockstep``) and the timing
model's memos (``npusim.timing``). Two threads inside them at once corrupt results, so
:data:`LOCK`, one re-entrant lock for the process, is held

* by :func:`npusim.launch.run_kernel` (every kernel run, through a device or directly),
* by :class:`npusim.Device` while it enqueues a task or runs its clock, and
* by every call of the host API (``aclnn``, ``aclnn.acl``): the runtime's tables, the
  device memory and the streams change only under it.

One lock rather than one per device because the kernel engine's state is shared by all
devices. It costs little parallelism: CPython runs one thread's bytecode at a time anyway.
A call never waits for another thread while it holds the lock (the device runs only work
already enqueued), so the lock cannot deadlock; the threads' calls take effect in the
order they take the lock, which is one serial order of them.
"""
from __future__ import annotations

import functools
import threading

__all__ = ["LOCK", "serialized"]

#: The process-wide re-entrant lock (see the module docstring).
LOCK = threading.RLock()


def serialized(fn):
    """``fn`` run under :data:`LOCK` (same name, docstring and signature)."""
    @functools.wraps(fn)
    def locked(*args, **kwargs):
        with LOCK:
            return fn(*args, **kwargs)
    return locked
