"""Benchmark: the cube path's host time with BLAS on its default threads and on one thread,
while another process keeps the other cores busy.

The Mmad of every fractal step is one small float64 matrix product
(npusim/ascendc/cube/mmad.py); OpenBLAS's default is a thread per core. On a host whose
other cores are busy (other jobs, a CI runner's neighbours), each product waits for its
helper threads to be scheduled. npusim therefore runs BLAS on one thread during launches
(npusim/blas_threads.py; ``NPUSIM_BLAS_THREADS``). This prints the host time of one
aclnnMatmul (fp16, M x K x N = 1024 x 2816 x 1024 by default, Ascend910B2) with
``NPUSIM_BLAS_THREADS=default`` (the library's threads) and ``=1``, each under the same
load: ``os.cpu_count() - 1`` busy-loop processes (bounded: they stop after --load-s
seconds or when the benchmark ends).

Printed: per setting, the BLAS threads in effect during the launch, the wall time of the
launch (first phase excluded), its functional run and its timing replay; then the ratio.
The simulated result is checked to be bit-identical between the two settings.

Run: ``python benchmarks/bench_blas_threads.py [--m 1024 --k 2816 --n 1024]
[--load-s 600]``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import harness  # noqa: E402

SOC = "Ascend910B2"
BUSY = "import time\nend = time.time() + {s}\nwhile time.time() < end:\n    pass\n"


def run(a: np.ndarray, b: np.ndarray, setting: str) -> dict:
    """One aclnnMatmul of ``a @ b`` with ``NPUSIM_BLAS_THREADS=setting``; host times and
    the result."""
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.matmul import aclnnMatmul, aclnnMatmulGetWorkspaceSize
    from npusim_tools.registry import acl_session
    from threadpoolctl import threadpool_info

    os.environ["NPUSIM_BLAS_THREADS"] = setting
    with acl_session({"npusim": {"soc": SOC}}) as stream:
        dev = runtime.current_device()
        at, bt = harness.to_device(a), harness.to_device(b)
        out = harness.to_device(np.zeros((a.shape[0], b.shape[1]), a.dtype))
        ws, ex, ret = aclnnMatmulGetWorkspaceSize(at, bt, out, 0)
        assert ret == 0, acl.get_recent_err_msg()
        from npusim.blas_threads import launch_blas_threads
        with launch_blas_threads():
            threads = sorted({lib["num_threads"] for lib in threadpool_info()
                              if lib["user_api"] == "blas"})
        t0 = time.perf_counter()
        harness.second_phase(aclnnMatmul, ws, ex, stream)
        wall = time.perf_counter() - t0
        prof = dev.profiles[-1]
        c = np.empty((a.shape[0], b.shape[1]), a.dtype)
        acl.rt.memcpy(acl.util.numpy_to_ptr(c), c.nbytes, out.tensor_data, c.nbytes,
                      aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
    return {"threads": threads, "wall_s": wall, "functional_s": prof.host_functional_s,
            "timing_s": prof.host_timing_s, "result": c}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=1024)
    ap.add_argument("--k", type=int, default=2816)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--load-s", type=float, default=600.0,
                    help="the busy loops' own time limit, in seconds")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((args.m, args.k), dtype=np.float32).astype(np.float16)
    b = rng.standard_normal((args.k, args.n), dtype=np.float32).astype(np.float16)
    loaders = max(1, (os.cpu_count() or 2) - 1)
    print(f"aclnnMatmul fp16 {args.m} x {args.k} x {args.n} on {SOC}; host: "
          f"{os.cpu_count()} cores, {loaders} busy-loop process(es) running")
    busy = [subprocess.Popen([sys.executable, "-c", BUSY.format(s=args.load_s)])
            for _ in range(loaders)]
    try:
        time.sleep(0.5)
        res = {}
        for setting in ("default", "1"):
            r = res[setting] = run(a, b, setting)
            print(f"  NPUSIM_BLAS_THREADS={setting:7s} BLAS threads {r['threads']}: "
                  f"launch {r['wall_s']:7.2f} s (functional {r['functional_s']:7.2f} s, "
                  f"timing replay {r['timing_s']:5.2f} s)", flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    same = np.array_equal(res["default"]["result"].view(np.uint16),
                          res["1"]["result"].view(np.uint16))
    print(f"  default / 1 thread: {res['default']['wall_s'] / res['1']['wall_s']:.1f}x; "
          f"results bit-identical: {same}")


if __name__ == "__main__":
    main()
