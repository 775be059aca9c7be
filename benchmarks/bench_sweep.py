"""Benchmark: a 48-point core-count sweep of ApplyFusedEmaAdam, 2^20 fp32 elements.

Each point runs the operator through the aclnn API on Ascend910B1 limited to N vector
cores (N = 1 .. 48), checks it against the numpy golden and keeps its profile. The sweep
runs twice — serially in this process, then on a local process pool (``--jobs``, default
the machine's CPUs) — and the script prints both wall times, the speed-up of the parallel
run, and whether the two runs gave identical records (they must: the simulator is
deterministic). Target: the sweep finishes in under 60 s on a 2-core machine.

``--dask`` also runs it on a Dask ``LocalCluster`` of ``--jobs`` worker processes
(cluster start-up included in the time).

Run: ``python benchmarks/bench_sweep.py [--jobs N] [--points 48] [--plot FILE.png]
[--json FILE] [--dask]``
"""
from __future__ import annotations

import argparse
import json
import os
import time

from npusim_tools import sweep


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--points", type=int, default=48, help="cores 1 .. POINTS")
    parser.add_argument("--log2n", type=int, default=20)
    parser.add_argument("--plot", help="write the sweep's plot (PNG)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--dask", action="store_true", help="also run on a Dask LocalCluster")
    args = parser.parse_args(argv)
    axes = dict(cores=list(range(1, args.points + 1)), shape=(1 << args.log2n,),
                dtype="float32", soc="Ascend910B1")

    t0 = time.perf_counter()
    serial = sweep("ApplyFusedEmaAdam", executor="serial", progress=False, **axes)
    serial_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    parallel = sweep("ApplyFusedEmaAdam", jobs=args.jobs, progress=False, **axes)
    parallel_s = time.perf_counter() - t0
    figures = {"points": len(serial), "elements": 1 << args.log2n, "jobs": args.jobs,
               "serial_wall_s": serial_s, "parallel_wall_s": parallel_s,
               "speedup": serial_s / parallel_s,
               "identical": serial.records == parallel.records,
               "all_golden_ok": all(r.get("check") == "ok" for r in serial.records)}
    if args.dask:
        from dask.distributed import Client, LocalCluster
        t0 = time.perf_counter()
        with LocalCluster(n_workers=args.jobs, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            on_dask = sweep("ApplyFusedEmaAdam", executor=client, progress=False, **axes)
        figures["dask_wall_s"] = time.perf_counter() - t0
        figures["dask_identical"] = on_dask.records == serial.records

    first, last = serial.records[0], serial.records[-1]
    print(f"ApplyFusedEmaAdam fp32, 2^{args.log2n} elements, Ascend910B1, cores 1..{args.points}")
    print(f"  simulated time: {first['duration_us']:.1f} us on 1 core, "
          f"{last['duration_us']:.1f} us "
          f"on {last['cores']} (speed-up {last['speedup']:.1f}x; HBM floor "
          f"{last['hbm_floor_us']:.1f} us; bound at {last['cores']}: {last['bound']} "
          f"{last['bound_percent']:.0f}%)")
    print(f"  serial sweep     {serial_s:8.2f} s")
    print(f"  parallel sweep   {parallel_s:8.2f} s  ({args.jobs} processes): speed-up "
          f"{figures['speedup']:.2f}x; identical records: {figures['identical']}")
    if args.dask:
        print(f"  dask sweep       {figures['dask_wall_s']:8.2f} s  (LocalCluster of {args.jobs} "
              f"workers, start-up included); identical records: {figures['dask_identical']}")
    print(f"  golden checks: {'all ok' if figures['all_golden_ok'] else 'FAILURES'}")
    print(f"  target: under 60 s -> {'met' if max(serial_s, parallel_s) < 60 else 'MISSED'}")
    if args.plot:
        serial.plot(args.plot)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
