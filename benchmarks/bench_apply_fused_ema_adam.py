"""Benchmark: ApplyFusedEmaAdam fp32 on Ascend910B1, 2^22 and 2^24 elements, all cores.

For each size it prints
* the simulated kernel time (Task Duration, µs), the GM bandwidth (bytes read and written
  per second) and the HBM bandwidth (bytes that reached HBM per second: the L2 absorbs
  part of the writes), next to the floor ``HBM bytes / hbm_bandwidth`` no kernel can beat;
* the simulator's host wall time through the aclnn API (first phase to synchronize; the
  numpy functional run and the simpy timing replay shown apart) next to what a user would
  otherwise run on the same arrays (baselines.py): fp32 numpy (``out=`` ufuncs, in place)
  and torch CPU (``torch.optim.AdamW(foreach=True)`` + ``torch._foreach_lerp_`` for the
  EMA), timed in one process, interleaved (sim, numpy, torch, ...), the fastest of
  ``--repeats`` runs each, every run from the same inputs; and the ratios (targets: at most
  3x numpy at 2^22 and 2^24, 6x at 2^18). The simulator runs twice per round: replaying
  every launch's timing (the figure of a launch it has not seen), and as a repeated launch
  that takes the kept replay of the launch before (harness.SIM_REPLAYS);
* the peak resident memory of the simulator's run (each size in a fresh process; read
  after the first simulator run, before the baselines allocate) next to the bytes
  allocated on the device plus the host arrays;
* the largest difference of the simulator's outputs from the float64 golden (the
  correctness check; the golden is not timed).

Run: ``python benchmarks/bench_apply_fused_ema_adam.py [--sizes 22,24] [--repeats 5]
[--json FILE]``
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines  # noqa: E402
import harness  # noqa: E402

ATTRS = dict(lr=1e-3, ema_decay=0.9999, beta1=0.9, beta2=0.999, eps=1e-8, mode=1,
             bias_correction=True, weight_decay=0.01)
STEP = 10
NAMES = ("grad", "var", "m", "v", "s")


def make_data(log2n: int) -> dict:
    """The five float32 inputs of 2^log2n elements (v non-negative), seeded."""
    n = 1 << log2n
    rng = np.random.default_rng(0)
    host = {k: rng.standard_normal(n, dtype=np.float32) for k in ("grad", "var", "m", "s")}
    host["v"] = np.abs(rng.standard_normal(n, dtype=np.float32))
    return host


def warm_bytes(log2n: int) -> int:
    """Bytes a measurement's process touches before the simulator's first run finishes
    (host data with its float32 temporaries, device memory): warmed by harness.prepare."""
    return 60 << log2n


def measure(log2n: int, repeats: int = 5, check: bool = True,
            with_baselines: bool = True) -> dict:
    """The simulator and its baselines on the same 2^log2n-element data, interleaved
    (``with_baselines`` false: the simulator alone).

    Returns a dict of figures: seconds (``sim_wall_s``, ``numpy_s``, ``torch_s`` — the
    fastest runs; ``*_runs`` all of them; ``torch_s`` None without torch), the best
    simulator run's ``functional_s`` / ``timing_s``, the simulated ``kernel_us``, bytes
    (``peak_rss_bytes``, ``device_plus_host_bytes``), and ``max_abs_err`` of the first
    run's outputs against the float64 golden (None when ``check`` is false).

    Raises:
        AssertionError: an aclnn call fails, or the outputs differ from the golden by more
            than the fp32 tolerance of the operator's tests (rtol 1e-5, atol 1e-6).
    """
    import aclnn
    from aclnn import acl, runtime

    threads = harness.torch_threads()
    n = 1 << log2n
    host = make_data(log2n)
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    tensors, ptrs, device_bytes = {}, {}, 0
    for name in NAMES:
        ptr, ret = acl.rt.malloc(n * 4, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0
        ptrs[name] = ptr
        tensors[name] = aclnn.aclCreateTensor([n], aclnn.ACL_FLOAT, [1], 0, aclnn.ACL_FORMAT_ND,
                                              [n], ptr)
        device_bytes += n * 4
    step = np.array([STEP], np.int64)
    sptr, _ = acl.rt.malloc(8, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    acl.rt.memcpy(sptr, 8, acl.util.numpy_to_ptr(step), 8, aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
    step_t = aclnn.aclCreateTensor([1], aclnn.ACL_INT64, [1], 0, aclnn.ACL_FORMAT_ND, [1], sptr)
    dev = runtime.current_device()
    a = ATTRS
    sim = {}

    def sim_reset():                # the operator updates var, m, v, s in place
        for name in NAMES:
            acl.rt.memcpy(ptrs[name], n * 4, acl.util.numpy_to_ptr(host[name]), n * 4,
                          aclnn.ACL_MEMCPY_HOST_TO_DEVICE)

    def sim_run():
        ws, executor, ret = aclnn.aclnnApplyFusedEmaAdamGetWorkspaceSize(
            tensors["grad"], tensors["var"], tensors["m"], tensors["v"], tensors["s"], step_t,
            a["lr"], a["ema_decay"], a["beta1"], a["beta2"], a["eps"], a["mode"],
            a["bias_correction"], a["weight_decay"])
        assert ret == 0, acl.get_recent_err_msg()
        harness.second_phase(aclnn.aclnnApplyFusedEmaAdam, ws, executor, stream)
        sim["ws"] = ws
        sim.setdefault("profiles", []).append(dev.profiles[-1])

    work, torch_step = {}, {}

    def after_first():
        sim["peak"] = harness.peak()
        if check:
            from npusim.kernels.apply_fused_ema_adam.golden import apply_fused_ema_adam_golden
            expect = apply_fused_ema_adam_golden(*(host[k] for k in NAMES), STEP, **ATTRS)
            err = 0.0
            for name, e in zip(("var", "m", "v", "s"), expect):
                got = np.empty(n, np.float32)
                acl.rt.memcpy(acl.util.numpy_to_ptr(got), n * 4, ptrs[name], n * 4,
                              aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
                np.testing.assert_allclose(got, e, rtol=1e-5, atol=1e-6, err_msg=name)
                err = max(err, float(np.abs(got.astype(np.float64) - e).max()))
            sim["max_abs_err"] = err
        if not with_baselines:
            return
        # the baselines' working copies (numpy and torch share them: torch.from_numpy)
        work.update({k: np.empty_like(host[k]) for k in NAMES})
        work["scratch"] = np.empty_like(host["var"])
        if baselines.torch_version() is not None:
            torch_step["opt"] = baselines.EmaAdamTorch(*(work[k] for k in NAMES), STEP, **ATTRS)

    def work_reset():
        for k in NAMES:
            np.copyto(work[k], host[k])

    def numpy_run():
        baselines.ema_adam_numpy(*(work[k] for k in NAMES), STEP, scratch=work["scratch"],
                                 **ATTRS)

    def torch_run():
        torch_step["opt"].step()

    runners = {"sim": (sim_reset, sim_run)}
    if with_baselines:
        runners.update(numpy=(work_reset, numpy_run),
                       torch=(work_reset, torch_run if threads is not None else None))
    times = harness.interleave(harness.with_kept_replays(runners), repeats,
                               after_first=after_first)
    prof, kept = harness.fastest_sim_runs(times, sim["profiles"])
    soc = dev.soc
    sim_s = min(times["sim"])
    numpy_s = harness.fastest(times.get("numpy", []))
    torch_s = harness.fastest(times.get("torch", []))
    return {
        "log2n": log2n, "elements": n, "repeats": repeats, "kernel_us": prof.duration_us,
        "hbm_floor_us": prof.hbm_bytes / soc.hbm_bandwidth * 1e6,
        "bandwidth_TBps": prof.bandwidth / 1e12, "hbm_bandwidth_TBps": prof.hbm_bandwidth / 1e12,
        "gm_bytes": prof.bytes_read + prof.bytes_written, "hbm_bytes": prof.hbm_bytes,
        "hbm_TBps": soc.hbm_bandwidth / 1e12,
        "sim_wall_s": sim_s, "sim_runs": times["sim"], "functional_s": prof.host_functional_s,
        "timing_s": prof.host_timing_s, "numpy_s": numpy_s, "numpy_runs": times.get("numpy", []),
        **harness.kept_figures(times, kept.host_timing_s, numpy_s),
        "torch_s": torch_s, "torch_runs": times.get("torch", []),
        "torch_version": baselines.torch_version(), "torch_threads": threads,
        "ratio_numpy": harness.ratio(sim_s, numpy_s), "ratio_torch": harness.ratio(sim_s, torch_s),
        "peak_rss_bytes": sim["peak"],
        "device_plus_host_bytes": device_bytes + 8 + sim["ws"] + 5 * n * 4,
        "max_abs_err": sim.get("max_abs_err"),
    }


def report(r: dict) -> str:
    """The figures of one size as printed lines."""
    torch_line = (f"{r['torch_s']:10.3f} s    -> ratio {r['ratio_torch']:.2f}x"
                  if r["torch_s"] is not None else f"{harness.NOT_INSTALLED:>10}")
    err = "" if r["max_abs_err"] is None else f"{r['max_abs_err']:.3g}"
    return "\n".join([
        f"2^{r['log2n']} = {r['elements']} elements (fastest of {r['repeats']} interleaved runs)",
        f"  simulated kernel time   {r['kernel_us']:10.1f} us   (floor: HBM bytes / HBM "
        f"bandwidth = {r['hbm_floor_us']:.1f} us)",
        f"  GM bandwidth            {r['bandwidth_TBps']:10.3f} TB/s ({r['gm_bytes'] / 2**20:.0f} "
        f"MiB read + written; L2 absorbs part of the writes)",
        f"  HBM bandwidth           {r['hbm_bandwidth_TBps']:10.3f} TB/s "
        f"({r['hbm_bytes'] / 2**20:.0f} MiB; the SoC's HBM: {r['hbm_TBps']:.2f} TB/s)",
        f"  simulator host time     {r['sim_wall_s']:10.3f} s    (functional "
        f"{r['functional_s']:.3f} s, timing {r['timing_s']:.3f} s)",
        f"  repeated launch         {r['sim_kept_s']:10.3f} s    (kept replay: timing "
        f"{r['timing_kept_s']:.3f} s)",
        f"  numpy fp32              {r['numpy_s']:10.3f} s    -> ratio {r['ratio_numpy']:.2f}x "
        f"(target <= {3 if r['log2n'] >= 22 else 6}x), repeated launch "
        f"{harness.fmt_x(r['ratio_numpy_kept'])}",
        f"  torch AdamW foreach+EMA {torch_line}",
        f"  peak resident memory    {r['peak_rss_bytes'] / 2**20:10.1f} MiB  (device + host "
        f"arrays {r['device_plus_host_bytes'] / 2**20:.1f} MiB)",
        f"  max |sim - float64 golden| {err}"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="22,24", help="log2 of the element counts")
    parser.add_argument("--repeats", type=int, default=5, help="interleaved runs per size")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        harness.prepare(warm_bytes(args.child))
        print(json.dumps(measure(args.child, args.repeats)))
        return

    rows = []
    print("ApplyFusedEmaAdam fp32, Ascend910B1, mode 1, all cores")
    for log2n in (int(s) for s in args.sizes.split(",")):
        # a fresh process per size, so that its peak memory is its own
        out = subprocess.run([sys.executable, __file__, "--child", str(log2n), "--repeats",
                              str(args.repeats)], check=True, capture_output=True,
                             text=True).stdout
        rows.append(json.loads(out.strip().splitlines()[-1]))
        print("\n" + report(rows[-1]))
    harness.write_json(args.json, rows)
    return rows


if __name__ == "__main__":
    main()
