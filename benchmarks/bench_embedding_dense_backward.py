"""Benchmark: aclnnEmbeddingDenseBackward, grad [65536, 1024] fp32, Zipf-distributed indices
over 50000 rows, on Ascend910B1 (all cores, non-deterministic, no scaling, no padding).

It prints
* the simulated time (Task Duration, µs) of the EmbeddingDenseGradV2 kernel and of the
  whole graph (Sort, ZerosLike, EmbeddingDenseGradV2, ViewCopy; the small-dim path for
  dim <= 512), and the bandwidth each achieved;
* the simulator's host wall time for the aclnn call (first phase to synchronize) with its
  functional / timing split, next to what a user would otherwise run on the same arrays
  (baselines.py): fp32 numpy (``np.add.at`` on the flattened output, the fastest fp32 numpy
  way measured) and torch CPU (``torch.ops.aten.embedding_dense_backward``), timed in one
  process, interleaved (sim, numpy, torch, ...), the fastest of ``--repeats`` runs each;
  and the ratios (targets: at most 2x numpy at [65536, 1024], 8x at [16384, 64]);
* the peak resident memory of the simulator's run (read after its first run, before the
  baselines allocate) next to the device bytes plus host arrays, and the largest difference
  of the result from the float64 golden (the correctness check; not timed).

The indices follow a bounded Zipf law (rank r drawn with probability proportional to
1/r^s, s = ``--zipf``, default 1.0) over a random permutation of the 50000 rows [R: the
task names the distribution, not its exponent].

Run: ``python benchmarks/bench_embedding_dense_backward.py [--rows 65536] [--dim 1024]
[--weights 50000] [--zipf 1.0] [--repeats 5] [--json FILE]``
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines  # noqa: E402
import harness  # noqa: E402


def make_data(rows: int, dim: int, weights: int, zipf: float):
    """grad float32 [rows, dim] and int64 indices [rows] (Zipf over ``weights``), seeded."""
    rng = np.random.default_rng(0)
    p = 1.0 / np.arange(1, weights + 1, dtype=np.float64) ** zipf
    p /= p.sum()
    ranks = rng.choice(weights, size=rows, p=p)
    indices = rng.permutation(weights)[ranks].astype(np.int64)
    grad = rng.standard_normal((rows, dim), dtype=np.float32)
    return grad, indices


def warm_bytes(rows: int, weights: int = 50000, dim: int = 1024) -> int:
    """Bytes a measurement's process touches by the end of the simulator's first run."""
    return 4 * (rows + weights) * dim * 4


def measure(args, repeats: int = 5, with_baselines: bool = True, check: bool = True) -> dict:
    """The simulator and its baselines on the same data, interleaved.

    Args:
        args: namespace with ``rows, dim, weights, zipf`` and optionally ``max_cores`` (the
            device limited to that many vector cores through acl.init's JSON).
        repeats: interleaved rounds; with_baselines: time numpy and torch too (the blockDim
            sweep times the simulator alone); check: compare the first result with the
            float64 golden.

    Returns:
        A dict of figures: seconds (``sim_wall_s``, ``numpy_s``, ``torch_s`` fastest;
        ``*_runs`` all; None where not run or torch is missing), the best run's
        functional / timing split, simulated µs, bytes, ``max_abs_err``.

    Raises:
        AssertionError: an aclnn call fails or the result differs from the golden by more
            than the fp32 tolerance of the operator's tests (1e-4 of the largest |value|).
    """
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.embedding_dense_backward import (aclnnEmbeddingDenseBackward,
                                                    aclnnEmbeddingDenseBackwardGetWorkspaceSize)

    threads = harness.torch_threads()
    grad, indices = make_data(args.rows, args.dim, args.weights, args.zipf)
    max_cores = getattr(args, "max_cores", None)
    if max_cores is None:
        assert acl.init() == 0
    else:                     # the device limited to max_cores vector cores (acl.init JSON)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump({"npusim": {"soc": "Ascend910B1", "max_cores": max_cores}}, f)
        assert acl.init(f.name) == 0
    assert acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()

    to_device = harness.to_device
    g, i = to_device(grad), to_device(indices)
    out_host = np.zeros((args.weights, args.dim), np.float32)
    o = to_device(out_host)
    dev = runtime.current_device()
    sim = {"runs": []}

    def sim_run():            # the graph zeroes out itself (ZerosLike): no reset needed
        n_before = dev.profiles.total
        ws, executor, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(g, i, args.weights, -1,
                                                                       False, o)
        assert ret == 0, acl.get_recent_err_msg()
        harness.second_phase(aclnnEmbeddingDenseBackward, ws, executor, stream)
        sim["ws"], sim["path"] = ws, executor.path
        sim["runs"].append(dev.profiles.since(n_before))

    work = {}

    def after_first():
        sim["peak"] = harness.peak()
        if check:
            from npusim.kernels.embedding_dense_backward.golden import embedding_dense_backward_golden
            acl.rt.memcpy(acl.util.numpy_to_ptr(out_host), out_host.nbytes, o.tensor_data,
                          out_host.nbytes, aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
            ref = embedding_dense_backward_golden(grad, indices, args.weights, -1, False,
                                                  out_dtype=np.float64)
            err = float(np.abs(out_host - ref).max())
            assert err <= 1e-4 * max(1.0, float(np.abs(ref).max())), err
            sim["max_abs_err"] = err
        if with_baselines:
            work["out"] = np.empty((args.weights, args.dim), np.float32)

    def numpy_run():
        baselines.embedding_dense_backward_numpy(grad, indices, args.weights, out=work["out"])

    def torch_run():
        baselines.embedding_dense_backward_torch(grad, indices, args.weights)

    has_torch = threads is not None
    runners = {"sim": (None, sim_run)}
    if with_baselines:
        runners.update(numpy=(None, numpy_run), torch=(None, torch_run if has_torch else None))
    times = harness.interleave(harness.with_kept_replays(runners), repeats,
                               after_first=after_first)
    profs, kept = harness.fastest_sim_runs(times, sim["runs"])
    main = next(p for p in profs if p.op_name.startswith("EmbeddingDenseGrad"))
    total_us = sum(p.duration_us for p in profs)
    total_bytes = sum(p.bytes_read + p.bytes_written for p in profs)
    sim_s = min(times["sim"])
    numpy_s = harness.fastest(times.get("numpy", []))
    torch_s = harness.fastest(times.get("torch", []))
    return {
        "rows": args.rows, "dim": args.dim, "weights": args.weights, "zipf": args.zipf,
        "repeats": repeats, "unique_indices": int(np.unique(indices).size),
        "block_dim": main.block_dim, "path": sim["path"], "kernels": [p.op_name for p in profs],
        "kernel_name": main.op_name,
        "kernel_us": main.duration_us, "kernel_TBps": main.bandwidth / 1e12,
        "kernel_bound": f"{main.bound} ({main.bound_percent:.0f}%)",
        "graph_us": total_us, "graph_TBps": total_bytes / (total_us * 1e-6) / 1e12,
        "per_kernel_us": {p.op_name: round(p.duration_us, 3) for p in profs},
        "sim_wall_s": sim_s, "sim_runs": times["sim"],
        "functional_s": sum(p.host_functional_s for p in profs),
        "timing_s": sum(p.host_timing_s for p in profs),
        "numpy_s": numpy_s, "numpy_runs": times.get("numpy", []),
        "torch_s": torch_s, "torch_runs": times.get("torch", []),
        "torch_version": baselines.torch_version(), "torch_threads": threads,
        "ratio_numpy": harness.ratio(sim_s, numpy_s), "ratio_torch": harness.ratio(sim_s, torch_s),
        **harness.kept_figures(times, sum(p.host_timing_s for p in kept), numpy_s),
        "workspace_bytes": sim["ws"], "max_abs_err": sim.get("max_abs_err"),
        "peak_rss_bytes": sim["peak"],
        "device_plus_host_bytes": 2 * (grad.nbytes + indices.nbytes + out_host.nbytes)
        + sim["ws"],
    }


def target(rows: int, dim: int) -> float | None:
    """The host-time target against numpy: 2x at dim 1024 (the [65536, 1024] case), 8x on
    the small-dim path ([16384, 64])."""
    return 2.0 if dim > 512 else 8.0


def report(r: dict) -> str:
    torch_s = (f"{r['torch_s']:10.3f} s   -> ratio {r['ratio_torch']:.2f}x"
               if r["torch_s"] is not None else f"{harness.NOT_INSTALLED:>10}")
    return "\n".join([
        f"aclnnEmbeddingDenseBackward fp32, Ascend910B1: grad [{r['rows']}, {r['dim']}], "
        f"Zipf(s={r['zipf']}) indices over {r['weights']} rows ({r['unique_indices']} "
        f"distinct), path {r['path']}; fastest of {r['repeats']} interleaved runs",
        f"  kernels                  {', '.join(r['kernels'])}",
        f"  {r['kernel_name']:<24} "
        f"{r['kernel_us']:10.1f} us  {r['kernel_TBps']:.3f} TB/s (bound: {r['kernel_bound']})",
        f"  whole graph              {r['graph_us']:10.1f} us  {r['graph_TBps']:.3f} TB/s  "
        f"{r['per_kernel_us']}",
        f"  simulator host time      {r['sim_wall_s']:10.3f} s   (functional "
        f"{r['functional_s']:.3f} s, timing {r['timing_s']:.3f} s)",
        f"  repeated launch          {r['sim_kept_s']:10.3f} s   (same indices: kept replays, "
        f"timing {r['timing_kept_s']:.3f} s)",
        f"  numpy fp32 (flat add.at) {r['numpy_s']:10.3f} s   -> ratio {r['ratio_numpy']:.2f}x "
        f"(target <= {target(r['rows'], r['dim']):.0f}x), repeated launch "
        f"{harness.fmt_x(r['ratio_numpy_kept'])}",
        f"  torch (aten op)          {torch_s}",
        f"  peak resident memory     {r['peak_rss_bytes'] / 2**20:10.1f} MiB (device + host "
        f"arrays {r['device_plus_host_bytes'] / 2**20:.1f} MiB)",
        f"  max |sim - float64 golden| {r['max_abs_err']:.3g}"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=65536)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--weights", type=int, default=50000)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved runs")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    harness.prepare(warm_bytes(args.rows, args.weights, args.dim))
    r = measure(args, args.repeats)
    print(report(r))
    harness.write_json(args.json, r)
    return r


if __name__ == "__main__":
    main()
