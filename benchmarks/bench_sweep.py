"""Benchmark: a 48-point core-count sweep of ApplyFusedEmaAdam, 2^20 fp32 elements.

Each point runs the operator through the aclnn API on Ascend910B1 limited to N vector
cores (N = 1 .. 48), checks it against the numpy golden and keeps its profile. The sweep
runs twice — serially in this process, then on a local process pool (``--jobs``, default
the machine's CPUs) — and the script prints both wall times, the speed-up of the parallel
run, and whether the two runs gave identical records (they must: the simulator is
deterministic). Target: the sweep finishes in under 60 s on a 2-core machine.

``--dask`` also runs it on a Dask ``LocalCluster`` of ``--jobs`` worker processes
(cluster start-up included in the time).

A second study, ``--own`` (on by default; ``--only own`` runs it alone): a 14-point sweep
(cores 1, 2, 4, 8, 16, 32, 48 x tiles of 2048 and 8192 halves) of a kernel of our own, 15
instructions per tile (DataCopy in, Cast to float, Muls, Adds, Abs, Maxs, Mins, Exp, Add,
Mul, Sqrt, Sub, Div, Cast back, DataCopy out) over 3 x 2^20 halves, run

* serially, functionally (the reference records);
* on ``--jobs`` processes, functionally (records must equal the serial ones);
* on ``--jobs`` processes, timing-only (``sweep(timing_only=True)``: the same simulated
  figures; target: 30 s or less with ``--jobs`` = the host's cores).

Run: ``python benchmarks/bench_sweep.py [--jobs N] [--points 48] [--plot FILE.png]
[--json FILE] [--dask] [--only ema|own]``
"""
from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import npusim
from npusim.ascendc import (Abs, Add, Adds, Cast, DataCopy, Div, Exp, GetBlockIdx, GetBlockNum,
                            GlobalTensor, Maxs, Mins, Mul, Muls, RoundMode, Sqrt, Sub, TPipe,
                            TPosition, TQue, float32, half)
from npusim_tools import sweep

#: The own study: 3 x 2^20 halves, 7 core counts x 2 tile lengths (elements).
OWN_ELEMENTS = 3 << 20
OWN_CORES = [1, 2, 4, 8, 16, 32, 48]
OWN_TILES = [2048, 8192]


def own_kernel(x, y, tile):
    """y = (sqrt(|clamp(2x + 1)| ) * e^(...) ...): 15 instructions per tile, double-buffered
    queues, one contiguous part of x per core."""
    pipe = TPipe()
    qin, qout = TQue(TPosition.VECIN, 2), TQue(TPosition.VECOUT, 2)
    pipe.InitBuffer(qin, 2, tile * 2)
    pipe.InitBuffer(qout, 2, tile * 2)
    w1, w2 = TQue(TPosition.VECCALC, 1), TQue(TPosition.VECCALC, 1)
    pipe.InitBuffer(w1, 1, tile * 4)
    pipe.InitBuffer(w2, 1, tile * 4)
    per = OWN_ELEMENTS // GetBlockNum()
    xg, yg = GlobalTensor(half), GlobalTensor(half)
    xg.SetGlobalBuffer(x + GetBlockIdx() * per * 2, per)
    yg.SetGlobalBuffer(y + GetBlockIdx() * per * 2, per)
    a, b = w1.AllocTensor(float32), w2.AllocTensor(float32)
    for i in range(per // tile):
        xl = qin.AllocTensor(half)
        DataCopy(xl, xg[i * tile], tile)
        qin.EnQue(xl)
        xl = qin.DeQue(half)
        Cast(a, xl, RoundMode.CAST_NONE, tile)
        qin.FreeTensor(xl)
        Muls(b, a, 2.0, tile)
        Adds(b, b, 1.0, tile)
        Abs(b, b, tile)
        Maxs(b, b, 0.5, tile)
        Mins(b, b, 4.0, tile)
        Exp(a, a, tile)
        Add(a, a, b, tile)
        Mul(a, a, b, tile)
        Sqrt(a, a, tile)
        Sub(a, a, b, tile)
        Div(a, a, b, tile)
        yl = qout.AllocTensor(half)
        Cast(yl, a, RoundMode.CAST_RINT, tile)
        qout.EnQue(yl)
        yl = qout.DeQue(half)
        DataCopy(yg[i * tile], yl, tile)
        qout.FreeTensor(yl)
    w1.FreeTensor(a)
    w2.FreeTensor(b)


def own_point(point: dict) -> dict:
    """One point of the own study (a module-level runner: picklable)."""
    soc = npusim.get_soc("Ascend910B1")
    gm = npusim.GlobalMemory(soc.memory_size)
    x_host = np.random.default_rng(0).standard_normal(OWN_ELEMENTS).astype(np.float16)
    x, y = gm.malloc(x_host.nbytes), gm.malloc(x_host.nbytes)
    gm.write(x, x_host)
    p = npusim.run_kernel(own_kernel, point["cores"], (x, y, point["tile"]), soc=soc, gm=gm,
                          name="own_elementwise")
    return npusim.sweeps.profile_record(p, soc)


def _children_cpu() -> float:
    """CPU seconds of this process's finished children (the pool's workers, once shut down)."""
    import resource
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def own_study(jobs: int) -> dict:
    """The own study's three runs: wall seconds, and the CPU seconds they took (on a host
    whose cores are free, a pool of ``jobs`` takes about CPU / jobs of wall time)."""
    axes = dict(cores=OWN_CORES, tile=OWN_TILES)
    t0, c0 = time.perf_counter(), time.process_time()
    serial = npusim.sweep(own_point, executor="serial", progress=False, **axes)
    serial_s, serial_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), _children_cpu()
    parallel = npusim.sweep(own_point, jobs=jobs, progress=False, **axes)
    parallel_s, parallel_cpu = time.perf_counter() - t0, _children_cpu() - c0
    t0, c0 = time.perf_counter(), _children_cpu()
    fast = npusim.sweep(own_point, jobs=jobs, progress=False, timing_only=True, **axes)
    fast_s, fast_cpu = time.perf_counter() - t0, _children_cpu() - c0
    return {"points": len(serial), "elements": OWN_ELEMENTS, "jobs": jobs,
            "host_cpus": os.cpu_count(), "serial_s": serial_s, "parallel_s": parallel_s,
            "parallel_timing_only_s": fast_s, "serial_cpu_s": serial_cpu,
            "parallel_cpu_s": parallel_cpu, "parallel_timing_only_cpu_s": fast_cpu,
            "identical": serial.records == parallel.records,
            "timing_only_identical": serial.records == fast.records,
            "errors": len(serial.errors) + len(parallel.errors) + len(fast.errors),
            "table": serial.table()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--points", type=int, default=48, help="cores 1 .. POINTS")
    parser.add_argument("--log2n", type=int, default=20)
    parser.add_argument("--plot", help="write the sweep's plot (PNG)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--dask", action="store_true", help="also run on a Dask LocalCluster")
    parser.add_argument("--only", choices=("ema", "own"), help="run one of the two studies")
    args = parser.parse_args(argv)
    figures = {}
    if args.only != "ema":
        own = figures["own"] = own_study(args.jobs)
        print(f"own 15-instruction element-wise kernel, {own['elements']} halves, Ascend910B1, "
              f"{own['points']} points (cores {OWN_CORES} x tiles {OWN_TILES}); host CPUs "
              f"{own['host_cpus']}")
        print(f"  serial, functional            {own['serial_s']:8.2f} s wall, "
              f"{own['serial_cpu_s']:7.2f} s CPU")
        print(f"  {args.jobs} processes, functional    {own['parallel_s']:8.2f} s wall, "
              f"{own['parallel_cpu_s']:7.2f} s CPU (identical records: {own['identical']})")
        print(f"  {args.jobs} processes, timing-only   {own['parallel_timing_only_s']:8.2f} s wall, "
              f"{own['parallel_timing_only_cpu_s']:7.2f} s CPU (identical records: "
              f"{own['timing_only_identical']}; target 30 s -> "
              f"{'met' if own['parallel_timing_only_s'] <= 30 else 'MISSED'}; CPU / jobs "
              f"{own['parallel_timing_only_cpu_s'] / args.jobs:.1f} s)")
        print(f"  failed points: {own['errors']}")
        print(own["table"])
        if args.only == "own":
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(figures, f, indent=2)
            return
    axes = dict(cores=list(range(1, args.points + 1)), shape=(1 << args.log2n,),
                dtype="float32", soc="Ascend910B1")

    t0 = time.perf_counter()
    serial = sweep("ApplyFusedEmaAdam", executor="serial", progress=False, **axes)
    serial_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    parallel = sweep("ApplyFusedEmaAdam", jobs=args.jobs, progress=False, **axes)
    parallel_s = time.perf_counter() - t0
    figures.update({"points": len(serial), "elements": 1 << args.log2n, "jobs": args.jobs,
               "serial_wall_s": serial_s, "parallel_wall_s": parallel_s,
               "speedup": serial_s / parallel_s,
               "identical": serial.records == parallel.records,
               "all_golden_ok": all(r.get("check") == "ok" for r in serial.records)})
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
