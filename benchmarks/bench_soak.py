"""Soak: 10,000 (or 100,000) operator launches through the aclnn API, creating and destroying
tensors and executors all the way, to show that a long run neither leaks nor slows down.

The mix (small shapes, Ascend910B1): aclnnAdd (fp32, plain and broadcast with a
workspace), aclnnInplaceAdd (int32), aclnnApplyFusedEmaAdam (fp32/fp16/bf16),
aclnnApplyAddSign (fp32/fp16) and, when they exist, aclnnEmbeddingDenseBackward and
aclnnFusedSparseAdam. Every launch builds new aclTensor/aclScalar descriptors and a new
executor (first phase), runs the second phase, and destroys the descriptors; every 10th launch uses a repeatable
executor twice and destroys it with aclDestroyAclOpExecutor; the device buffers are freed
and re-allocated every 100 launches and the stream is synchronised every 8. Every 1000
launches one operator's result is compared with its numpy golden, so the soak also shows
that the numbers stay right.

It prints, and with ``--json`` writes:

* host memory after start-up, after a warm-up of 1000 launches (the caches of tilings and
  kernels fill up until about then), at every 1000 launches and at the end: the resident set size (RSS, ``/proc/self/statm``) as is and after glibc's
  ``malloc_trim(0)`` has returned the C heap's free pages (numpy's freed buffers otherwise
  stay in the process and the raw RSS creeps up without any leak), and the number of
  blocks Python has allocated; the growth of each from the warm-up to the end, per 1000
  launches (a step of about 0.9 MiB thousands of launches in is what a table rebuilt twice
  as large looks like: CPython's interned strings did so until ``npusim.interned_names``);
* the size of what the device keeps (``Device.profiles`` and ``Device.tasks``, the
  msprof-style records: the last ``keep_records``, 1000, of each while profiling is off;
  ``--clear-records N`` clears them every N launches with ``aclnn.runtime.clear_records``)
  and the number of kept replays (``npusim.timing``: at most ``REPLAY_KEEP_ENTRIES``, 256,
  holding ``REPLAY_KEEP_RECORDS``, 2^17, records; the EmbeddingDenseBackward and
  FusedSparseAdam launches record what their random indices make them do, so each
  re-allocation with new indices adds replays until the bound; ``--keep-replays N`` sets
  the count, to separate their fill from a leak);
* the targets: the slope of the trimmed RSS over the checkpoints after the warm-up (a
  least-squares line, MiB per 1000 launches) at most 0.1, and the host time per launch at
  the end (median over the last 1000 launches) within 10% of the start (median over the
  1000 launches after the warm-up), each printed as met or missed. The host time per
  launch is measured over each stretch of launches between two synchronisations (every
  8 loop steps: the device runs the kernels when the host synchronises);
* device memory: ``acl.rt.get_mem_info`` free bytes at the start and the end (equal: no
  device leak) and the host-buffer registry's size;
* launches per second (operator launches, second phases that returned 0; the kernels they
  enqueue are counted too: a broadcast Add is a BroadcastTo and an Add).

Run: ``python benchmarks/bench_soak.py [--launches 10000|100000] [--clear-records N]
[--keep-replays N] [--json FILE]`` (about 14 ms per launch on a quiet 2-core host: 100,000 take 24 minutes).
"""
from __future__ import annotations

import argparse
import ctypes
import gc
import importlib.util
import json
import os
import resource
import sys
import time

import ml_dtypes
import numpy as np

import aclnn
from aclnn import acl, runtime
from npusim.kernels.add.golden import add_golden
from npusim.kernels.apply_add_sign.golden import apply_add_sign_golden
from npusim.kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden
from npusim import timing

BF16 = np.dtype(ml_dtypes.bfloat16)
HAS_EDB = importlib.util.find_spec("aclnn.ops.embedding_dense_backward") is not None
HAS_FSA = importlib.util.find_spec("aclnn.ops.fused_sparse_adam") is not None
WARMUP = 1000
SYNC_EVERY = 8
REALLOC_EVERY = 100
CHECK_EVERY = 1000
#: launches over which the host time per launch is taken (a median) at the start and end
WINDOW = 1000
#: targets: trimmed RSS slope (MiB per 1000 launches), end / start host time per launch
TARGET_SLOPE_MIB = 0.1
TARGET_TIME_RATIO = 1.10


def rss_bytes() -> int:
    """Current resident set size of this process (bytes). Linux: ``/proc/self/statm``;
    elsewhere the peak (``ru_maxrss``), which can only grow."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


MALLOC_TRIM = _malloc_trim()


def memory() -> dict:
    """RSS as the process holds it, RSS once the C heap has returned its free pages to the
    system (glibc ``malloc_trim(0)``; the same figure where that is not available), and
    the number of memory blocks Python has allocated (``sys.getallocatedblocks``).

    The raw RSS of a numpy-heavy process creeps up as glibc keeps freed blocks for reuse;
    the trimmed RSS and the Python block count are what a leak would make grow."""
    gc.collect()
    raw = rss_bytes()
    if MALLOC_TRIM is not None:
        MALLOC_TRIM(0)
    return {"rss_bytes": raw, "rss_trimmed_bytes": rss_bytes(),
            "python_blocks": sys.getallocatedblocks()}


def check(ret, what):
    if ret != 0:
        raise RuntimeError(f"{what} returned {ret}: {acl.get_recent_err_msg()}")


class Soak:
    """The device buffers and the launch mix."""

    def __init__(self, seed: int = 0):
        check(acl.init(), "acl.init")
        check(acl.rt.set_device(0), "set_device")
        self.stream, ret = acl.rt.create_stream()
        check(ret, "create_stream")
        self.rng = np.random.default_rng(seed)
        self.buffers: dict[str, tuple[int, np.ndarray]] = {}
        self.workspace = (0, 0)
        self.launches = 0
        self.kinds: dict[str, int] = {}

    # -- device buffers ---------------------------------------------------------------------
    def put(self, name: str, host: np.ndarray) -> None:
        host = np.ascontiguousarray(host)
        ptr, ret = acl.rt.malloc(max(host.nbytes, 1), aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        check(ret, "malloc")
        check(acl.rt.memcpy(ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                            aclnn.ACL_MEMCPY_HOST_TO_DEVICE), "memcpy")
        self.buffers[name] = (ptr, host)

    def realloc(self) -> None:
        """Free every buffer and allocate a fresh set (new data)."""
        for ptr, _ in self.buffers.values():
            check(acl.rt.free(ptr), "free")
        self.buffers.clear()
        r = self.rng
        for dt in (np.float32, np.float16, BF16):
            for k in ("grad", "var", "m", "v", "s"):
                x = r.standard_normal(40)
                self.put(f"ema_{k}_{np.dtype(dt).name}", (np.abs(x) if k == "v" else x).astype(dt))
        self.put("step", np.array([3], np.int64))
        for dt in (np.float32, np.float16):
            for k in ("var", "m", "grad"):
                self.put(f"sign_{k}_{np.dtype(dt).name}", r.standard_normal(96).astype(dt))
            for k, v in (("lr", 0.1), ("alpha", 1.0), ("signDecay", 0.5), ("beta", 0.9)):
                self.put(f"sign_{k}_{np.dtype(dt).name}", np.array([v], dt))
        for k in ("a", "b", "out"):
            self.put(f"add_{k}", r.standard_normal((8, 33)).astype(np.float32))
        self.put("add_row", r.standard_normal(33).astype(np.float32))
        for k in ("a", "b"):
            self.put(f"iadd_{k}", r.integers(-1000, 1000, 257).astype(np.int32))
        self.put("edb_grad", r.standard_normal((12, 16)).astype(np.float32))
        self.put("edb_idx", r.integers(0, 10, 12).astype(np.int64))
        self.put("edb_out", np.zeros((10, 16), np.float32))
        for k in ("var", "m"):
            self.put(f"fsa_{k}", r.standard_normal((16, 8)).astype(np.float32))
        self.put("fsa_v", np.abs(r.standard_normal((16, 8))).astype(np.float32))
        self.put("fsa_grad", r.standard_normal((6, 8)).astype(np.float32))
        self.put("fsa_idx", r.integers(0, 16, 6).astype(np.int32))
        for k, v in (("b1p", 0.9 ** 3), ("b2p", 0.999 ** 3), ("lr", 1e-3), ("b1", 0.9),
                     ("b2", 0.999), ("eps", 1e-8)):             # scalar inputs: device tensors
            self.put(f"fsa_{k}", np.array([v], np.float32))

    def tensor(self, name: str, shape=None):
        ptr, host = self.buffers[name]
        shape = list(host.shape if shape is None else shape)
        t = aclnn.aclCreateTensor(shape, aclnn.numpy_to_acl_dtype(host.dtype), None, 0,
                                  aclnn.ACL_FORMAT_ND, shape, ptr)
        if t is None:
            raise RuntimeError(acl.get_recent_err_msg())
        return t

    def read(self, name: str) -> np.ndarray:
        ptr, host = self.buffers[name]
        out = np.empty_like(host)
        check(acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes,
                            aclnn.ACL_MEMCPY_DEVICE_TO_HOST), "memcpy D2H")
        return out

    def workspace_of(self, size: int) -> int:
        """A workspace of at least ``size`` bytes (re-allocated when it must grow)."""
        if size > self.workspace[1]:
            if self.workspace[0]:
                self.sync()       # launches still queued use the old workspace
                check(acl.rt.free(self.workspace[0]), "free workspace")
            ptr, ret = acl.rt.malloc(size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
            check(ret, "malloc workspace")
            self.workspace = (ptr, size)
        return self.workspace[0] if size else 0

    # -- the operators ----------------------------------------------------------------------
    def first_phase(self, kind: str):
        """(first-phase args, phases, objects to destroy) of one launch of ``kind``."""
        if kind.startswith("ema"):
            dt = kind.split("_")[1]
            ts = [self.tensor(f"ema_{k}_{dt}") for k in ("grad", "var", "m", "v", "s")]
            ts.append(self.tensor("step"))
            args = ts + [1e-3, 0.999, 0.9, 0.999, 1e-8, 1, True, 0.01]
            return args, (aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize,
                          aclnn.aclnnApplyFusedEmaAdam), ts
        if kind.startswith("sign"):
            dt = kind.split("_")[1]
            ts = [self.tensor(f"sign_{k}_{dt}") for k in
                  ("var", "m", "lr", "alpha", "signDecay", "beta", "grad")]
            return ts, (aclnn.aclnnApplyAddSignGetWorkspaceSize, aclnn.aclnnApplyAddSign), ts
        if kind in ("add", "add_broadcast"):
            other = self.tensor("add_row" if kind == "add_broadcast" else "add_b")
            ts = [self.tensor("add_a"), other, self.tensor("add_out")]
            alpha = aclnn.aclCreateScalar(0.5, aclnn.ACL_FLOAT)
            return [ts[0], ts[1], alpha, ts[2]], (aclnn.aclnnAddGetWorkspaceSize,
                                                  aclnn.aclnnAdd), ts + [alpha]
        if kind == "inplace_add":
            ts = [self.tensor("iadd_a"), self.tensor("iadd_b")]
            alpha = aclnn.aclCreateScalar(1, aclnn.ACL_INT32)
            return ts + [alpha], (aclnn.aclnnInplaceAddGetWorkspaceSize,
                                  aclnn.aclnnInplaceAdd), ts + [alpha]
        if kind == "edb":
            from aclnn.ops import embedding_dense_backward as op
            ts = [self.tensor("edb_grad"), self.tensor("edb_idx"), self.tensor("edb_out")]
            return [ts[0], ts[1], 10, 0, False, ts[2]], (
                op.aclnnEmbeddingDenseBackwardGetWorkspaceSize,
                op.aclnnEmbeddingDenseBackward), ts
        if kind == "fsa":
            from aclnn.ops import fused_sparse_adam as op
            ts = [self.tensor(f"fsa_{k}") for k in ("var", "m", "v", "b1p", "b2p", "lr", "b1",
                                                    "b2", "eps", "grad", "idx")]
            return ts + [False], (
                op.aclnnFusedSparseAdamGetWorkspaceSize, op.aclnnFusedSparseAdam), ts
        raise ValueError(kind)

    def launch(self, kind: str, repeat: int = 1) -> None:
        args, (first, second), objects = self.first_phase(kind)
        ws, ex, ret = first(*args)
        check(ret, first.__name__)
        if repeat > 1:
            check(aclnn.aclSetAclOpExecutorRepeatable(ex), "aclSetAclOpExecutorRepeatable")
        wptr = self.workspace_of(ws)
        for _ in range(repeat):
            check(second(wptr, ws, ex, self.stream), second.__name__)
            self.launches += 1
            self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if repeat > 1:
            check(aclnn.aclDestroyAclOpExecutor(ex), "aclDestroyAclOpExecutor")
        for obj in objects:
            destroy = (aclnn.aclDestroyScalar if isinstance(obj, aclnn.aclScalar)
                       else aclnn.aclDestroyTensor)
            check(destroy(obj), destroy.__name__)

    def sync(self) -> None:
        check(acl.rt.synchronize_stream(self.stream), "synchronize_stream")

    # -- numerics spot check -------------------------------------------------------------------
    def verify(self, which: int) -> str:
        """Run one operator on known data and compare it with its golden."""
        self.sync()
        kind = ("ema_float32", "sign_float32", "add")[which % 3]
        if kind == "add":
            a, b = self.read("add_a"), self.read("add_b")
            self.launch("add")
            self.sync()
            gold = add_golden(a, b, np.float32(0.5), np.float32)
            np.testing.assert_allclose(self.read("add_out"), gold, rtol=1e-6, atol=1e-6)
        elif kind == "sign_float32":
            names = [f"sign_{k}_float32" for k in ("var", "m", "grad")]
            var, m, grad = (self.read(n) for n in names)
            self.launch(kind)
            self.sync()
            gv, gm = apply_add_sign_golden(var, m, *(float(np.float32(x)) for x in
                                                     (0.1, 1.0, 0.5, 0.9)), grad)
            np.testing.assert_allclose(self.read(names[0]), gv, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(self.read(names[1]), gm, rtol=1e-5, atol=1e-6)
        else:
            names = [f"ema_{k}_float32" for k in ("grad", "var", "m", "v", "s")]
            host = [self.read(n) for n in names]
            self.launch(kind)
            self.sync()
            gold = apply_fused_ema_adam_golden(*host, 3, lr=1e-3, ema_decay=0.999, mode=1,
                                               weight_decay=0.01)
            for n, g in zip(names[1:], gold):
                np.testing.assert_allclose(self.read(n), g, rtol=1e-5, atol=1e-6)
        return kind


MIX = (["add"] * 4 + ["add_broadcast"] * 2 + ["inplace_add"] * 3 + ["ema_float32"] * 2
       + ["ema_float16", "ema_bfloat16"] + ["sign_float32"] * 2 + ["sign_float16"])


def run(launches: int, clear_every: int | None) -> dict:
    mix = MIX + (["edb"] * 2 if HAS_EDB else []) + (["fsa"] * 2 if HAS_FSA else [])
    soak = Soak()
    dev = runtime.current_device()
    mem_start = memory()
    free_start, total, ret = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
    check(ret, "get_mem_info")
    soak.realloc()
    checkpoints, checked = [], []
    mem_warm = None
    t_start = time.perf_counter()
    t_warm = None
    next_clear = clear_every or 0
    i = 0
    stretches = []                # (launches at its end, launches in it, seconds)
    t_sync, n_sync = time.perf_counter(), 0
    while soak.launches < launches:
        if soak.launches >= WARMUP and mem_warm is None:
            soak.sync()
            mem_warm, t_warm, warm_launches = memory(), time.perf_counter(), soak.launches
        kind = mix[int(soak.rng.integers(len(mix)))]
        soak.launch(kind, repeat=2 if i % 10 == 9 else 1)
        i += 1
        if i % SYNC_EVERY == 0:
            soak.sync()
            now = time.perf_counter()
            stretches.append((soak.launches, soak.launches - n_sync, now - t_sync))
        if i % REALLOC_EVERY == 0:
            soak.sync()
            soak.realloc()
        if clear_every and soak.launches >= next_clear:
            soak.sync()
            runtime.clear_records()
            next_clear += clear_every
        if soak.launches // CHECK_EVERY > len(checkpoints):
            checked.append(soak.verify(len(checkpoints)))
            checkpoints.append({"launches": soak.launches, **memory(),
                                "profiles": len(dev.profiles), "tasks": len(dev.tasks),
                                "kept_replays": len(timing._REPLAY_KEPT),
                                "seconds": time.perf_counter() - t_start})
        if i % SYNC_EVERY == 0:   # the next stretch starts after the checks above
            t_sync, n_sync = time.perf_counter(), soak.launches
    soak.sync()
    t_end = time.perf_counter()
    for ptr, _ in soak.buffers.values():
        check(acl.rt.free(ptr), "free")
    if soak.workspace[0]:
        check(acl.rt.free(soak.workspace[0]), "free")
    free_end, _, _ = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
    mem_end = memory()
    if mem_warm is None:                       # a run shorter than the warm-up
        mem_warm, t_warm, warm_launches = mem_start, t_start, 0
    thousands = max(1e-9, (soak.launches - warm_launches) / 1000)
    growth = {k: mem_end[k] - mem_warm[k] for k in mem_end}
    after = [c for c in checkpoints if c["launches"] >= warm_launches]
    slope = None
    if len(after) >= 2:                    # least squares, MiB per 1000 launches
        x = np.array([c["launches"] for c in after], float) / 1000
        y = np.array([c["rss_trimmed_bytes"] for c in after], float) / 2 ** 20
        slope = float(np.polyfit(x, y, 1)[0])

    def per_launch_ms(lo, hi):
        """Median host ms per launch over the stretches ending in (lo, hi]."""
        v = [t / n * 1e3 for end, n, t in stretches if lo < end <= hi and n]
        return float(np.median(v)) if v else None

    n_done = soak.launches
    start_ms = per_launch_ms(warm_launches, warm_launches + WINDOW)
    end_ms = per_launch_ms(max(warm_launches + WINDOW, n_done - WINDOW), n_done)
    result = {
        "launches": soak.launches, "kernel_launches": dev.profiles.total,
        "mix": soak.kinds, "verified": checked,
        "seconds": t_end - t_start,
        "launches_per_s": soak.launches / (t_end - t_start),
        "launches_per_s_after_warmup": (soak.launches - warm_launches) / (t_end - t_warm),
        "memory_start": mem_start, "memory_after_warmup": mem_warm, "memory_end": mem_end,
        "growth_after_warmup": growth,
        "growth_per_1000_launches": {k: v / thousands for k, v in growth.items()},
        "rss_trimmed_slope_mib_per_1000": slope,
        "host_ms_per_launch_start": start_ms, "host_ms_per_launch_end": end_ms,
        "slope_met": slope is not None and slope <= TARGET_SLOPE_MIB,
        "time_met": (start_ms is not None and end_ms is not None
                     and end_ms <= TARGET_TIME_RATIO * start_ms),
        "kept_replays": len(timing._REPLAY_KEPT),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "device_free_start_bytes": free_start, "device_free_end_bytes": free_end,
        "device_total_bytes": total,
        "device_records": {"profiles": len(dev.profiles), "tasks": len(dev.tasks)},
        "host_buffer_registry": len(runtime.state.host_buffers),
        "clear_records_every": clear_every, "checkpoints": checkpoints,
    }
    check(acl.rt.destroy_stream(soak.stream), "destroy_stream")
    check(acl.rt.reset_device(0), "reset_device")
    check(acl.finalize(), "finalize")
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launches", type=int, default=10_000)
    parser.add_argument("--clear-records", type=int, default=None, metavar="N",
                        help="clear the device's profiles and task records every N launches")
    parser.add_argument("--keep-replays", type=int, default=None, metavar="N",
                        help="keep at most N replays (npusim.timing.REPLAY_KEEP_ENTRIES)")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    if args.keep_replays is not None:
        timing.REPLAY_KEEP_ENTRIES = args.keep_replays
    r = run(args.launches, args.clear_records)
    mib = 2 ** 20
    print(f"Soak on Ascend910B1: {r['launches']} operator launches in {r['seconds']:.1f} s "
          f"(kept replays at most {timing.REPLAY_KEEP_ENTRIES}, "
          f"{timing.REPLAY_KEEP_RECORDS} records)")
    print(f"  launches per second     {r['launches_per_s']:10.1f}   (after warm-up "
          f"{r['launches_per_s_after_warmup']:.1f})")
    print("  mix                     " + ", ".join(f"{k} {v}" for k, v in sorted(r["mix"].items())))
    print(f"  numerics checked        {len(r['verified'])} times against the goldens: "
          f"{', '.join(r['verified'])}")
    s, w, e = r["memory_start"], r["memory_after_warmup"], r["memory_end"]
    g, gk = r["growth_after_warmup"], r["growth_per_1000_launches"]
    print(f"  RSS start / warm / end  {s['rss_bytes'] / mib:.1f} / {w['rss_bytes'] / mib:.1f} / "
          f"{e['rss_bytes'] / mib:.1f} MiB   (raw)")
    print(f"                          {s['rss_trimmed_bytes'] / mib:.1f} / "
          f"{w['rss_trimmed_bytes'] / mib:.1f} / {e['rss_trimmed_bytes'] / mib:.1f} MiB   "
          "(C heap trimmed)")
    print(f"  growth after warm-up    raw {g['rss_bytes'] / mib:+.2f} MiB, trimmed "
          f"{g['rss_trimmed_bytes'] / mib:+.2f} MiB ({gk['rss_trimmed_bytes'] / 1024:+.1f} KiB "
          f"per 1000 launches), Python blocks {g['python_blocks']:+d} "
          f"({gk['python_blocks']:+.0f} per 1000 launches)")
    print(f"  device records kept     {r['device_records']['profiles']} kernel profiles, "
          f"{r['device_records']['tasks']} task records of {r['kernel_launches']} kernel "
          f"launches; {r['kept_replays']} kept replays"
          + (f" (cleared every {r['clear_records_every']} launches)"
             if r["clear_records_every"] else ""))
    print(f"  device free start / end {r['device_free_start_bytes']} / "
          f"{r['device_free_end_bytes']} B of {r['device_total_bytes']} B")
    print(f"  host-buffer registry    {r['host_buffer_registry']} entries")
    print("  checkpoints (launches: RSS raw / trimmed MiB, Python blocks, profiles, tasks, "
          "kept replays, s):")
    for c in r["checkpoints"]:
        print(f"    {c['launches']:6d}: {c['rss_bytes'] / mib:7.1f} "
              f"{c['rss_trimmed_bytes'] / mib:7.1f} {c['python_blocks']:8d} {c['profiles']:6d} "
              f"{c['tasks']:6d} {c['kept_replays']:5d} {c['seconds']:7.1f}")
    slope, a, b = (r["rss_trimmed_slope_mib_per_1000"], r["host_ms_per_launch_start"],
                   r["host_ms_per_launch_end"])
    verdict = {True: "met", False: "MISSED"}
    print(f"  RSS slope after warm-up {'n/a' if slope is None else f'{slope:+.3f}'} MiB per "
          f"1000 launches (trimmed, least squares)   target <= {TARGET_SLOPE_MIB}: "
          f"{verdict[r['slope_met']]}")
    fmt = lambda v: "n/a" if v is None else f"{v:.2f}"
    ratio = f" ({b / a:.2f}x)" if a and b else ""
    print(f"  host time per launch    start {fmt(a)} ms, end {fmt(b)} ms{ratio} (medians over "
          f"{WINDOW} launches)   target end <= {TARGET_TIME_RATIO:.2f} x start: "
          f"{verdict[r['time_met']]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
