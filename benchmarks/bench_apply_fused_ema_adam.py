"""Benchmark: ApplyFusedEmaAdam fp32 on Ascend910B1, 2^22 and 2^24 elements, all cores.

For each size it prints
* the simulated kernel time (Task Duration, µs), the GM bandwidth (bytes read and written
  per second) and the HBM bandwidth (bytes that reached HBM per second: the L2 absorbs
  part of the writes), next to the floor ``HBM bytes / hbm_bandwidth`` no kernel can beat;
* the simulator's host wall time (numpy functional run + simpy timing replay, each shown)
  next to the numpy golden's on the same data, and their ratio (target: at most 3x);
* the peak resident memory of the simulator's process (each size and the golden run in
  fresh processes) next to the bytes allocated on the device plus the host arrays.

Run: ``python benchmarks/bench_apply_fused_ema_adam.py [--sizes 22,24] [--json FILE]``
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def run_golden(log2n: int) -> dict:
    """Host time of the numpy golden on the same data (its own process; best of 3, so
    the figure does not depend on first-touch page faults)."""
    from kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden

    host = make_data(log2n)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        apply_fused_ema_adam_golden(host["grad"], host["var"], host["m"], host["v"], host["s"],
                                    10, **ATTRS)
        best = min(best, time.perf_counter() - t0)
    return {"golden_wall_s": best}


ATTRS = dict(lr=1e-3, ema_decay=0.9999, beta1=0.9, beta2=0.999, eps=1e-8, mode=1,
             bias_correction=True, weight_decay=0.01)


def make_data(log2n: int) -> dict:
    n = 1 << log2n
    rng = np.random.default_rng(0)
    host = {k: rng.standard_normal(n, dtype=np.float32) for k in ("grad", "var", "m", "s")}
    host["v"] = np.abs(rng.standard_normal(n, dtype=np.float32))
    return host


def run_sim(log2n: int) -> dict:
    """The operator through the aclnn API on the simulator (its own process)."""
    import aclnn
    from aclnn import acl

    n = 1 << log2n
    host = make_data(log2n)
    attrs = ATTRS
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    tensors, device_bytes = {}, 0
    for name in ("grad", "var", "m", "v", "s"):
        ptr, ret = acl.rt.malloc(n * 4, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        acl.rt.memcpy(ptr, n * 4, acl.util.numpy_to_ptr(host[name]), n * 4,
                      aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
        tensors[name] = aclnn.aclCreateTensor([n], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND,
                                              [n], ptr)
        device_bytes += n * 4
    step = np.array([10], np.int64)
    sptr, _ = acl.rt.malloc(8, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    acl.rt.memcpy(sptr, 8, acl.util.numpy_to_ptr(step), 8, aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
    step_t = aclnn.aclCreateTensor([1], aclnn.ACL_INT64, [1], 0, aclnn.ACL_FORMAT_ND, [1], sptr)

    t0 = time.perf_counter()
    ws, executor, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
        tensors["grad"], tensors["var"], tensors["m"], tensors["v"], tensors["s"], step_t,
        attrs["lr"], attrs["ema_decay"], attrs["beta1"], attrs["beta2"], attrs["eps"],
        attrs["mode"], attrs["bias_correction"], attrs["weight_decay"])
    assert ret == 0, acl.get_recent_err_msg()
    wptr, _ = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert aclnn.aclnnApplyFusedEmaAdam(wptr, ws, executor, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
    sim_s = time.perf_counter() - t0

    from aclnn import runtime
    prof = runtime.current_device().profiles[-1]
    nbytes = prof.bytes_read + prof.bytes_written
    floor_us = prof.hbm_bytes / runtime.current_device().soc.hbm_bandwidth * 1e6
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "log2n": log2n, "elements": n, "kernel_us": prof.duration_us,
        "hbm_floor_us": floor_us, "bandwidth_TBps": prof.bandwidth / 1e12,
        "hbm_bandwidth_TBps": prof.hbm_bandwidth / 1e12, "gm_bytes": nbytes,
        "hbm_bytes": prof.hbm_bytes,
        "hbm_TBps": runtime.current_device().soc.hbm_bandwidth / 1e12,
        "sim_wall_s": sim_s, "functional_s": prof.host_functional_s,
        "timing_s": prof.host_timing_s, "peak_rss_bytes": peak,
        "device_plus_host_bytes": device_bytes + ws + 5 * n * 4,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="22,24", help="log2 of the element counts")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        part, log2n = args.child
        print(json.dumps((run_sim if part == "sim" else run_golden)(int(log2n))))
        return

    def child(part, log2n):
        out = subprocess.run([sys.executable, __file__, "--child", part, str(log2n)],
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    rows = []
    for log2n in (int(s) for s in args.sizes.split(",")):
        row = {**child("sim", log2n), **child("golden", log2n)}
        row["ratio"] = row["sim_wall_s"] / row["golden_wall_s"]
        rows.append(row)
    print("ApplyFusedEmaAdam fp32, Ascend910B1, mode 1, all cores")
    for r in rows:
        print(f"\n2^{r['log2n']} = {r['elements']} elements")
        print(f"  simulated kernel time   {r['kernel_us']:10.1f} us   (floor: HBM bytes / HBM "
              f"bandwidth = {r['hbm_floor_us']:.1f} us)")
        print(f"  GM bandwidth            {r['bandwidth_TBps']:10.3f} TB/s ({r['gm_bytes'] / 2**20:.0f} MiB "
              f"read + written; L2 absorbs part of the writes)")
        print(f"  HBM bandwidth           {r['hbm_bandwidth_TBps']:10.3f} TB/s ({r['hbm_bytes'] / 2**20:.0f} "
              f"MiB; the SoC's HBM: {r['hbm_TBps']:.2f} TB/s)")
        print(f"  simulator host time     {r['sim_wall_s']:10.3f} s    (functional "
              f"{r['functional_s']:.3f} s, timing {r['timing_s']:.3f} s)")
        print(f"  numpy golden host time  {r['golden_wall_s']:10.3f} s    -> ratio "
              f"{r['ratio']:.2f}x (target <= 3x)")
        print(f"  peak resident memory    {r['peak_rss_bytes'] / 2**20:10.1f} MiB  (device + host "
              f"arrays {r['device_plus_host_bytes'] / 2**20:.1f} MiB)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
