"""Random sequences of runtime calls: a hypothesis state machine drives
``acl.rt`` -- malloc, free, memcpy H2D/D2H/D2D (synchronous and on streams), memset, streams,
events (record, wait, synchronize, query) -- and ``aclnnAdd`` launches on live buffers, with
some bad calls mixed in (a freed pointer, a destroyed stream or event, count > destMax).

It keeps a host mirror of every allocation (bytes plus a "known" mask: fresh aclrtMalloc
memory is not initialised, docs/reference/api.md §6) and checks, at every step, that:

* no exception escapes the API and every call returns the status the rules predict;
* ``acl.rt.get_mem_info`` stays consistent: free = total - sum of reservations, each
  ``ceil32(size) + 32`` bytes (api.md §6 "Documented semantics");

and after every synchronisation, that device memory equals the mirror byte for byte
(where the mirror knows the bytes), so no call ever corrupts another allocation.

How the mirror stays exact: work on a stream is applied to the mirror when it is enqueued,
in enqueue order. That is the device's order for one stream; across streams the machine
orders every pair of conflicting tasks (one writes what the other reads or writes) with an
event (record on the earlier stream, wait on the later), so the device's order agrees. Two
things make bytes unknown instead: a synchronous copy or memset into memory that pending
stream work touches (the host does not wait, api.md §6), and freeing memory that pending
work uses (that work fails at run time, 507015 at synchronize, and its stream runs nothing
more until then); then every write of every pending task, and of the work enqueued behind
a task that may fail, is marked unknown: a conservative but exact rule.
"""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant, precondition,
                                 rule)

import aclnn
from aclnn import acl, runtime
from aclnn.ops.add import aclnnAdd, aclnnAddGetWorkspaceSize

H2D, D2H, D2D = 1, 2, 3
OK, INVALID_PARAM, RT_PARAM_INVALID = 0, 100000, 107000
MEMORY_ALLOCATION, MEMORY_FREE, AICORE_EXCEPTION = 207001, 207002, 507015
DEFAULT = 0                                     # the default stream (NULL handle)


def reserved(size: int) -> int:
    """Bytes aclrtMalloc reserves for ``size``: ceil32(size) + 32 (api.md §6)."""
    return (size + 31) // 32 * 32 + 32


class Region:
    """The mirror of one allocation: its reserved bytes and which of them are known."""

    def __init__(self, base: int, size: int):
        self.base, self.size, self.reserved = base, size, reserved(size)
        self.data = np.zeros(self.reserved, np.uint8)
        self.known = np.zeros(self.reserved, bool)


class Task:
    """Stream work applied to the mirror: the allocations it reads and writes."""

    def __init__(self, reads=(), writes=(), check=None):
        self.reads = set(reads)
        self.writes = list(writes)              # (base, offset, nbytes)
        self.check = check                      # (host array, expected, known) of a D2H

    @property
    def write_bases(self):
        return {b for b, _, _ in self.writes}


class RuntimeMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        runtime.reset()
        assert acl.init() == OK and acl.rt.set_device(0) == OK
        self.gm = runtime.current_device().gm
        self.regions: dict[int, Region] = {}
        self.freed: list[int] = []
        self.streams = [DEFAULT]
        self.dead_streams: list[int] = []
        self.events: list[int] = []
        self.dead_events: list[int] = []
        self.pending: dict[int, list[Task]] = {DEFAULT: []}
        self.may_fail: set[int] = set()         # streams with work on memory freed since
        self.host_keep: list[np.ndarray] = []   # host buffers of copies still pending
        self.rng = np.random.default_rng(0)

    def teardown(self):
        runtime.reset()

    # -- helpers -------------------------------------------------------------------------
    def draw_region(self, data) -> Region:
        return self.regions[data.draw(st.sampled_from(sorted(self.regions)), label="alloc")]

    def draw_range(self, data, region: Region, min_count: int = 1):
        off = data.draw(st.integers(0, region.reserved - min_count), label="offset")
        count = data.draw(st.integers(min_count, region.reserved - off), label="count")
        return off, count

    def host_bytes(self, n: int) -> np.ndarray:
        arr = self.rng.integers(0, 256, n, dtype=np.uint8)
        self.host_keep.append(arr)
        return arr

    def all_pending(self):
        return [t for tasks in self.pending.values() for t in tasks]

    def touched(self, base: int) -> bool:
        return any(base in t.reads or base in t.write_bases for t in self.all_pending())

    def taint_pending(self):
        """Pending work may now run on other data, or not at all: what it writes is unknown,
        and the D2H copies it does can no longer be predicted."""
        for t in self.all_pending():
            t.check = None
            for base, off, n in t.writes:
                if base in self.regions:
                    self.regions[base].known[off:off + n] = False

    def order_after_conflicts(self, stream: int, reads, writes):
        """Make ``stream`` wait for every other stream whose pending work conflicts."""
        writes = set(writes)
        for other, tasks in self.pending.items():
            if other == stream or not tasks:
                continue
            if any(t.write_bases & (set(reads) | writes) or t.reads & writes for t in tasks):
                ev, ret = acl.rt.create_event()
                assert ret == OK
                assert acl.rt.record_event(ev, other) == OK
                assert acl.rt.stream_wait_event(stream, ev) == OK
                self.events.append(ev)

    def enqueue(self, stream: int, task: Task):
        """Add ``task`` (already applied to the mirror) to ``stream``'s pending work.

        A stream whose pending work may fail stops at the failure and runs nothing more
        until the host synchronises (npusim.device, as the hardware stream does); work
        that reads what such a stream would write sees other data. Either way what the
        task writes becomes unknown.
        """
        doomed = [t for s in self.may_fail for t in self.pending.get(s, [])]
        bases = task.reads | task.write_bases
        if stream in self.may_fail or any(t.write_bases & bases or t.reads & task.write_bases
                                           for t in doomed):
            task.check = None
            for base, off, n in task.writes:
                self.regions[base].known[off:off + n] = False
        self.pending[stream].append(task)

    def finish(self, streams):
        """``streams`` drained: check their D2H copies, forget their pending work."""
        for s in streams:
            for t in self.pending.get(s, []):
                if t.check is not None:
                    host, expect, known = t.check
                    assert np.array_equal(host[known], expect[known]), "async D2H read wrong bytes"
            self.pending[s] = []
            self.may_fail.discard(s)

    def compare(self, skip_streams=()):
        """Device memory equals the mirror wherever the mirror knows the bytes (except
        allocations that work still pending on ``skip_streams`` writes)."""
        busy = {b for s in skip_streams for t in self.pending.get(s, []) for b in t.write_bases}
        for base, r in self.regions.items():
            if base in busy:
                continue
            alloc = self.gm.find(base)
            assert alloc is not None and alloc.base == base and alloc.alloc_size == r.reserved
            assert np.array_equal(alloc.buf[r.known], r.data[r.known]), \
                f"allocation 0x{base:x} differs from its mirror"

    def sync_code_ok(self, ret, streams):
        if any(s in self.may_fail for s in streams):
            assert ret in (OK, AICORE_EXCEPTION), (ret, acl.get_recent_err_msg())
        else:
            assert ret == OK, (ret, acl.get_recent_err_msg())
        acl.get_recent_err_msg()

    # -- memory ----------------------------------------------------------------------------
    @initialize(sizes=st.lists(st.integers(1, 4096), min_size=2, max_size=4))
    def some_initialised_buffers(self, sizes):
        for size in sizes:
            r = self.new_region(size)
            ptr = r.base
            host = self.host_bytes(r.reserved)
            assert acl.rt.memcpy(ptr, r.reserved, acl.util.numpy_to_ptr(host), r.reserved,
                                 H2D) == OK
            r.data[:], r.known[:] = host, True

    def new_region(self, size: int) -> Region:
        ptr, ret = acl.rt.malloc(size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == OK and ptr % 64 == 0 and ptr not in self.regions
        r = self.regions[ptr] = Region(ptr, size)
        return r

    @rule(size=st.integers(1, 4096))
    def malloc(self, size):
        self.new_region(size)

    @precondition(lambda self: self.regions)
    @rule(data=st.data())
    def free(self, data):
        r = self.draw_region(data)
        if self.touched(r.base):
            # the pending work that uses it fails when it runs; what it writes is unknown
            self.may_fail |= {s for s, ts in self.pending.items()
                              if any(r.base in t.reads or r.base in t.write_bases for t in ts)}
            self.taint_pending()
        assert acl.rt.free(r.base) == OK
        del self.regions[r.base]
        self.freed.append(r.base)

    @rule(data=st.data(), which=st.integers(0, 6))
    def bad_call(self, data, which):
        """One call with a bad argument: it fails with its code and changes nothing."""
        if which == 0:
            size = data.draw(st.sampled_from([0, -1, "64", None]))
            assert acl.rt.malloc(size, 0) == (0, INVALID_PARAM)
            assert "size" in acl.get_recent_err_msg()
        elif which == 1:
            free, _, _ = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
            assert acl.rt.malloc(free, 0) == (0, MEMORY_ALLOCATION)  # + 32 B reserved > free
            assert "out of device memory" in acl.get_recent_err_msg()
        elif which == 2 and (self.freed or self.regions):
            choices = self.freed + [r.base + 32 for r in self.regions.values()]
            assert acl.rt.free(data.draw(st.sampled_from(choices))) == MEMORY_FREE
            assert "dev_ptr" in acl.get_recent_err_msg()
        elif which == 3 and self.regions:
            r = self.draw_region(data)
            host = self.host_bytes(16)
            assert acl.rt.memcpy(r.base, 8, acl.util.numpy_to_ptr(host), 16,
                                 H2D) == RT_PARAM_INVALID
            assert "dest_max" in acl.get_recent_err_msg()
        elif which == 4 and self.freed:
            ptr = data.draw(st.sampled_from(self.freed))
            host = self.host_bytes(16)
            assert acl.rt.memcpy(ptr, 16, acl.util.numpy_to_ptr(host), 16,
                                 H2D) == RT_PARAM_INVALID
            assert acl.rt.memset(ptr, 16, 0, 16) == RT_PARAM_INVALID
            assert "not inside a live allocation" in acl.get_recent_err_msg()
        elif which == 5 and self.dead_streams:
            s = data.draw(st.sampled_from(self.dead_streams), label="stream")
            assert acl.rt.synchronize_stream(s) == RT_PARAM_INVALID
            assert acl.rt.destroy_stream(s) == RT_PARAM_INVALID
            if self.regions:
                r = self.draw_region(data)
                assert acl.rt.memset_async(r.base, r.reserved, 1, 1, s) == RT_PARAM_INVALID
            assert "not a live stream" in acl.get_recent_err_msg()
        elif which == 6 and self.dead_events:
            ev = data.draw(st.sampled_from(self.dead_events), label="event")
            assert acl.rt.record_event(ev, DEFAULT) == RT_PARAM_INVALID
            assert acl.rt.stream_wait_event(DEFAULT, ev) == RT_PARAM_INVALID
            assert acl.rt.synchronize_event(ev) == RT_PARAM_INVALID
            assert "not a live event" in acl.get_recent_err_msg()

    @precondition(lambda self: self.regions)
    @rule(data=st.data())
    def memcpy_h2d(self, data):
        r = self.draw_region(data)
        off, n = self.draw_range(data, r)
        host = self.host_bytes(n)
        assert acl.rt.memcpy(r.base + off, r.reserved - off, acl.util.numpy_to_ptr(host), n,
                             H2D) == OK
        r.data[off:off + n] = host
        r.known[off:off + n] = True
        if self.touched(r.base):
            self.taint_pending()

    @precondition(lambda self: self.regions)
    @rule(data=st.data())
    def memcpy_d2h(self, data):
        r = self.draw_region(data)
        off, n = self.draw_range(data, r)
        host = np.full(n, 0xA5, np.uint8)
        assert acl.rt.memcpy(acl.util.numpy_to_ptr(host), n, r.base + off, n, D2H) == OK
        if not any(r.base in t.write_bases for t in self.all_pending()):
            known = r.known[off:off + n]
            assert np.array_equal(host[known], r.data[off:off + n][known])

    @precondition(lambda self: self.regions)
    @rule(data=st.data())
    def memcpy_d2d(self, data):
        src, dst = self.draw_region(data), self.draw_region(data)
        n = data.draw(st.integers(1, min(src.reserved, dst.reserved)), label="count")
        so = data.draw(st.integers(0, src.reserved - n), label="src offset")
        do = data.draw(st.integers(0, dst.reserved - n), label="dst offset")
        assert acl.rt.memcpy(dst.base + do, dst.reserved - do, src.base + so, n, D2D) == OK
        src_busy = any(src.base in t.write_bases for t in self.all_pending())
        chunk, known = src.data[so:so + n].copy(), src.known[so:so + n].copy()
        dst.data[do:do + n] = chunk
        dst.known[do:do + n] = known & (not src_busy)
        if self.touched(dst.base):
            self.taint_pending()

    @precondition(lambda self: self.regions)
    @rule(data=st.data(), value=st.integers(-300, 300))
    def memset(self, data, value):
        r = self.draw_region(data)
        off, n = self.draw_range(data, r)
        assert acl.rt.memset(r.base + off, r.reserved - off, value, n) == OK
        r.data[off:off + n] = value & 0xFF                       # the low byte, as C memset
        r.known[off:off + n] = True
        if self.touched(r.base):
            self.taint_pending()

    # -- work on streams ---------------------------------------------------------------------
    @precondition(lambda self: self.regions)
    @rule(data=st.data())
    def memcpy_async_h2d(self, data):
        s = data.draw(st.sampled_from(self.streams), label="stream")
        r = self.draw_region(data)
        off, n = self.draw_range(data, r)
        host = self.host_bytes(n)
        self.order_after_conflicts(s, (), (r.base,))
        assert acl.rt.memcpy_async(r.base + off, r.reserved - off, acl.util.numpy_to_ptr(host),
                                   n, H2D, s) == OK
        r.data[off:off + n] = host
        r.known[off:off + n] = True
        self.enqueue(s, Task(writes=[(r.base, off, n)]))

    @precondition(lambda self: self.regions)
    @rule(data=st.data())
    def memcpy_async_d2h(self, data):
        s = data.draw(st.sampled_from(self.streams), label="stream")
        r = self.draw_region(data)
        off, n = self.draw_range(data, r)
        host = np.full(n, 0x5A, np.uint8)
        self.host_keep.append(host)
        self.order_after_conflicts(s, (r.base,), ())
        assert acl.rt.memcpy_async(acl.util.numpy_to_ptr(host), n, r.base + off, n, D2H, s) == OK
        check = (host, r.data[off:off + n].copy(), r.known[off:off + n].copy())
        self.enqueue(s, Task(reads=[r.base], check=check))

    @precondition(lambda self: self.regions)
    @rule(data=st.data())
    def memcpy_async_d2d(self, data):
        s = data.draw(st.sampled_from(self.streams), label="stream")
        src, dst = self.draw_region(data), self.draw_region(data)
        n = data.draw(st.integers(1, min(src.reserved, dst.reserved)), label="count")
        so = data.draw(st.integers(0, src.reserved - n), label="src offset")
        do = data.draw(st.integers(0, dst.reserved - n), label="dst offset")
        if src.base == dst.base and abs(so - do) < n:
            do = so                      # an overlapping copy's result depends on its order
        self.order_after_conflicts(s, (src.base,), (dst.base,))
        assert acl.rt.memcpy_async(dst.base + do, dst.reserved - do, src.base + so, n, D2D,
                                   s) == OK
        chunk, known = src.data[so:so + n].copy(), src.known[so:so + n].copy()
        dst.data[do:do + n], dst.known[do:do + n] = chunk, known
        self.enqueue(s, Task(reads=[src.base], writes=[(dst.base, do, n)]))

    @precondition(lambda self: self.regions)
    @rule(data=st.data(), value=st.integers(0, 255))
    def memset_async(self, data, value):
        s = data.draw(st.sampled_from(self.streams), label="stream")
        r = self.draw_region(data)
        off, n = self.draw_range(data, r)
        self.order_after_conflicts(s, (), (r.base,))
        assert acl.rt.memset_async(r.base + off, r.reserved - off, value, n, s) == OK
        r.data[off:off + n], r.known[off:off + n] = value, True
        self.enqueue(s, Task(writes=[(r.base, off, n)]))

    @precondition(lambda self: any(r.reserved >= 8 for r in self.regions.values()))
    @rule(data=st.data(), inplace=st.booleans(), bad_stream_first=st.booleans())
    def launch_add_again(self, data, inplace, bad_stream_first):
        """The same rule once more: kernels are the point, so they come up twice as often."""
        self.launch_add(data, inplace, bad_stream_first)

    @precondition(lambda self: any(r.reserved >= 8 for r in self.regions.values()))
    @rule(data=st.data(), inplace=st.booleans(), bad_stream_first=st.booleans())
    def launch_add(self, data, inplace, bad_stream_first):
        """``out = self + other`` (int32, alpha 1: the native wrapping Add) on live buffers."""
        s = data.draw(st.sampled_from(self.streams), label="stream")
        fits = sorted(b for b, r in self.regions.items() if r.reserved >= 8)
        pick = [self.regions[data.draw(st.sampled_from(fits), label=w)]
                for w in ("self", "other", "out")]
        cap = min(r.reserved for r in pick) // 4
        n = data.draw(st.integers(1, cap), label="n")
        offs = [data.draw(st.integers(0, r.reserved // 4 - n), label="elem offset") for r in pick]
        if inplace:
            pick[2], offs[2] = pick[0], offs[0]
            if pick[1].base == pick[0].base:
                offs[1] = offs[0]         # other read where out writes: only the same view
        elif pick[2].base in (pick[0].base, pick[1].base):
            return                        # a partly overlapping out is order dependent
        tensors = [aclnn.aclCreateTensor([n], aclnn.ACL_INT32, [1], o, aclnn.ACL_FORMAT_ND,
                                         [r.reserved // 4], r.base)
                   for r, o in zip(pick, offs)]
        alpha = aclnn.aclCreateScalar(1, aclnn.ACL_INT32)
        ws, ex, ret = aclnnAddGetWorkspaceSize(tensors[0], tensors[1], alpha, tensors[2])
        assert (ws, ret) == (0, OK), acl.get_recent_err_msg()
        if bad_stream_first and self.dead_streams:
            # a failed second phase enqueues nothing and leaves the executor runnable
            assert aclnnAdd(0, 0, ex, self.dead_streams[-1]) == 361001
            acl.get_recent_err_msg()
        self.order_after_conflicts(s, (pick[0].base, pick[1].base), (pick[2].base,))
        assert aclnnAdd(0, 0, ex, s) == OK
        assert aclnnAdd(0, 0, ex, s) == aclnn.ACLNN_ERR_PARAM_INVALID      # single use
        acl.get_recent_err_msg()
        a, b = (r.data[4 * o:4 * (o + n)].view(np.int32) for r, o in zip(pick[:2], offs[:2]))
        ka, kb = (r.known[4 * o:4 * (o + n)].reshape(n, 4).all(axis=1)
                  for r, o in zip(pick[:2], offs[:2]))
        out = (a + b).view(np.uint8)                            # int32 arithmetic wraps
        known = np.repeat(ka & kb, 4)
        z, zo = pick[2], 4 * offs[2]
        z.data[zo:zo + 4 * n], z.known[zo:zo + 4 * n] = out, known
        self.enqueue(s, Task(reads=[pick[0].base, pick[1].base], writes=[(z.base, zo, 4 * n)]))
        for t in tensors:
            assert aclnn.aclDestroyTensor(t) == OK
        assert aclnn.aclDestroyScalar(alpha) == OK

    # -- streams -----------------------------------------------------------------------------
    @precondition(lambda self: len(self.streams) < 5)
    @rule()
    def create_stream(self):
        s, ret = acl.rt.create_stream()
        assert ret == OK and s not in self.streams
        self.streams.append(s)
        self.pending[s] = []

    @precondition(lambda self: len(self.streams) > 1)
    @rule(data=st.data())
    def destroy_stream(self, data):
        s = data.draw(st.sampled_from(self.streams[1:]), label="stream")
        ret = acl.rt.destroy_stream(s)                 # synchronises the stream first
        self.sync_code_ok(ret, [s])
        self.finish([s])
        self.compare(skip_streams=[t for t in self.streams if t != s])
        self.streams.remove(s)
        del self.pending[s]
        self.dead_streams.append(s)

    @rule(data=st.data())
    def synchronize_stream(self, data):
        s = data.draw(st.sampled_from(self.streams), label="stream")
        self.sync_code_ok(acl.rt.synchronize_stream(s), [s])
        self.finish([s])
        self.compare(skip_streams=[t for t in self.streams if t != s])

    @rule()
    def synchronize_device(self):
        self.sync_code_ok(acl.rt.synchronize_device(), self.streams)
        self.finish(self.streams)
        self.compare()

    # -- events ----------------------------------------------------------------------------
    @precondition(lambda self: len(self.events) < 12)
    @rule()
    def create_event(self):
        ev, ret = acl.rt.create_event()
        assert ret == OK
        self.events.append(ev)

    @precondition(lambda self: self.events)
    @rule(data=st.data())
    def destroy_event(self, data):
        ev = data.draw(st.sampled_from(self.events), label="event")
        assert acl.rt.destroy_event(ev) == OK
        self.events.remove(ev)
        self.dead_events.append(ev)

    @precondition(lambda self: self.events)
    @rule(data=st.data())
    def record_event(self, data):
        ev = data.draw(st.sampled_from(self.events), label="event")
        assert acl.rt.record_event(ev, data.draw(st.sampled_from(self.streams))) == OK

    @precondition(lambda self: self.events)
    @rule(data=st.data())
    def stream_wait_event(self, data):
        ev = data.draw(st.sampled_from(self.events), label="event")
        assert acl.rt.stream_wait_event(data.draw(st.sampled_from(self.streams)), ev) == OK

    @precondition(lambda self: self.events)
    @rule(data=st.data())
    def synchronize_or_query_event(self, data):
        ev = data.draw(st.sampled_from(self.events), label="event")
        if data.draw(st.booleans()):
            assert acl.rt.synchronize_event(ev) == OK
        else:
            status, ret = acl.rt.query_event_status(ev)
            assert ret == OK and status in (0, 1)

    # -- invariants --------------------------------------------------------------------------
    @invariant()
    def mem_info_is_consistent(self):
        free, total, ret = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
        assert ret == OK
        assert total == runtime.current_device().soc.memory_size
        assert free == total - sum(r.reserved for r in self.regions.values())
        assert {a.base for a in self.gm.allocations()} == set(self.regions)

    @invariant()
    def no_message_left_unexplained(self):
        # every failing call above read its message; a pending one means a call failed
        # without the rule expecting it
        assert acl.get_recent_err_msg() is None


RuntimeMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=60, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_runtime_state_machine = RuntimeMachine.TestCase
