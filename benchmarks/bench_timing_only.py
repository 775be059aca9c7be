"""Benchmark: timing-only launches against functional ones (npusim.ascendc.timing_only).

Runs each case through the aclnn API on a fresh Ascend910B1 runtime, functionally and
timing-only (the ``"timing_only"`` acl.init key), interleaved, ``--repeats`` times each
after one warm-up of each, and prints the fastest host wall time of each mode, the ratio
(target: timing-only at least 5x faster), the simulated Task Duration of both (they must be
equal: the timing is the functional run's) and the host seconds of the launches' functional
part and replay.

Cases:

* ``aclnnSoftmax`` over the last dim of a ``--rows`` x ``--cols`` fp16 matrix (default
  8192 x 4096, the bench_softmax_rms_norm.py case): Cast, reductions, Exp, the row maximum
  and sum read with GetValue, on 48 AIVs;
* ``aclnnMatmul`` fp16 ``--mm`` cubed (default 2048): the Matmul API on 24 AICs, static L1/L0
  tiles, Mmad per base block.

``OPENBLAS_NUM_THREADS`` is left as the environment sets it (the simulator runs BLAS on one
thread during a launch anyway: npusim.blas_threads).

Run: ``python benchmarks/bench_timing_only.py [--rows 8192] [--cols 4096] [--mm 2048]
[--repeats 2] [--json FILE]``
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from npusim_tools import registry  # noqa: E402


def _run(entry, case, timing_only: bool):
    t0 = time.perf_counter()
    res = registry.run_aclnn(entry, case, timing_only=timing_only)
    wall = time.perf_counter() - t0
    return wall, res


def measure(op: str, shape: tuple, dtype: str, repeats: int) -> dict:
    """Fastest wall time of each mode (interleaved), their simulated durations, and the
    functional run's golden check."""
    entry = registry.get(op)
    case = registry.make_case(entry, shape, dtype)
    walls = {False: [], True: []}
    results = {}
    for i in range(repeats + 1):                 # the first of each is a warm-up
        for mode in (False, True):
            wall, res = _run(entry, case, mode)
            if i:
                walls[mode].append(wall)
            results[mode] = res
    f, t = results[False], results[True]
    check = registry.check(entry, case, f.outputs)["check"]
    return {
        "op": op, "shape": list(shape), "dtype": dtype,
        "functional_s": min(walls[False]), "timing_only_s": min(walls[True]),
        "speedup": min(walls[False]) / min(walls[True]),
        "functional_launch_s": [round(p.host_functional_s, 3) for p in f.profiles],
        "timing_only_launch_s": [round(p.host_functional_s, 3) for p in t.profiles],
        "replay_s": [round(p.host_timing_s, 3) for p in t.profiles],
        "duration_us": [p.duration_us for p in f.profiles],
        "same_timing": [p.duration_us for p in f.profiles] == [p.duration_us for p in t.profiles]
        and [p.warnings for p in f.profiles] == [p.warnings for p in t.profiles],
        "golden": check,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--mm", type=int, default=2048, help="Matmul M = N = K")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    cases = [("Softmax", (args.rows, args.cols), "float16"),
             ("Matmul", (args.mm, args.mm, args.mm), "float16")]
    rows = []
    for op, shape, dtype in cases:
        r = measure(op, shape, dtype, args.repeats)
        rows.append(r)
        dims = "x".join(map(str, shape))
        print(f"aclnn{op} {dims} {dtype}: functional {r['functional_s']:.2f} s, timing-only "
              f"{r['timing_only_s']:.2f} s -> {r['speedup']:.1f}x "
              f"({'met' if r['speedup'] >= 5 else 'MISSED'}: target 5x)")
        print(f"  simulated {', '.join(f'{d:.1f}' for d in r['duration_us'])} us in both modes: "
              f"{r['same_timing']}; golden (functional run): {r['golden']}")
        print(f"  launches' host s: functional {r['functional_launch_s']}, timing-only "
              f"{r['timing_only_launch_s']} + replay {r['replay_s']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
