"""aclnnAdd through its C++ (Ascend C) kernel against its Python kernel and numpy: host time
of the whole operator call (both phases and the synchronised launch), simulated Task
Duration, and whether the outputs are the same bytes.

    NPUSIM_ASC_DEVKIT=/path/to/asc-devkit python benchmarks/bench_cpp_add.py [--n 1048576]
        [--dtype float16] [--repeats 3]

Runs interleave (python, cpp, numpy, python, ...); the fastest of each is printed. The C++
kernel's first build (tens of seconds) happens before the timed runs. Without a compiler or
headers it prints why and exits 0.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--dtype", default="float16")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)

    import aclnn
    from aclnn import acl, kernel_impl, runtime
    from aclnn.ops.add import aclnnAdd, aclnnAddGetWorkspaceSize
    from aclnn_helpers import from_device, open_stream, to_device
    from npusim.cpp import CppBuildError
    from npusim.kernels.add import cpp as add_cpp

    try:
        t0 = time.perf_counter()
        k = add_cpp.kernel()
        build_s = time.perf_counter() - t0
    except CppBuildError as exc:
        print(f"skipped: {exc}")
        if args.json:
            Path(args.json).write_text(json.dumps({"skipped": str(exc)}))
        return 0
    stream = open_stream(Path(tempfile.mkdtemp()))
    dt = np.dtype(args.dtype)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(args.n).astype(dt)
    b = rng.standard_normal(args.n).astype(dt)
    x, y = to_device(a), to_device(b)
    alpha = aclnn.aclCreateScalar(1.0, aclnn.ACL_FLOAT)
    best = {"python": np.inf, "cpp": np.inf, "numpy": np.inf}
    task, outs = {}, {}
    for _ in range(args.repeats):
        for impl in ("python", "cpp"):
            kernel_impl.set_kernel_impl("Add", impl)
            out = to_device(np.zeros(args.n, dt))
            t0 = time.perf_counter()
            ws, ex, ret = aclnnAddGetWorkspaceSize(x, y, alpha, out)
            assert ret == 0 and ex.kernel_impl == impl, acl.get_recent_err_msg()
            assert aclnnAdd(0, ws, ex, stream) == 0
            assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
            best[impl] = min(best[impl], time.perf_counter() - t0)
            task[impl] = runtime.current_device().profiles[-1].duration_us
            outs[impl] = from_device(out, dt)
        t0 = time.perf_counter()
        np.add(a, b)
        best["numpy"] = min(best["numpy"], time.perf_counter() - t0)
    same = outs["python"].tobytes() == outs["cpp"].tobytes()
    print(f"aclnnAdd {dt.name} x {args.n}, Ascend910B1, blockDim {ex.tiling.blockDim}; "
          f"fastest of {args.repeats} interleaved runs; C++ build "
          f"{'cached' if k.build.cached else f'{build_s:.1f} s'}\n")
    print("| kernel | host (s) | host / numpy | Task Duration (us) |")
    print("|---|---|---|---|")
    for impl, label in (("python", "Python (kernels/add/kernel.py)"),
                        ("cpp", "C++ (kernels/add/add_kernel.cpp)")):
        print(f"| {label} | {best[impl]:.3f} | {best[impl] / best['numpy']:.1f}x | "
              f"{task[impl]:.3f} |")
    print(f"| numpy {dt.name} add | {best['numpy']:.4f} | 1x | - |")
    print(f"\nsame output bytes: {same}; Task Duration C++ - Python: "
          f"{task['cpp'] - task['python']:+.3f} us")
    if args.json:
        Path(args.json).write_text(json.dumps({"host_s": best, "task_us": task, "same": same,
                                               "block_dim": ex.tiling.blockDim}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
