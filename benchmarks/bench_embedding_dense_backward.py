"""Benchmark: aclnnEmbeddingDenseBackward, grad [65536, 1024] fp32, Zipf-distributed indices
over 50000 rows, on Ascend910B1 (all cores, non-deterministic, no scaling, no padding).

It prints
* the simulated time (Task Duration, µs) of the EmbeddingDenseGradV2 kernel and of the
  whole graph (Sort, ZerosLike, EmbeddingDenseGradV2, ViewCopy), and the bandwidth each
  achieved;
* the simulator's host wall time for the aclnn call (first phase to synchronize) with its
  functional / timing split, next to the numpy golden on the same data — the project golden
  (``embedding_dense_backward_golden``, float64 ``np.add.at``) and a plain float32
  ``np.add.at`` — and the ratios (target: at most 3x the golden).

The indices follow a bounded Zipf law (rank r drawn with probability proportional to
1/r^s, s = ``--zipf``, default 1.0) over a random permutation of the 50000 rows [R: the
task names the distribution, not its exponent]. Simulator and goldens run in separate
processes so their timings do not share caches or memory.

Run: ``python benchmarks/bench_embedding_dense_backward.py [--rows 65536] [--dim 1024]
[--weights 50000] [--zipf 1.0] [--json FILE]``
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np


def make_data(rows: int, dim: int, weights: int, zipf: float):
    rng = np.random.default_rng(0)
    p = 1.0 / np.arange(1, weights + 1, dtype=np.float64) ** zipf
    p /= p.sum()
    ranks = rng.choice(weights, size=rows, p=p)
    indices = rng.permutation(weights)[ranks].astype(np.int64)
    grad = rng.standard_normal((rows, dim), dtype=np.float32)
    return grad, indices


def run_golden(args) -> dict:
    """Host time of the goldens (best of 3: first-touch page faults excluded)."""
    from kernels.embedding_dense_backward.golden import (embedding_dense_backward_fp32_add_at,
                                                         embedding_dense_backward_golden)
    grad, indices = make_data(args.rows, args.dim, args.weights, args.zipf)
    res = {}
    for key, fn in (("golden_wall_s", lambda: embedding_dense_backward_golden(
                        grad, indices, args.weights, -1, False)),
                    ("add_at_fp32_wall_s", lambda: embedding_dense_backward_fp32_add_at(
                        grad, indices, args.weights))):
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t0)
        res[key] = best
    uniq = np.unique(indices)
    res["unique_indices"] = int(uniq.size)
    return res


def run_sim(args) -> dict:
    """The operator through the aclnn API on the simulator."""
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.embedding_dense_backward import (aclnnEmbeddingDenseBackward,
                                                    aclnnEmbeddingDenseBackwardGetWorkspaceSize)
    from kernels.embedding_dense_backward.golden import embedding_dense_backward_fp32_add_at

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

    def to_device(arr):
        ptr, ret = acl.rt.malloc(arr.nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0
        acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes,
                      aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
        shape = list(arr.shape)
        strides = [s // arr.itemsize for s in arr.strides]
        return aclnn.aclCreateTensor(shape, aclnn.numpy_to_acl_dtype(arr.dtype), strides, 0,
                                     aclnn.ACL_FORMAT_ND, shape, ptr)

    g, i = to_device(grad), to_device(indices)
    out_host = np.zeros((args.weights, args.dim), np.float32)
    o = to_device(out_host)
    dev = runtime.current_device()
    n_before = len(dev.profiles)
    t0 = time.perf_counter()
    ws, executor, ret = aclnnEmbeddingDenseBackwardGetWorkspaceSize(g, i, args.weights, -1,
                                                                   False, o)
    assert ret == 0, acl.get_recent_err_msg()
    wptr, _ = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert aclnnEmbeddingDenseBackward(wptr, ws, executor, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
    sim_s = time.perf_counter() - t0
    profs = dev.profiles[n_before:]
    main = next(p for p in profs if p.op_name == "EmbeddingDenseGradV2")
    acl.rt.memcpy(acl.util.numpy_to_ptr(out_host), out_host.nbytes, o.tensor_data,
                  out_host.nbytes, aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
    # the run's peak: before the check below allocates a reference and its differences
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ref = embedding_dense_backward_fp32_add_at(grad, indices, args.weights)
    err = float(np.abs(out_host - ref).max())
    total_us = sum(p.duration_us for p in profs)
    total_bytes = sum(p.bytes_read + p.bytes_written for p in profs)
    return {
        "rows": args.rows, "dim": args.dim, "weights": args.weights, "zipf": args.zipf,
        "block_dim": main.block_dim,
        "path": executor.path, "kernels": [p.op_name for p in profs],
        "kernel_us": main.duration_us, "kernel_TBps": main.bandwidth / 1e12,
        "kernel_bound": f"{main.bound} ({main.bound_percent:.0f}%)",
        "graph_us": total_us, "graph_TBps": total_bytes / (total_us * 1e-6) / 1e12,
        "per_kernel_us": {p.op_name: round(p.duration_us, 3) for p in profs},
        "sim_wall_s": sim_s,
        "functional_s": sum(p.host_functional_s for p in profs),
        "timing_s": sum(p.host_timing_s for p in profs),
        "workspace_bytes": ws, "max_abs_err_vs_fp32_add_at": err, "peak_rss_bytes": peak,
        "device_plus_host_bytes": 2 * (grad.nbytes + indices.nbytes + out_host.nbytes) + ws,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=65536)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--weights", type=int, default=50000)
    parser.add_argument("--zipf", type=float, default=1.0)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--child", choices=("sim", "golden"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps((run_sim if args.child == "sim" else run_golden)(args)))
        return

    def child(part):
        cmd = [sys.executable, __file__, "--child", part, "--rows", str(args.rows), "--dim",
               str(args.dim), "--weights", str(args.weights), "--zipf", str(args.zipf)]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    r = {**child("sim"), **child("golden")}
    r["ratio_golden"] = r["sim_wall_s"] / r["golden_wall_s"]
    r["ratio_add_at_fp32"] = r["sim_wall_s"] / r["add_at_fp32_wall_s"]
    print(f"aclnnEmbeddingDenseBackward fp32, Ascend910B1: grad [{r['rows']}, {r['dim']}], "
          f"Zipf(s={r['zipf']}) indices over {r['weights']} rows ({r['unique_indices']} "
          f"distinct), path {r['path']}")
    print(f"  kernels                  {', '.join(r['kernels'])}")
    print(f"  EmbeddingDenseGradV2     {r['kernel_us']:10.1f} us  {r['kernel_TBps']:.3f} TB/s "
          f"(bound: {r['kernel_bound']})")
    print(f"  whole graph              {r['graph_us']:10.1f} us  {r['graph_TBps']:.3f} TB/s  "
          f"{r['per_kernel_us']}")
    print(f"  simulator host time      {r['sim_wall_s']:10.3f} s   (functional "
          f"{r['functional_s']:.3f} s, timing {r['timing_s']:.3f} s)")
    print(f"  numpy golden (float64)   {r['golden_wall_s']:10.3f} s   -> ratio "
          f"{r['ratio_golden']:.2f}x (target <= 3x)")
    print(f"  np.add.at float32        {r['add_at_fp32_wall_s']:10.3f} s   -> ratio "
          f"{r['ratio_add_at_fp32']:.2f}x")
    print(f"  max |out - float32 add.at| {r['max_abs_err_vs_fp32_add_at']:.3g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
