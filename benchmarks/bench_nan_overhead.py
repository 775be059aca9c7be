"""Benchmark: the host time the canonical-NaN rule costs (npusim/ascendc/nans.py).

One ApplyFusedEmaAdam fp32 launch of 2^22 elements on Ascend910B1 through aclnn (the
launch of bench_apply_fused_ema_adam.py), run alternately with the rule on and with
``nans.canonical`` replaced by a no-op, from the same inputs each time, in one process (so
both see the same load). Prints, per setting, the fastest and the median launch host time
(first phase to synchronize) and the time spent in ``nans.canonical``, and the overhead.
On a loaded 2-core host the medians move by several percent from run to run; the fastest
runs and the time inside ``canonical`` are the steadier figures.

Run: ``python benchmarks/bench_nan_overhead.py [--rounds 15] [--log2n 22]``
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_apply_fused_ema_adam as ema  # noqa: E402
import harness  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--log2n", type=int, default=22)
    args = parser.parse_args(argv)

    import aclnn
    from aclnn import acl, runtime
    from npusim.ascendc import nans

    n = 1 << args.log2n
    host = ema.make_data(args.log2n)
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    tensors, ptrs = {}, {}
    for name in ema.NAMES:
        ptr, ret = acl.rt.malloc(n * 4, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0
        ptrs[name] = ptr
        tensors[name] = aclnn.aclCreateTensor([n], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND,
                                              [n], ptr)
    step = np.array([ema.STEP], np.int64)
    sptr, _ = acl.rt.malloc(8, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    acl.rt.memcpy(sptr, 8, acl.util.numpy_to_ptr(step), 8, aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
    step_t = aclnn.aclCreateTensor([1], aclnn.ACL_INT64, [1], 0, aclnn.ACL_FORMAT_ND, [1], sptr)
    a = ema.ATTRS

    def reset():
        for name in ema.NAMES:
            acl.rt.memcpy(ptrs[name], n * 4, acl.util.numpy_to_ptr(host[name]), n * 4,
                          aclnn.ACL_MEMCPY_HOST_TO_DEVICE)

    def launch():
        ws, ex, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
            tensors["grad"], tensors["var"], tensors["m"], tensors["v"], tensors["s"], step_t,
            a["lr"], a["ema_decay"], a["beta1"], a["beta2"], a["eps"], a["mode"],
            a["bias_correction"], a["weight_decay"])
        assert ret == 0, acl.get_recent_err_msg()
        harness.second_phase(aclnn.aclnnApplyFusedEmaAdam, ws, ex, stream)

    rule = nans.canonical
    spent = [0.0]

    def timed(out):
        t = time.perf_counter()
        rule(out)
        spent[0] += time.perf_counter() - t
        return out

    settings = {"rule on": timed, "no-op": lambda out: out}
    wall = {k: [] for k in settings}
    inside = {k: [] for k in settings}
    try:
        for rnd in range(args.rounds + 1):             # round 0 warms up
            for name, fn in settings.items():
                nans.canonical = fn
                reset()
                spent[0] = 0.0
                t = time.perf_counter()
                launch()
                dt = time.perf_counter() - t
                if rnd:
                    wall[name].append(dt)
                    inside[name].append(spent[0])
    finally:
        nans.canonical = rule
        runtime.reset()

    def med(v):
        return sorted(v)[len(v) // 2]

    print(f"ApplyFusedEmaAdam fp32 2^{args.log2n}, {args.rounds} launches per setting")
    for name in settings:
        print(f"  {name:8s} host time fastest {min(wall[name]) * 1e3:8.1f} ms, median "
              f"{med(wall[name]) * 1e3:8.1f} ms; in nans.canonical median "
              f"{med(inside[name]) * 1e3:6.1f} ms")
    on, off = wall["rule on"], wall["no-op"]
    print(f"  overhead: fastest {100 * (min(on) / min(off) - 1):+.1f}%, median "
          f"{100 * (med(on) / med(off) - 1):+.1f}%, time inside canonical / median launch "
          f"{100 * med(inside['rule on']) / med(on):.1f}%")


if __name__ == "__main__":
    main()
