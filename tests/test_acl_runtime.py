"""Tests of the pyACL-style runtime: aclnn.runtime, acl.init/finalize, acl.rt.*, acl.util.*.

Expected status codes are typed in by hand from docs/reference/api.md §5/§6 (and the [R]
choices documented in aclnn/acl/rt.py); sizes and times are computed by hand in comments.
"""
import json

import numpy as np
import pytest

import npusim
from aclnn import acl, errmsg, runtime
from npusim.device import DeadlockError

H2H, H2D, D2H, D2D, DEFAULT = 0, 1, 2, 3, 4
HUGE_FIRST = 0
MiB = 1024 * 1024


@pytest.fixture(autouse=True)
def fresh_runtime():
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture
def config(tmp_path):
    """Write an acl.init JSON file and return its path."""
    def write(obj):
        path = tmp_path / "acl.json"
        path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
        return str(path)
    return write


@pytest.fixture
def device():
    """acl.init + set_device(0); yields the npusim.Device."""
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    yield runtime.current_device()


def to_device(host: np.ndarray) -> int:
    ptr, ret = acl.rt.malloc(host.nbytes, HUGE_FIRST)
    assert ret == 0
    assert acl.rt.memcpy(ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes, H2D) == 0
    return ptr


def to_host(ptr: int, like: np.ndarray) -> np.ndarray:
    out = np.empty_like(like)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes, D2H) == 0
    return out


# -- the sample flow -------------------------------------------------------------------
def test_full_sample_flow_round_trip():
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0 and isinstance(stream, int) and stream != 0
    host = np.arange(1000, dtype=np.float32)
    dev_ptr, ret = acl.rt.malloc(host.nbytes, HUGE_FIRST)
    assert ret == 0 and isinstance(dev_ptr, int)
    assert acl.rt.memcpy(dev_ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                         H2D) == 0
    back = np.zeros_like(host)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(back), back.nbytes, dev_ptr, back.nbytes,
                         D2H) == 0
    assert np.array_equal(back, host)
    assert acl.rt.free(dev_ptr) == 0
    assert acl.rt.destroy_stream(stream) == 0
    assert acl.rt.reset_device(0) == 0
    assert acl.finalize() == 0
    assert acl.get_recent_err_msg() is None


# -- init / finalize -------------------------------------------------------------------
def test_double_init_is_refused_but_stays_initialised():
    assert acl.init() == 0
    assert acl.init() == 100002                    # ACL_ERROR_REPEAT_INITIALIZE
    assert acl.rt.set_device(0) == 0               # still initialised
    assert acl.get_recent_err_msg() is not None


def test_finalize_codes_and_reinit():
    assert acl.finalize() == 100001                # never initialised [R]
    assert acl.init() == 0
    assert acl.finalize() == 0
    assert acl.finalize() == 100037                # ACL_ERROR_REPEAT_FINALIZE
    assert acl.rt.set_device(0) == 100001          # finalised: uninitialised again
    assert acl.init() == 0                         # init may follow finalize
    assert acl.rt.set_device(0) == 0


def test_init_config_file_errors(config, tmp_path):
    assert acl.init(str(tmp_path / "missing.json")) == 100003   # ACL_ERROR_INVALID_FILE
    assert acl.init(config("{not json")) == 100006               # ACL_ERROR_PARSE_FILE
    assert acl.init(config("[1, 2]")) == 100006
    assert acl.init(config({"npusim": {"device_cnt": 2}})) == 100006   # misspelt key
    assert "device_count" in acl.get_recent_err_msg()
    assert not runtime.state.initialized
    assert acl.init(config("")) == 0                             # an empty file is {}


def test_unknown_soc_lists_the_known_ones(config):
    assert acl.init(config({"npusim": {"soc": "Ascend999"}})) == 100006
    msg = acl.get_recent_err_msg()
    assert "Ascend999" in msg and "Ascend910B1" in msg
    assert not runtime.initialized


def test_config_selects_soc_and_device_count(config):
    assert acl.init(config({"npusim": {"soc": "Ascend910B4", "device_count": 8}})) == 0
    assert acl.rt.get_device_count() == (8, 0)
    assert acl.rt.set_device(5) == 0
    assert acl.rt.get_device() == (5, 0)
    assert runtime.current_device().soc.soc_version == "Ascend910B4"
    free, total, ret = acl.rt.get_mem_info(1)        # ACL_HBM_MEM
    assert ret == 0 and total == free == 32 * 1024 ** 3   # 910B4: 32 GiB


# -- devices ---------------------------------------------------------------------------
def test_set_device_codes():
    assert acl.rt.set_device(0) == 100001            # before init: ACL_ERROR_UNINITIALIZE
    assert acl.init() == 0
    assert acl.rt.set_device(5) == 107001            # 1 device: ACL_ERROR_RT_INVALID_DEVICEID
    assert "device_id=5" in acl.get_recent_err_msg()
    assert acl.rt.set_device(-1) == 107001
    assert acl.rt.get_device() == (-1, 107002)       # nothing set: ACL_ERROR_RT_CONTEXT_NULL
    assert acl.rt.set_device(0) == 0
    assert acl.rt.get_device() == (0, 0)


def test_set_device_with_eight_devices(config):
    assert acl.init(config({"npusim": {"device_count": 8}})) == 0
    assert acl.rt.set_device(5) == 0


def test_reset_device_releases_memory_and_handles(device):
    ptr, _ = acl.rt.malloc(100, HUGE_FIRST)
    stream, _ = acl.rt.create_stream()
    assert acl.rt.reset_device(0) == 0
    assert runtime.current_device() is None
    assert acl.rt.malloc(100, HUGE_FIRST) == (0, 107002)   # no device any more
    assert acl.rt.set_device(0) == 0
    assert acl.rt.free(ptr) == 207002                    # the new device has no such block
    assert acl.rt.synchronize_stream(stream) == 107000   # stream handle gone


# -- malloc / free / mem info -----------------------------------------------------------
def test_malloc_zero_and_bad_policy(device):
    assert acl.rt.malloc(0, HUGE_FIRST) == (0, 100000)
    assert acl.rt.malloc(-8, HUGE_FIRST) == (0, 100000)
    assert acl.rt.malloc(64, 99) == (0, 100000)
    assert "policy" in acl.get_recent_err_msg()
    ptr, ret = acl.rt.malloc(64, 0x1000 | 1)          # HIGH_BAND_WIDTH | HUGE_ONLY
    assert ret == 0 and ptr


def test_malloc_huge_only_grants_whole_2_mib_pages(device):
    """ACL_MEM_MALLOC_HUGE_ONLY (1): "内存申请粒度为2M,不足2M的倍数,向上2M对齐"
    (aclrtMemMallocPolicy); HUGE_FIRST keeps the 32 B rounding in npusim (rt.malloc doc)."""
    used = device.gm.used
    ptr, ret = acl.rt.malloc(100, 0x1000 | 1)          # HIGH_BAND_WIDTH | HUGE_ONLY
    assert ret == 0 and ptr % (2 * MiB) == 0
    assert device.gm.used - used == 2 * MiB and device.gm.contains(ptr, 2 * MiB)
    plain, _ = acl.rt.malloc(100, HUGE_FIRST)
    assert not device.gm.contains(plain, 4096)


def test_malloc_beyond_capacity_is_out_of_memory(device):
    assert acl.rt.malloc(64 * 1024 ** 3 + 1, HUGE_FIRST) == (0, 207001)
    assert "out of device memory" in acl.get_recent_err_msg()


def test_malloc_without_device():
    assert acl.init() == 0
    assert acl.rt.malloc(100, HUGE_FIRST) == (0, 107002)


def test_malloc_rounding_alignment_and_mem_info(device):
    free0, total, ret = acl.rt.get_mem_info(1)       # ACL_HBM_MEM
    assert ret == 0 and total == 64 * 1024 ** 3 and free0 == total
    a, ret_a = acl.rt.malloc(100, HUGE_FIRST)
    free1, _, _ = acl.rt.get_mem_info(0)             # ACL_DDR_MEM reports the same GM
    b, ret_b = acl.rt.malloc(100, HUGE_FIRST)
    free2, _, _ = acl.rt.get_mem_info(1)
    assert ret_a == ret_b == 0
    assert a % 64 == 0 and b % 64 == 0 and b > a
    # 100 B -> ceil32 = 128, + 32 = 160 B reserved per malloc
    assert free0 - free1 == 160 and free1 - free2 == 160
    assert acl.rt.free(a) == 0
    assert acl.rt.get_mem_info(1)[0] == free2 + 160
    assert acl.rt.get_mem_info(99) == (0, 0, 100000)


def test_free_errors(device):
    assert acl.rt.free(0) == 100000
    assert acl.rt.free(None) == 100000
    assert acl.rt.free(0xDEAD0000) == 207002         # ACL_ERROR_RT_MEMORY_FREE
    ptr, _ = acl.rt.malloc(256, HUGE_FIRST)
    assert acl.rt.free(ptr + 64) == 207002           # not the start of the allocation
    assert acl.rt.free(ptr) == 0
    assert acl.rt.free(ptr) == 207002                # double free
    assert "0x" in acl.get_recent_err_msg()


# -- memcpy ----------------------------------------------------------------------------
def test_memcpy_count_greater_than_dest_max_copies_nothing(device):
    old = np.full(16, 7, dtype=np.float32)
    ptr = to_device(old)
    new = np.arange(16, dtype=np.float32)
    ret = acl.rt.memcpy(ptr, 32, acl.util.numpy_to_ptr(new), new.nbytes, H2D)
    assert ret == 107000                             # ACL_ERROR_RT_PARAM_INVALID [R]
    assert "dest_max" in acl.get_recent_err_msg()
    assert np.array_equal(to_host(ptr, old), old)


def test_memcpy_out_of_bounds_device_range_writes_nothing(device):
    old = np.full(16, 3, dtype=np.float32)            # 64 B -> 96 B reserved
    ptr = to_device(old)
    big = np.arange(64, dtype=np.float32)             # 256 B
    ret = acl.rt.memcpy(ptr, big.nbytes, acl.util.numpy_to_ptr(big), big.nbytes, H2D)
    assert ret == 107000
    assert "past the end" in acl.get_recent_err_msg()
    assert np.array_equal(to_host(ptr, old), old)
    out = np.zeros(64, dtype=np.float32)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes, D2H) == 107000
    assert not out.any()


def test_memcpy_argument_checks(device):
    host = np.ones(4, dtype=np.float32)
    hp = acl.util.numpy_to_ptr(host)
    ptr, _ = acl.rt.malloc(16, HUGE_FIRST)
    assert acl.rt.memcpy(ptr, 16, hp, 0, H2D) == 0       # count 0: success, no copy
    assert acl.rt.memcpy(0, 0, 0, 0, H2D) == 0
    assert acl.rt.memcpy(0, 16, hp, 16, H2D) == 100000   # NULL dst
    assert acl.rt.memcpy(ptr, 16, None, 16, H2D) == 100000
    assert acl.rt.memcpy(ptr, 16, hp, 16, 42) == 100000  # invalid kind
    assert acl.rt.memcpy(ptr, 16, hp, 16, D2H) == 107000   # a device dst where kind says host
    assert acl.rt.memcpy(ptr, 64, hp, 32, H2D) == 107000   # src runs past its host buffer
    assert "host buffer" in acl.get_recent_err_msg()


def test_memcpy_d2d_h2h_and_default(device):
    src = np.arange(8, dtype=np.int32)
    a = to_device(src)
    b, _ = acl.rt.malloc(src.nbytes, HUGE_FIRST)
    assert acl.rt.memcpy(b, src.nbytes, a, src.nbytes, D2D) == 0
    assert np.array_equal(to_host(b, src), src)
    h = np.zeros_like(src)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(h), h.nbytes, acl.util.numpy_to_ptr(src),
                         src.nbytes, H2H) == 0
    assert np.array_equal(h, src)
    # DEFAULT infers each side from whether the address is live device memory
    twice = src * 2
    assert acl.rt.memcpy(a, twice.nbytes, acl.util.numpy_to_ptr(twice), twice.nbytes,
                         DEFAULT) == 0
    out = np.zeros_like(src)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, a, src.nbytes, DEFAULT) == 0
    assert np.array_equal(out, twice)


def test_memset(device):
    ptr, _ = acl.rt.malloc(64, HUGE_FIRST)
    assert acl.rt.memset(ptr, 64, 0x1AB, 64) == 0      # low byte 0xAB
    assert np.all(to_host(ptr, np.zeros(64, np.uint8)) == 0xAB)
    assert acl.rt.memset(ptr, 16, 0, 32) == 107000      # count > max_count
    assert acl.rt.memset(ptr, 4096, 0, 4096) == 107000  # past the allocation
    assert np.all(to_host(ptr, np.zeros(64, np.uint8)) == 0xAB)
    stream, _ = acl.rt.create_stream()
    assert acl.rt.memset_async(ptr, 64, 1, 64, stream) == 0
    assert np.all(to_host(ptr, np.zeros(64, np.uint8)) == 0xAB)  # not run yet
    assert acl.rt.synchronize_stream(stream) == 0
    assert np.all(to_host(ptr, np.zeros(64, np.uint8)) == 1)


# -- async copies and streams ----------------------------------------------------------
def test_memcpy_async_h2d_then_synchronize(device):
    stream, _ = acl.rt.create_stream()
    host = np.arange(256, dtype=np.float32)
    ptr, _ = acl.rt.malloc(host.nbytes, HUGE_FIRST)
    assert acl.rt.memset(ptr, host.nbytes, 0, host.nbytes) == 0
    assert acl.rt.memcpy_async(ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                               H2D, stream) == 0
    assert not to_host(ptr, host).any()                # enqueued, not run
    assert acl.rt.synchronize_stream(stream) == 0
    assert np.array_equal(to_host(ptr, host), host)


def test_memcpy_async_d2h_writes_host_at_synchronize(device):
    src = np.arange(32, dtype=np.int64)
    ptr = to_device(src)
    out = np.zeros_like(src)
    assert acl.rt.memcpy_async(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes, D2H,
                               0) == 0                # 0: the default stream
    assert not out.any()
    assert acl.rt.synchronize_stream(None) == 0
    assert np.array_equal(out, src)


def test_memcpy_async_keeps_a_temporary_source_alive(device):
    stream, _ = acl.rt.create_stream()
    ptr, _ = acl.rt.malloc(4096, HUGE_FIRST)
    assert acl.rt.memcpy_async(ptr, 4096, acl.util.numpy_to_ptr(np.full(1024, 5, np.int32)),
                               4096, H2D, stream) == 0
    for _ in range(10):                               # other registrations prune the registry
        acl.util.numpy_to_ptr(np.zeros(1024, np.int32))
    assert acl.rt.synchronize_stream(stream) == 0
    assert np.all(to_host(ptr, np.zeros(1024, np.int32)) == 5)


def test_async_copy_to_freed_memory_fails_at_synchronize(device):
    stream, _ = acl.rt.create_stream()
    host = np.ones(16, dtype=np.float32)
    ptr, _ = acl.rt.malloc(host.nbytes, HUGE_FIRST)
    assert acl.rt.memcpy_async(ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                               H2D, stream) == 0
    assert acl.rt.free(ptr) == 0
    assert acl.rt.synchronize_stream(stream) == 507015   # ACL_ERROR_RT_AICORE_EXCEPTION
    assert "not inside any live allocation" in acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(stream) == 0        # errors are reported once


def test_stream_handles(device):
    s1, _ = acl.rt.create_stream()
    s2, _ = acl.rt.create_stream()
    assert s1 != s2 and runtime.resolve_stream(s1) is not runtime.resolve_stream(s2)
    assert runtime.resolve_stream(0) is device.default_stream
    assert runtime.resolve_stream(None) is device.default_stream
    assert acl.rt.destroy_stream(s1) == 0
    assert runtime.resolve_stream(s1) is None
    assert acl.rt.destroy_stream(s1) == 107000
    assert acl.rt.synchronize_stream(s1) == 107000
    assert acl.rt.destroy_stream(0) == 100000           # the default stream
    s3, _ = acl.rt.create_stream()
    assert s3 not in (s1, s2)                            # handles are never reused
    assert acl.rt.synchronize_device() == 0


def test_stream_of_another_device(config):
    assert acl.init(config({"npusim": {"device_count": 2}})) == 0
    assert acl.rt.set_device(1) == 0
    stream, _ = acl.rt.create_stream()
    assert acl.rt.set_device(0) == 0
    assert acl.rt.synchronize_stream(stream) == 107003   # ACL_ERROR_RT_STREAM_CONTEXT


# -- events ----------------------------------------------------------------------------
def test_event_elapsed_time_of_a_1mib_copy(device):
    soc = npusim.get_soc()
    stream, _ = acl.rt.create_stream()
    start, _ = acl.rt.create_event()
    end, ret = acl.rt.create_event()
    assert ret == 0
    host = np.zeros(MiB, dtype=np.uint8)
    ptr, _ = acl.rt.malloc(MiB, HUGE_FIRST)
    assert acl.rt.record_event(start, stream) == 0
    assert acl.rt.memcpy_async(ptr, MiB, acl.util.numpy_to_ptr(host), MiB, H2D, stream) == 0
    assert acl.rt.record_event(end, stream) == 0
    assert acl.rt.event_elapsed_time(start, end) == (0.0, 507006)   # not executed yet
    assert acl.rt.synchronize_stream(stream) == 0
    ms, ret = acl.rt.event_elapsed_time(start, end)
    assert ret == 0 and isinstance(ms, float) and ms > 0
    # Ascend910B1: 10 us + 1 MiB / 25e9 B/s = 10 + 41.94304 us = 0.05194304 ms
    expected_ms = (soc.host_link_latency_us + MiB / soc.host_link_bandwidth * 1e6) / 1000
    assert ms == pytest.approx(expected_ms, rel=1e-6)
    assert acl.rt.query_event_status(end) == (1, 0)    # ACL_EVENT_RECORDED_STATUS_COMPLETE
    assert acl.rt.destroy_event(start) == 0
    assert acl.rt.destroy_event(start) == 107000
    assert acl.rt.destroy_event(end) == 0


def test_event_errors(device):
    a, _ = acl.rt.create_event()
    b, _ = acl.rt.create_event_with_flag(0x8)           # ACL_EVENT_TIME_LINE
    assert acl.rt.event_elapsed_time(a, b) == (0.0, 107006)   # never recorded
    assert acl.rt.event_elapsed_time(0, b) == (0.0, 100000)
    assert acl.rt.record_event(0, 0) == 100000
    assert acl.rt.record_event(0x123, 0) == 107000
    assert acl.rt.create_event_with_flag(0x4) == (0, 100000)
    assert acl.rt.query_event_status(a) == (0, 0)       # NOT_READY: never recorded
    assert acl.rt.synchronize_event(a) == 0


def test_stream_wait_event_orders_streams(device):
    stream_a, _ = acl.rt.create_stream()
    stream_b, _ = acl.rt.create_stream()
    stream_c, _ = acl.rt.create_stream()
    event, _ = acl.rt.create_event()
    host = np.ones(MiB, dtype=np.uint8)
    out_b = np.zeros(4096, dtype=np.uint8)
    src, _ = acl.rt.malloc(MiB, HUGE_FIRST)
    dst, _ = acl.rt.malloc(4096, HUGE_FIRST)
    # A: H2D copy, then record; B: wait for the record, then a D2H copy (another link)
    assert acl.rt.memcpy_async(src, MiB, acl.util.numpy_to_ptr(host), MiB, H2D, stream_a) == 0
    assert acl.rt.record_event(event, stream_a) == 0
    assert acl.rt.stream_wait_event(stream_b, event) == 0
    assert acl.rt.memcpy_async(acl.util.numpy_to_ptr(out_b), 4096, src, 4096, D2H,
                               stream_b) == 0
    # C: a D2D copy with no wait, the control
    assert acl.rt.memcpy_async(dst, 4096, src, 4096, D2D, stream_c) == 0
    assert acl.rt.synchronize_device() == 0
    ids = {name: runtime.resolve_stream(h).id
           for name, h in (("a", stream_a), ("b", stream_b), ("c", stream_c))}
    copies = {c[4]: c for c in device.copies}
    _, _, a_end = copies[ids["a"]][:3]
    assert copies[ids["b"]][1] >= a_end                 # B's copy starts after A's ends
    assert copies[ids["c"]][1] < a_end                  # C did not wait
    assert np.all(out_b == 1)                           # and B read what A wrote


# -- system parameters, error mapping --------------------------------------------------
def test_deterministic_option(device):
    assert not runtime.deterministic()
    assert acl.rt.ctx_get_sys_param_opt(0) == (0, 107021)   # never set [R]
    assert acl.rt.ctx_set_sys_param_opt(0, 1) == 0           # ACL_OPT_DETERMINISTIC
    assert runtime.deterministic() is True
    assert device.deterministic is True
    assert acl.rt.ctx_get_sys_param_opt(0) == (1, 0)
    assert acl.rt.ctx_set_sys_param_opt(0, 2) == 100000
    assert acl.rt.ctx_set_sys_param_opt(7, 1) == 100000
    assert acl.rt.ctx_set_sys_param_opt(0, 0) == 0
    assert runtime.deterministic() is False and device.deterministic is False


def test_sync_error_code_mapping():
    assert runtime.sync_error_code([]) == 0
    kernel_error = npusim.UbError("AllocTensor", "UB overflow: 300 KiB > 192 KiB",
                                  core=3, line="k.py:1")
    assert runtime.sync_error_code([kernel_error]) == 507015
    assert "UB overflow" in errmsg.get_recent_err_msg()
    assert runtime.sync_error_code([DeadlockError("stuck")]) == 507046
    assert "stuck" in errmsg.get_recent_err_msg()


# -- acl.util --------------------------------------------------------------------------
def test_util_pointers_alias_host_memory():
    arr = np.arange(8, dtype=np.float32)
    ptr = acl.util.numpy_to_ptr(arr)
    view = acl.util.ptr_to_numpy(ptr + 8, (2, 3), np.dtype(np.float32).num)
    assert view.tolist() == [[2, 3, 4], [5, 6, 7]]
    view[0, 0] = 42
    assert arr[2] == 42                                   # aliases, no copy
    assert acl.util.ptr_to_bytes(ptr, 4) == np.float32(0).tobytes()
    with pytest.raises(ValueError):
        acl.util.ptr_to_numpy(ptr, (9,), np.float32)      # past the registered array
    with pytest.raises(ValueError):
        acl.util.numpy_to_ptr(np.zeros((4, 4))[:, 1])     # not C-contiguous


def test_bytes_to_ptr_round_trip(device):
    data = bytes(range(64))
    ptr = to_device(np.frombuffer(data, dtype=np.uint8))
    buf = bytes(64)
    assert acl.rt.memcpy(acl.util.bytes_to_ptr(buf), 64, ptr, 64, D2H) == 0
    assert buf == data                                    # written in place, as in pyACL
    assert acl.util.ptr_to_bytes(acl.util.bytes_to_ptr(buf), 64) == data
    assert acl.util.ptr_to_numpy(acl.util.bytes_to_ptr(buf), (64,), np.uint8)[63] == 63


def test_host_registry_does_not_grow_with_temporaries():
    kept = np.zeros(4)
    kept_ptr = acl.util.numpy_to_ptr(kept)
    for _ in range(200):
        acl.util.numpy_to_ptr(np.ones(100))
    assert len(runtime.state.host_buffers) <= 3
    assert runtime.find_host_buffer(kept_ptr).obj is kept


def test_malloc_host(device):
    hp, ret = acl.rt.malloc_host(64)
    assert ret == 0 and hp
    src = np.arange(16, dtype=np.float32)
    assert acl.rt.memcpy(hp, 64, acl.util.numpy_to_ptr(src), 64, H2H) == 0
    assert acl.util.ptr_to_numpy(hp, (16,), np.float32).tolist() == src.tolist()
    assert acl.rt.free_host(hp) == 0
    assert acl.rt.free_host(hp) == 207002
