"""Threads: a per-thread current context and a runtime whose calls are serialised.

The rules under test (``docs/tutorial.md`` "Threads and contexts"):

* the current context, and so the current device, is per thread: ``aclrtSetDevice`` "指定
  当前线程中用于运算的Device" and binds the device's default context (one per device, the
  same in every thread that sets it); ``aclrtCreateContext`` binds the new context to the
  calling thread; ``aclrtSetCurrentContext`` "设置线程的Context", the last call wins;
  ``aclrtGetCurrentContext`` reads the calling thread's (hiascend aclcppdevg
  aclrtSetDevice / aclrtCreateContext / aclrtSetCurrentContext / aclrtGetCurrentContext,
  aclpythondevg set_device);
* runtime calls, launches and synchronisations of several threads give the results of
  some serial order of those calls;
* a misuse gets its documented code and a message saying what happened.

The stress test runs the same per-thread programs (mixed operators on a thread's own
stream and tensors) once serially and then in threads, a few times, and compares every
status and every result byte.
"""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from aclnn.custom import ACLRT_LAUNCH_KERNEL

N_THREADS = 4
OPS_PER_THREAD = 20
SYNC_EVERY = 4


@pytest.fixture
def two_devices(tmp_path):
    runtime.reset()
    cfg = tmp_path / "acl.json"
    cfg.write_text(json.dumps({"npusim": {"soc": "Ascend910B1", "device_count": 2}}))
    assert acl.init(str(cfg)) == 0
    yield
    runtime.reset()


def _run_in_threads(*targets):
    """Start one thread per callable at the same moment; re-raise the first failure."""
    barrier = threading.Barrier(len(targets))
    failures = []

    def body(fn):
        try:
            barrier.wait()
            fn()
        except BaseException as exc:        # noqa: BLE001  (reported by the main thread)
            failures.append(exc)
    threads = [threading.Thread(target=body, args=(fn,), daemon=True) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    if failures:
        raise failures[0]


# -- the stress test -----------------------------------------------------------------------
def _upload(arr):
    arr = np.ascontiguousarray(arr)
    ptr, ret = acl.rt.malloc(arr.nbytes, 0)
    assert ret == 0
    assert acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes, 1) == 0
    shape = list(arr.shape)
    strides = [s // arr.itemsize for s in arr.strides]
    t = aclnn.aclCreateTensor(shape, aclnn.numpy_to_acl_dtype(arr.dtype), strides, 0,
                              aclnn.ACL_FORMAT_ND, shape, ptr)
    return t, ptr, arr.nbytes


def _download(ptr, nbytes):
    out = np.zeros(nbytes, np.uint8)
    ret = acl.rt.memcpy(acl.util.numpy_to_ptr(out), nbytes, ptr, nbytes, 2)
    return out.tobytes(), ret


def _program(k: int, log: list) -> None:
    """Thread k's work: on device k % 2 (even k through set_device and the default context,
    odd k through a context of its own), on its own stream and tensors, a chain of
    OPS_PER_THREAD operators (Add, Matmul, ApplyFusedEmaAdam) whose inputs are earlier
    outputs, synchronising and reading results back every SYNC_EVERY operators. Every
    status and every result's bytes go into ``log``."""
    device = k % 2
    if k % 2 == 0:
        log.append(("set_device", acl.rt.set_device(device)))
    else:
        ctx, ret = acl.rt.create_context(device)
        log.append(("create_context", ret))
    stream, ret = acl.rt.create_stream()
    log.append(("create_stream", ret))
    rng = np.random.default_rng(k)
    x, xp, xn = _upload(rng.standard_normal(256).astype(np.float32))
    y, yp, yn = _upload(rng.standard_normal(256).astype(np.float32))
    a, ap, an = _upload(rng.standard_normal((16, 32)).astype(np.float32))
    b, bp, bn = _upload(rng.standard_normal((32, 16)).astype(np.float32) * 0.1)
    c, cp, cn = _upload(np.zeros((16, 16), np.float32))
    ema = [_upload(rng.standard_normal(128).astype(np.float32) * s)
           for s in (1.0, 1.0, 0.1, 0.1, 1.0)]           # grad, var, m, v, s
    step, _, _ = _upload(np.array([1], np.int64))
    alpha = aclnn.aclCreateScalar(0.5, aclnn.ACL_FLOAT)
    ws, _ = acl.rt.malloc(32 << 20, 0)
    for i in range(OPS_PER_THREAD):
        kind = (i + k) % 3
        if kind == 0:                                       # x = x + 0.5 * y
            n, ex, ret = aclnn.aclnnAddGetWorkspaceSize(x, y, alpha, x)
            log.append(("AddGetWorkspaceSize", ret))
            log.append(("Add", aclnn.aclnnAdd(ws, n, ex, stream)))
        elif kind == 1:                                     # c = a @ b
            n, ex, ret = aclnn.aclnnMatmulGetWorkspaceSize(a, b, c, 0)
            log.append(("MatmulGetWorkspaceSize", ret))
            log.append(("Matmul", aclnn.aclnnMatmul(ws, n, ex, stream)))
        else:
            n, ex, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
                *(t for t, _, _ in ema), step, 1e-2, 0.999, 0.9, 0.999, 1e-8, 1, True, 0.01)
            log.append(("EmaAdamGetWorkspaceSize", ret))
            log.append(("EmaAdam", aclnn.aclnnApplyFusedEmaAdam(ws, n, ex, stream)))
        if i % SYNC_EVERY == SYNC_EVERY - 1:
            log.append(("synchronize_stream", acl.rt.synchronize_stream(stream)))
            for ptr, nbytes in [(xp, xn), (cp, cn)] + [(p, nb) for _, p, nb in ema[1:]]:
                log.append(_download(ptr, nbytes))
            if kind == 1:                                   # feed c back into a
                block, ret = _download(cp, cn)
                host = np.frombuffer(block, np.float32).reshape(16, 16)
                a2 = np.tile(np.tanh(host), (1, 2)).copy()
                log.append(("memcpy", acl.rt.memcpy(ap, an, acl.util.numpy_to_ptr(a2),
                                                    a2.nbytes, 1)))
    log.append(("synchronize_stream", acl.rt.synchronize_stream(stream)))
    log.append(("destroy_stream", acl.rt.destroy_stream(stream)))


def _serial_logs():
    logs = [[] for _ in range(N_THREADS)]
    for k in range(N_THREADS):
        _program(k, logs[k])
    return logs


def _threaded_logs():
    logs = [[] for _ in range(N_THREADS)]
    _run_in_threads(*[lambda k=k: _program(k, logs[k]) for k in range(N_THREADS)])
    return logs


def _differences(expected, got) -> list[str]:
    out = []
    for k, (e, g) in enumerate(zip(expected, got)):
        bad = [i for i, (p, q) in enumerate(zip(e, g)) if p != q]
        if len(e) != len(g) or bad:
            first = repr(g[bad[0]])[:80] if bad else None
            out.append(f"thread {k}: {len(bad)} of {len(e)} entries differ (first: entry "
                       f"{bad[:1]} = {first}), lengths {len(e)}/{len(g)}")
    return out


def test_threads_on_two_devices_give_the_results_of_a_serial_run(two_devices, tmp_path):
    serial = _serial_logs()
    statuses = [entry[1] for log in serial for entry in log]
    assert set(statuses) == {0}, "the serial programs themselves must succeed"
    for repeat in range(2):
        runtime.reset()
        cfg = tmp_path / "acl.json"
        assert acl.init(str(cfg)) == 0
        threaded = _threaded_logs()
        assert _differences(serial, threaded) == [], f"repeat {repeat}"


# -- the current context is per thread -------------------------------------------------------
def test_current_context_and_device_are_per_thread(two_devices):
    """Each thread sees the context it bound last, whatever the others bind meanwhile; two
    threads that set one device share its default context; a context made in one thread
    can be made current in another (aclrtSetCurrentContext)."""
    step = threading.Barrier(2)
    seen = {}

    def thread(k):
        assert acl.rt.set_device(k) == 0
        default, ret = acl.rt.get_context()
        assert ret == 0
        step.wait()                                  # both have set their device
        seen[k, "device"] = acl.rt.get_device()
        seen[k, "context"] = acl.rt.get_context()
        seen[k, "default"] = default
        created, ret = acl.rt.create_context(k)      # bound to this thread only
        assert ret == 0
        seen[k, "created"] = created
        step.wait()
        seen[k, "after create"] = acl.rt.get_context()
        step.wait()                                  # now take the other thread's context
        assert acl.rt.set_context(seen[1 - k, "created"]) == 0
        step.wait()
        seen[k, "swapped"] = (acl.rt.get_context(), acl.rt.get_device())
        stream, ret = acl.rt.create_stream()         # on the context's device
        seen[k, "stream device"] = runtime.resolve_stream(stream).device.device_id

    _run_in_threads(lambda: thread(0), lambda: thread(1))
    for k in (0, 1):
        assert seen[k, "device"] == (k, 0)
        assert seen[k, "context"] == (seen[k, "default"], 0)
        assert seen[k, "after create"] == (seen[k, "created"], 0)
        assert seen[k, "swapped"] == ((seen[1 - k, "created"], 0), (1 - k, 0))
        assert seen[k, "stream device"] == 1 - k
    assert seen[0, "default"] != seen[1, "default"]
    # the main thread bound nothing: it has no current context
    assert acl.rt.get_device() == (-1, aclnn.ACL_ERROR_RT_CONTEXT_NULL)
    assert "this thread has no current context" in acl.get_recent_err_msg()
    # a second thread setting device 0 gets the same default context as the first did
    same = []
    _run_in_threads(lambda: (acl.rt.set_device(0), same.append(acl.rt.get_context())))
    assert same == [(seen[0, "default"], 0)]


def test_a_context_destroyed_in_another_thread_is_current_nowhere(two_devices):
    made = {}
    bound, go = threading.Event(), threading.Event()

    def owner():
        made["ctx"], _ = acl.rt.create_context(1)
        bound.set()
        go.wait(10)
        made["after"] = acl.rt.get_context()
        made["stream"] = acl.rt.create_stream()
    t = threading.Thread(target=owner)
    t.start()
    bound.wait(10)
    assert acl.rt.destroy_context(made["ctx"]) == 0
    go.set()
    t.join(10)
    assert made["after"] == (0, aclnn.ACL_ERROR_RT_CONTEXT_NULL)
    assert made["stream"] == (0, aclnn.ACL_ERROR_RT_CONTEXT_NULL)


def test_error_messages_stay_with_the_thread_that_failed(two_devices):
    msgs = []

    def fail():
        assert acl.rt.set_device(5) == aclnn.ACL_ERROR_RT_INVALID_DEVICEID
        msgs.append(acl.get_recent_err_msg())
    acl.get_recent_err_msg()
    _run_in_threads(fail)
    assert "device_id=5" in msgs[0]
    assert acl.get_recent_err_msg() is None          # aclGetRecentErrMsg is per thread


# -- misuse: the documented codes, with a message that says what happened ----------------------
def _other_thread(fn):
    """Run ``fn`` in a new thread (with no context of its own unless it sets one); return
    its result and the messages it left."""
    out = []
    _run_in_threads(lambda: out.append((fn(), acl.get_recent_err_msg())))
    return out[0]


def test_a_stream_of_another_device_is_107003(two_devices):
    """Thread A's stream on device 0, used by thread B whose current device is 1."""
    assert acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    event, _ = acl.rt.create_event()

    def use():
        assert acl.rt.set_device(1) == 0
        return acl.rt.synchronize_stream(stream), acl.rt.record_event(event, 0)
    (sync, record), msg = _other_thread(use)
    assert sync == aclnn.ACL_ERROR_RT_STREAM_CONTEXT == 107003
    assert f"stream=0x{stream:x} belongs to device 0" in msg
    assert "this thread's current device is 1" in msg
    assert record == aclnn.ACL_ERROR_RT_PARAM_INVALID          # an event of device 0
    assert f"event=0x{event:x} belongs to device 0" in msg


def test_a_stream_of_another_context_on_the_same_device_is_107003(two_devices):
    """A stream belongs to the context current when it was created (rt_error_codes.h
    ACL_ERROR_RT_STREAM_CONTEXT "stream not in current context"): used under another
    context of the same device, from this thread or another, it is refused; back under its
    own context it works. The default context is one per device, so a stream made under it
    serves every thread that set that device."""
    assert acl.rt.set_device(0) == 0
    default_ctx, _ = acl.rt.get_context()
    s_default, _ = acl.rt.create_stream()
    ctx, ret = acl.rt.create_context(0)              # now this thread's current context
    assert ret == 0 and ctx != default_ctx
    s_ctx, _ = acl.rt.create_stream()
    assert acl.rt.synchronize_stream(s_ctx) == 0
    assert acl.rt.synchronize_stream(s_default) == aclnn.ACL_ERROR_RT_STREAM_CONTEXT
    msg = acl.get_recent_err_msg()
    assert f"stream=0x{s_default:x} was created in context 0x{default_ctx:x}" in msg
    assert f"current context is 0x{ctx:x}" in msg
    launch = ACLRT_LAUNCH_KERNEL(lambda: None, name="noop")
    assert launch(1, s_default) == aclnn.ACL_ERROR_RT_STREAM_CONTEXT
    assert acl.rt.set_context(default_ctx) == 0
    assert acl.rt.synchronize_stream(s_default) == 0
    assert acl.rt.synchronize_stream(s_ctx) == aclnn.ACL_ERROR_RT_STREAM_CONTEXT
    x, _, _ = _upload(np.ones(64, np.float32))
    alpha = aclnn.aclCreateScalar(1.0, aclnn.ACL_FLOAT)
    n, ex, ret = aclnn.aclnnAddGetWorkspaceSize(x, x, alpha, x)
    assert ret == 0
    assert aclnn.aclnnAdd(0, n, ex, s_ctx) == aclnn.ACLNN_ERR_RUNTIME_ERROR
    assert "was created in context" in acl.get_recent_err_msg()

    def other():                                     # another thread, the default context
        assert acl.rt.set_device(0) == 0
        return acl.rt.synchronize_stream(s_default), acl.rt.synchronize_stream(s_ctx)
    (ok, refused), _ = _other_thread(other)
    assert ok == 0 and refused == aclnn.ACL_ERROR_RT_STREAM_CONTEXT
    assert acl.rt.destroy_context(ctx) == 0
    del x


def test_an_operator_on_a_stream_of_another_device_is_361001(two_devices):
    assert acl.rt.set_device(0) == 0
    stream0, _ = acl.rt.create_stream()
    x, _, _ = _upload(np.ones(64, np.float32))
    alpha = aclnn.aclCreateScalar(1.0, aclnn.ACL_FLOAT)

    def run():
        assert acl.rt.set_device(1) == 0
        stream1, _ = acl.rt.create_stream()
        y, _, _ = _upload(np.ones(64, np.float32))
        n, ex, ret = aclnn.aclnnAddGetWorkspaceSize(y, y, alpha, y)
        assert ret == 0
        return aclnn.aclnnAdd(0, n, ex, stream0), stream1
    (ret, stream1), msg = _other_thread(run)
    assert ret == aclnn.ACLNN_ERR_RUNTIME_ERROR == 361001
    assert "is not a live stream of device 1" in msg and "a stream of device 0" in msg
    # a launch from this thread (device 0) onto thread B's stream of device 1
    launch = ACLRT_LAUNCH_KERNEL(lambda: None, name="noop")
    assert launch(1, stream1) == aclnn.ACL_ERROR_RT_STREAM_CONTEXT
    assert "belongs to device 1, but this thread's current device is 0" in \
        acl.get_recent_err_msg()
    del x


def test_a_thread_without_a_context_gets_107002_and_361001(two_devices):
    """The main thread set device 0; a new thread has no context of its own."""
    assert acl.rt.set_device(0) == 0
    x, _, _ = _upload(np.ones(64, np.float32))
    alpha = aclnn.aclCreateScalar(1.0, aclnn.ACL_FLOAT)
    n, ex, ret = aclnn.aclnnAddGetWorkspaceSize(x, x, alpha, x)
    assert ret == 0
    launch = ACLRT_LAUNCH_KERNEL(lambda: None, name="noop")

    (created, first, second, custom), msg = _other_thread(lambda: (
        acl.rt.create_stream(), aclnn.aclnnAddGetWorkspaceSize(x, x, alpha, x),
        aclnn.aclnnAdd(0, n, ex, None), launch(1, None)))
    assert created == (0, aclnn.ACL_ERROR_RT_CONTEXT_NULL)
    assert first == (0, None, aclnn.ACLNN_ERR_RUNTIME_ERROR)
    assert second == aclnn.ACLNN_ERR_RUNTIME_ERROR
    assert custom == aclnn.ACL_ERROR_RT_CONTEXT_NULL
    assert msg.count("this thread has no current context") == 4
    assert acl.rt.synchronize_stream(0) == 0         # the executor is still runnable here
    assert aclnn.aclnnAdd(0, n, ex, None) == 0


# -- waits across threads ----------------------------------------------------------------------
def test_a_stream_waits_for_an_event_another_thread_recorded(two_devices):
    """Thread A enqueues Add then a record; thread B (same device, own stream) waits for the
    record and adds the result again, then synchronises only its own stream: the device runs
    A's work first, B gets A's result, and nobody hangs (A never synchronises)."""
    assert acl.rt.set_device(0) == 0
    event, _ = acl.rt.create_event()
    x, xp, xn = _upload(np.full(64, 1.0, np.float32))
    y, yp, yn = _upload(np.zeros(64, np.float32))
    one = aclnn.aclCreateScalar(1.0, aclnn.ACL_FLOAT)
    recorded = threading.Event()
    codes = {}

    def producer():
        acl.rt.set_device(0)
        s, _ = acl.rt.create_stream()
        for _ in range(3):                                   # x = 8
            n, ex, _ = aclnn.aclnnAddGetWorkspaceSize(x, x, one, x)
            codes["A add"] = aclnn.aclnnAdd(0, n, ex, s)
        codes["A record"] = acl.rt.record_event(event, s)
        recorded.set()

    def consumer():
        acl.rt.set_device(0)
        s, _ = acl.rt.create_stream()
        recorded.wait(10)                                    # order the host calls
        codes["B wait"] = acl.rt.stream_wait_event(s, event)
        n, ex, _ = aclnn.aclnnAddGetWorkspaceSize(x, x, one, y)   # y = x + x
        codes["B add"] = aclnn.aclnnAdd(0, n, ex, s)
        codes["B sync"] = acl.rt.synchronize_stream(s)

    _run_in_threads(producer, consumer)
    assert set(codes.values()) == {0}, codes
    got, _ = _download(yp, yn)
    np.testing.assert_array_equal(np.frombuffer(got, np.float32), np.full(64, 16.0))


def test_a_wait_for_an_event_not_yet_recorded_does_not_block(two_devices):
    """aclrtStreamWaitEvent and aclrtSynchronizeEvent wait for the record enqueued last
    before the call; with none yet they return at once, as in any serial order where the
    wait comes first (docs/tutorial.md): no hang, no deadlock error."""
    assert acl.rt.set_device(0) == 0
    event, _ = acl.rt.create_event()
    results = _other_thread(lambda: (acl.rt.set_device(0), acl.rt.synchronize_event(event),
                                     acl.rt.stream_wait_event(0, event),
                                     acl.rt.synchronize_stream(0)))[0]
    assert results == (0, 0, 0, 0)


# -- the simulator itself, without the host API -------------------------------------------------
def _double_kernel(src, n):
    from npusim.ascendc import (DataCopy, GetBlockIdx, GlobalTensor, HardEvent, Muls, SetFlag,
                                TBuf, TPipe, WaitFlag, float32)
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, n * 4)
    t = buf.Get(float32)
    g = GlobalTensor(float32)
    g.SetGlobalBuffer(src + GetBlockIdx() * n * 4, n)
    DataCopy(t, g, n)
    SetFlag(HardEvent.MTE2_V, 0)
    WaitFlag(HardEvent.MTE2_V, 0)
    Muls(t, t, 2.0, n)
    SetFlag(HardEvent.V_MTE3, 0)
    WaitFlag(HardEvent.V_MTE3, 0)
    DataCopy(g, t, n)


def test_devices_driven_directly_from_two_threads():
    """npusim.Device used without aclnn: launches and synchronisations of two devices in two
    threads (the kernel engine's state is shared by all devices: npusim.runlock)."""
    import npusim
    results = {}

    def thread(k):
        dev = npusim.Device("Ascend910B1", k)
        s = npusim.Stream(dev)
        ptr = dev.gm.malloc(4 * 64 * 4)
        dev.gm.write(ptr, np.arange(256, dtype=np.float32) + k)
        errors = []
        for i in range(12):
            dev.launch(s, _double_kernel, 4, (ptr, 64))
            if i % 3 == 2:
                errors += dev.synchronize_stream(s)
        results[k] = (errors, np.frombuffer(dev.gm.read(ptr, 1024), np.float32))
    _run_in_threads(lambda: thread(0), lambda: thread(1))
    for k in (0, 1):
        errors, got = results[k]
        assert errors == []
        np.testing.assert_array_equal(got, (np.arange(256, dtype=np.float32) + k) * 4096)
