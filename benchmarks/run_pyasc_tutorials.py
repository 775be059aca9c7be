"""Run pyasc's five tutorials, unmodified, on npusim; report pass/fail, profiles and times.

Usage::

    python benchmarks/run_pyasc_tutorials.py PATH/TO/pyasc [--soc Ascend910B1] [--json OUT]

PATH is a checkout of the hicann/pyasc repository, or its ``python/tutorials`` directory
(the tutorials' code is not part of npusim). Each tutorial runs as ``__main__``, as
``npusim pyasc`` runs it, and passes when its own asserts pass. For each launch the report
gives the simulated profile (msprof-style) and the host-time split between pyasc's front end
(code generation and passes) and npusim (copies, the kernel's run, the timing replay);
budgets, on the launches' host time (front end + npusim, not the script's imports
of torch and pyasc): the Add tutorials under 2 s, the matmul tutorials under 30 s.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

TUTORIALS = [("01_add", "add.py", 2.0), ("02_add_framework", "add_framework.py", 2.0),
             ("03_matmul_mix", "matmul_mix.py", 30.0),
             ("04_matmul_cube_only", "matmul_cube_only.py", 30.0),
             ("05_matmul_leakyrelu", "matmul_leakyrelu.py", 30.0)]


def run_one(script: Path, soc: str) -> dict:
    import npusim.pyasc as pyasc
    t0 = time.perf_counter()
    try:
        pyasc.run_script(str(script), soc=soc)
        status, error = "pass", None
    except Exception as exc:            # a failed assert, an unsupported API, a checker finding
        status = "fail"
        error = f"{type(exc).__name__}: {exc}".splitlines()[0]
        tb = traceback.extract_tb(exc.__traceback__)
        where = [f for f in tb if f.filename == str(script)]
        if where:
            error += f" (at {script.name}:{where[-1].lineno})"
    wall = time.perf_counter() - t0
    launches = pyasc.launches()
    pyasc.disable()
    return {"status": status, "error": error, "wall_s": wall,
            "frontend_s": sum(r.frontend_s for r in launches),
            "npusim_s": sum(r.npusim_s for r in launches),
            "report": pyasc.report(launches),
            "launches": [{"name": r.name, "block_dim": r.block_dim,
                          "kernel_type": r.kernel_type.name,
                          "duration_us": r.profile.duration_us if r.profile else None,
                          "frontend_s": r.frontend_s, "npusim_s": r.npusim_s}
                         for r in launches]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pyasc", help="a checkout of hicann/pyasc, or its python/tutorials")
    parser.add_argument("--soc", default="Ascend910B1")
    parser.add_argument("--json", help="also write the results as JSON")
    args = parser.parse_args(argv)
    root = Path(args.pyasc)
    if not (root / TUTORIALS[0][0]).is_dir():      # a checkout rather than its tutorials
        root = root / "python" / "tutorials"
    if not root.is_dir():
        parser.error(f"{root} is not a directory: give the root of a pyasc checkout or its "
                     "python/tutorials folder")
    results = {}
    for folder, script, budget in TUTORIALS:
        path = root / folder / script
        if not path.exists():
            results[folder] = {"status": "missing", "error": f"{path} not found"}
            print(f"{folder}: MISSING ({path})")
            continue
        res = results[folder] = run_one(path, args.soc)
        res["budget_s"] = budget
        host = res["frontend_s"] + res["npusim_s"]      # the launches' host time (no imports)
        over = "" if host <= budget else f"  OVER the {budget:.0f} s budget"
        print(f"{folder}: {res['status'].upper()}: launches {host:.3f} s of host time (pyasc "
              f"front end {res['frontend_s']:.3f} s, npusim {res['npusim_s']:.3f} s); script "
              f"{res['wall_s']:.2f} s with its imports{over}")
        if res["error"]:
            print(f"  {res['error']}")
        if res["report"]:
            print("  " + res["report"].replace("\n", "\n  "))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    passed = sum(r["status"] == "pass" for r in results.values())
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
