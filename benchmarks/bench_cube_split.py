"""Benchmark: where the host time of the basic-API cube kernel's launch goes
(:func:`bench_cube_kernel.cube_matmul`, fp16 N^3 on 24 AIC of an Ascend910B2).

Each part is the process's CPU time inside it over one launch (the fastest of
``--repeats`` launches, after one launch that warms numba's cache and the lockstep
grouping; kept replays off, so every launch replays its timing):

* ``steps``: Mmad's step sums (``step_sums_numba.mmad_fractals_fused``, the compiled loop
  with its float64 operand gathering; numpy's rendering with ``NPUSIM_NUMBA=0`` is not
  split out: 0, the sums counted in ``Mmad own``);
* ``Mmad own``: the rest of Mmad (checks, the checker's reads and write, the NaN pass, the
  records);
* ``LoadData``, ``DataCopy`` (the ND -> NZ copies GM -> L1), ``Fixpipe``, ``flags``
  (SetFlag/WaitFlag): each instruction whole, its checker work included;
* ``replay``: the timing replay (:func:`npusim.timing.simulate`);
* ``rest``: the kernel's own Python, the lockstep engine, the launch.

``outside`` is the launch less ``steps``. Printed with C's sha256, the simulated time and
a digest of every core's per-pipe busy time, which a change of the host code must leave
as they are. Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_cube_split.py
[--sizes 1024,2048] [--repeats 3]``.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_cube_kernel as kernel_bench  # noqa: E402

from npusim import launch, run_kernel, timing  # noqa: E402
from npusim.ascendc import KernelMetaType  # noqa: E402
from npusim.ascendc.cube import mmad as _mmad  # noqa: E402

PARTS = ("DataCopy", "LoadData", "Mmad", "Fixpipe", "SetFlag", "WaitFlag")


def _timed(acc: dict, key: str, fn):
    def wrapper(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[key] = acc.get(key, 0.0) + time.process_time() - t0
    return wrapper


def measure(n: int, repeats: int) -> dict:
    acc: dict = {}
    saved = [(kernel_bench, p, getattr(kernel_bench, p)) for p in PARTS]
    saved += [(_mmad._fused, "mmad_fractals_fused", _mmad._fused.mmad_fractals_fused),
              (launch, "simulate", launch.simulate), (timing, "REPLAY_MEMO", timing.REPLAY_MEMO)]
    for mod, name, fn in saved[:len(PARTS)]:
        setattr(mod, name, _timed(acc, name, fn))
    _mmad._fused.mmad_fractals_fused = _timed(acc, "steps", saved[-3][2])
    launch.simulate = _timed(acc, "replay", saved[-2][2])
    timing.REPLAY_MEMO = False
    try:
        soc, block_dim, _, _, gm, pa, pb, pc = kernel_bench.operands(n)

        def run():
            return run_kernel(kernel_bench.cube_matmul, block_dim, (pa, pb, pc, n, block_dim),
                              soc=soc, gm=gm, kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY,
                              name="cube_matmul")
        run()                                           # warm: numba's cache, the grouping
        best = None
        for _ in range(repeats):
            acc.clear()
            t0 = time.process_time()
            prof = run()
            row = dict(acc, total=time.process_time() - t0)
            if best is None or row["total"] < best["total"]:
                best = row
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)
    c = np.frombuffer(gm.read(pc, n * n * 4), np.float32)
    pipes = repr((prof.duration_us, {k: v.tolist() for k, v in prof.core_pipe_time_us.items()},
                  prof.pipe_time_us))
    best["flags"] = best.pop("SetFlag", 0.0) + best.pop("WaitFlag", 0.0)
    best.setdefault("steps", 0.0)          # NPUSIM_NUMBA=0: the sums stay in "Mmad own"
    best["Mmad own"] = best.pop("Mmad") - best["steps"]
    best["outside"] = best["total"] - best["steps"]
    best["rest"] = best["outside"] - sum(best[k] for k in ("Mmad own", "LoadData", "DataCopy",
                                                            "Fixpipe", "flags", "replay"))
    best.update(n=n, kernel_us=prof.duration_us,
                c_sha256=hashlib.sha256(c.tobytes()).hexdigest()[:16],
                pipes_sha256=hashlib.sha256(pipes.encode()).hexdigest()[:16])
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,2048", help="comma-separated N of N^3")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    cols = ("total", "steps", "outside", "Mmad own", "LoadData", "DataCopy", "Fixpipe", "flags",
            "replay", "rest")
    print("| N^3 | " + " | ".join(f"{c} (s)" for c in cols) + " | simulated (us) | C sha256 | "
          "pipes sha256 |")
    print("|---" * (len(cols) + 4) + "|")
    rows = []
    for n in map(int, args.sizes.split(",")):
        r = measure(n, args.repeats)
        rows.append(r)
        print(f"| {n} | " + " | ".join(f"{r[c]:.2f}" for c in cols)
              + f" | {r['kernel_us']:.3f} | {r['c_sha256']} | {r['pipes_sha256']} |", flush=True)
    return rows


if __name__ == "__main__":
    main()
