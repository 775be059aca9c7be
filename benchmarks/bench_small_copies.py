"""Benchmark: a launch made of many small copies, the DataCopy best practice's scenario U1
(examples/data_copy_study.py: a half [12288, 12288] matrix read GM -> UB in [1, 64] tiles,
128 B per DataCopyPad, by 48 AIV blocks: 49,152 copies per block, 2.4 million in all).

Prints, at ``--scale`` (the study's scaling: each block's rows and the columns scaled, so
the copies scale by ``scale``^2), the host CPU seconds of the launch's functional run and
of its timing replay, apart, and per copy, with the simulated Task Duration (which a
scale other than 1 does not compare with msprof). CPU seconds (``resource.getrusage``),
not wall time: the figures hold on a host shared with other work.

Run: ``python benchmarks/bench_small_copies.py [--scale 0.25] [--case U1]``; ``--scale 1``
is the study's full U1 (a few minutes of host time, ~2 GB peak).
"""
from __future__ import annotations

import argparse
import importlib.util
import resource
from pathlib import Path

from npusim import launch

ROOT = Path(__file__).resolve().parents[1]


def _study():
    spec = importlib.util.spec_from_file_location(
        "data_copy_study", ROOT / "examples" / "data_copy_study.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def measure(case: str = "U1", scale: float = 0.25) -> dict:
    """The figures of one run of ``case`` at ``scale``: host CPU seconds of the launch
    (functional run and replay apart), copies in all, Task Duration (µs)."""
    study = _study()
    replay = [0.0]
    real = launch.simulate

    def timed(*a, **k):
        t = _cpu()
        try:
            return real(*a, **k)
        finally:
            replay[0] += _cpu() - t

    launch.simulate = timed
    try:
        t = _cpu()
        fig = study.run_scenario(case, scale)
        total = _cpu() - t
    finally:
        launch.simulate = real
    copies = fig["copies"] * fig["blockDim"]
    return dict(case=case, scale=scale, copies=copies, cpu_s=total, replay_s=replay[0],
                functional_s=total - replay[0], task_duration_us=fig["task_duration_us"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", default="U1")
    parser.add_argument("--scale", type=float, default=0.25)
    args = parser.parse_args(argv)
    f = measure(args.case, args.scale)
    print(f"{f['case']} at scale {f['scale']}: {f['copies']} copies, Task Duration "
          f"{f['task_duration_us']:.3f} us")
    print(f"  host CPU {f['cpu_s']:.2f} s: functional run (with the matrix's setup) "
          f"{f['functional_s']:.2f} s, replay {f['replay_s']:.2f} s; "
          f"{1e6 * f['cpu_s'] / f['copies']:.1f} us per copy")
    return f


if __name__ == "__main__":
    main()
