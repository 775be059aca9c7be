"""Benchmark: aclnnFusedSparseAdam fp32 on Ascend910B1, var [rows, dim], Zipf indices.

Prints the simulated kernels (the Sort of the indices and FusedSparseAdam, whose duplicate
merge walks the sorted entries), the simulator's host time through the aclnn API
(functional run and timing replay apart) next to fp32 numpy on the same arrays
(``baselines.fused_sparse_adam_numpy``: the duplicates summed with ``np.add.at``, then the
update over whole arrays, in place), interleaved, the fastest of ``--repeats`` runs each,
every run from the same var, m and v; the peak resident memory; and the largest difference
from the float64 golden. torch has no FusedSparseAdam (``torch.optim.SparseAdam`` neither
decays the rows no index names nor sums duplicates first), so there is no torch column.

Run: ``python benchmarks/bench_fused_sparse_adam.py [--rows 50000] [--dim 64]
[--indices 16384] [--repeats 5] [--json FILE]``
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines  # noqa: E402
import harness  # noqa: E402

SCALARS = (0.9 ** 10, 0.999 ** 10, 1e-3, 0.9, 0.999, 1e-8)   # beta1_power .. epsilon


def make_data(rows: int, dim: int, n: int, zipf: float = 1.0) -> dict:
    """var, m (normal), v (non-negative), grad [n, dim] fp32 and int32 indices drawn with
    probability ~ 1/(k+1)^zipf over the rows, seeded."""
    rng = np.random.default_rng(0)
    data = {k: rng.standard_normal((rows, dim), dtype=np.float32) for k in ("var", "m")}
    data["v"] = np.abs(rng.standard_normal((rows, dim), dtype=np.float32))
    data["grad"] = rng.standard_normal((n, dim), dtype=np.float32)
    p = 1.0 / np.arange(1, rows + 1) ** zipf
    data["indices"] = rng.choice(rows, n, p=p / p.sum()).astype(np.int32)
    return data


def measure(args, repeats: int = 5, check: bool = True) -> dict:
    """The simulator and numpy on the same data, interleaved; a dict of figures (seconds,
    simulated µs per kernel, bytes, ``max_abs_err`` of the first run against the golden).

    Raises:
        AssertionError: an aclnn call fails, or the result differs from the float64 golden
            by more than 1e-4 of its largest |value| (a Zipf head index sums some thousand
            grad rows in fp32).
    """
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.fused_sparse_adam import (aclnnFusedSparseAdam,
                                             aclnnFusedSparseAdamGetWorkspaceSize)

    d = make_data(args.rows, args.dim, args.indices, args.zipf)
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()

    to_device = harness.to_device
    state = {k: to_device(d[k]) for k in ("var", "m", "v")}
    scalars = [to_device(np.array([x], np.float32)) for x in SCALARS]
    grad, indices = to_device(d["grad"]), to_device(d["indices"])
    dev = runtime.current_device()
    sim = {"runs": []}

    def sim_reset():                 # the operator updates var, m, v in place
        for k, t in state.items():
            acl.rt.memcpy(t.tensor_data, d[k].nbytes, acl.util.numpy_to_ptr(d[k]), d[k].nbytes,
                          aclnn.ACL_MEMCPY_HOST_TO_DEVICE)

    def sim_run():
        n_before = dev.profiles.total
        ws, executor, ret = aclnnFusedSparseAdamGetWorkspaceSize(
            state["var"], state["m"], state["v"], *scalars, grad, indices, False)
        assert ret == 0, acl.get_recent_err_msg()
        harness.second_phase(aclnnFusedSparseAdam, ws, executor, stream)
        sim["ws"] = ws
        sim["runs"].append(dev.profiles.since(n_before))

    work = {}

    def after_first():
        sim["peak"] = harness.peak()
        if check:
            from npusim.kernels.fused_sparse_adam.golden import fused_sparse_adam_golden
            want = fused_sparse_adam_golden(d["var"], d["m"], d["v"], *SCALARS, d["grad"],
                                            d["indices"])
            err = 0.0
            for k, w in zip(("var", "m", "v"), want):
                got = np.empty_like(d[k])
                acl.rt.memcpy(acl.util.numpy_to_ptr(got), got.nbytes, state[k].tensor_data,
                              got.nbytes, aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
                e = float(np.abs(got.astype(np.float64) - w).max())
                assert e <= 1e-4 * max(1.0, float(np.abs(w).max())), (k, e)
                err = max(err, e)
            sim["max_abs_err"] = err
        work.update({k: np.empty_like(d[k]) for k in ("var", "m", "v")})
        work["scratch"] = (np.empty_like(d["var"]), np.empty_like(d["var"]))

    def numpy_reset():
        for k in ("var", "m", "v"):
            np.copyto(work[k], d[k])

    def numpy_run():
        baselines.fused_sparse_adam_numpy(work["var"], work["m"], work["v"], *SCALARS,
                                          d["grad"], d["indices"], scratch=work["scratch"])

    times = harness.interleave({"sim": (sim_reset, sim_run), "numpy": (numpy_reset, numpy_run)},
                               repeats, after_first=after_first)
    profs = sim["runs"][int(np.argmin(times["sim"]))]
    sim_s, numpy_s = min(times["sim"]), harness.fastest(times["numpy"])
    nbytes = sum(d[k].nbytes for k in ("var", "m", "v", "grad", "indices"))
    return {
        "rows": args.rows, "dim": args.dim, "indices": args.indices, "zipf": args.zipf,
        "repeats": repeats, "unique_indices": int(np.unique(d["indices"]).size),
        "per_kernel_us": {p.op_name: round(p.duration_us, 3) for p in profs},
        "graph_us": sum(p.duration_us for p in profs),
        "sim_wall_s": sim_s, "sim_runs": times["sim"],
        "functional_s": sum(p.host_functional_s for p in profs),
        "timing_s": sum(p.host_timing_s for p in profs),
        "numpy_s": numpy_s, "numpy_runs": times["numpy"],
        "ratio_numpy": harness.ratio(sim_s, numpy_s),
        "peak_rss_bytes": sim["peak"], "device_plus_host_bytes": 2 * nbytes + sim["ws"],
        "max_abs_err": sim.get("max_abs_err"),
    }


def report(r: dict) -> str:
    err = "" if r["max_abs_err"] is None else f"{r['max_abs_err']:.3g}"
    return "\n".join([
        f"aclnnFusedSparseAdam fp32, Ascend910B1: var [{r['rows']}, {r['dim']}], "
        f"{r['indices']} Zipf(s={r['zipf']}) indices ({r['unique_indices']} distinct); "
        f"fastest of {r['repeats']} interleaved runs",
        f"  kernels                  {r['per_kernel_us']} (us); graph {r['graph_us']:.1f} us",
        f"  simulator host time      {r['sim_wall_s']:10.3f} s   (functional "
        f"{r['functional_s']:.3f} s, timing {r['timing_s']:.3f} s)",
        f"  numpy fp32 (add.at)      {r['numpy_s']:10.3f} s   -> ratio {r['ratio_numpy']:.2f}x",
        f"  peak resident memory     {r['peak_rss_bytes'] / 2**20:10.1f} MiB (device + host "
        f"arrays {r['device_plus_host_bytes'] / 2**20:.1f} MiB)",
        f"  max |sim - float64 golden| {err}"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50000)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--indices", type=int, default=16384)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved runs")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    harness.prepare(12 * args.rows * args.dim * 4)
    r = measure(args, args.repeats)
    print(report(r))
    harness.write_json(args.json, r)
    return r


if __name__ == "__main__":
    main()
