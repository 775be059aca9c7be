"""Run pyasc's own test suites, unmodified, on npusim; print what passes and why the rest not.

Usage::

    python benchmarks/run_pyasc_tests.py PATH/TO/pyasc [-n 2] [--suite kernels ...] [--json OUT]

PATH is a checkout of the hicann/pyasc repository (its test code is not part of npusim).
The suites ``python/test/kernels`` and ``python/test/generalization`` are copied as they are
into a temporary folder whose ``conftest.py`` only does::

    import npusim.pyasc
    npusim.pyasc.enable()

and pytest runs them there with ``--import-mode=importlib`` (the suites share file
basenames), with ``NPUSIM_CHECKER_CROSS_BLOCK=warn`` in its environment
(``--cross-block error`` for the checker's default): the suites' vector kernels copy whole
512-element tiles over blocks of 1, 63 or 313 elements, so neighbouring blocks store the
same bytes (the same values) and the last block reads past its tensor, which the hardware
tolerates and the checker, in that mode, reports as warnings (docs/pyasc.md);
``--device-like`` runs the checker as the device runs (``NPUSIM_CHECKER_DEVICE_LIKE=1``). The generalization suite makes its tensors with ``torch.randn(...,
device="npu")``: it needs torch (``pip install '.[torch]'``), and skips itself without it.
The report gives the counts per suite and, for each test that did not pass, the first
line of its error; docs/pyasc.md lists the reasons measured.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

SUITES = ("kernels", "generalization")
CONFTEST = "import npusim.pyasc\nnpusim.pyasc.enable()\n"
ROOT = Path(__file__).resolve().parents[1]


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("E "):
            return line[1:].strip()
    lines = [x.strip() for x in (text or "").splitlines() if x.strip()]
    return lines[-1] if lines else ""


def run(pyasc: Path, suites, workers: int, cross_block: str = "warn",
        device_like: bool = False) -> dict:
    tests = pyasc / "python" / "test"
    if not tests.is_dir():
        raise SystemExit(f"{tests} is not a directory: give the root of a pyasc checkout")
    with tempfile.TemporaryDirectory(prefix="npusim_pyasc_tests_") as tmp:
        work = Path(tmp)
        for suite in suites:
            shutil.copytree(tests / suite, work / suite)
        (work / "conftest.py").write_text(CONFTEST)
        junit = work / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "--import-mode=importlib",
               "-p", "no:cacheprovider", f"--junitxml={junit}", *suites]
        if workers > 1:
            cmd[4:4] = ["-n", str(workers)]
        env = dict(os.environ)
        env["NPUSIM_CHECKER_CROSS_BLOCK"] = cross_block
        env["NPUSIM_CHECKER_DEVICE_LIKE"] = "1" if device_like else "0"
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep)
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
        if not junit.exists():
            raise SystemExit(f"pytest wrote no report:\n{proc.stdout}\n{proc.stderr}")
        cases = []
        for case in ET.parse(junit).iter("testcase"):
            name = f"{case.get('classname', '')}::{case.get('name')}"
            outcome, reason = "passed", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "failed"
                    reason = _first_line(child.text) or child.get("message", "")
                elif child.tag == "skipped":
                    outcome, reason = "skipped", child.get("message", "")
            cases.append({"test": name, "outcome": outcome, "reason": reason[:300]})
    return {"cases": cases, "summary": proc.stdout.strip().splitlines()[-1:]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pyasc", type=Path, help="a checkout of hicann/pyasc")
    parser.add_argument("--suite", action="append", choices=SUITES,
                        help="a suite to run (default: both)")
    parser.add_argument("-n", type=int, default=1, help="pytest-xdist workers")
    parser.add_argument("--json", help="also write the results as JSON")
    parser.add_argument("--cross-block", choices=("warn", "error"), default="warn",
                        help="how the checker reports blocks overlapping in GM "
                             "(NPUSIM_CHECKER_CROSS_BLOCK; default: warn, see above)")
    parser.add_argument("--device-like", action="store_true",
                        help="run the checker as the device runs (NPUSIM_CHECKER_DEVICE_LIKE=1: "
                             "what the hardware does not enforce becomes a warning; "
                             "docs/kernels.md)")
    args = parser.parse_args(argv)
    print(f"checker: NPUSIM_CHECKER_CROSS_BLOCK={args.cross_block} "
          f"NPUSIM_CHECKER_DEVICE_LIKE={int(args.device_like)}")
    result = run(args.pyasc, args.suite or list(SUITES), args.n, args.cross_block,
                 args.device_like)
    for suite in args.suite or SUITES:
        mine = [c for c in result["cases"] if suite in c["test"].split("::")[0].split(".")[:2]
                or c["test"].startswith(suite)]
        counts = Counter(c["outcome"] for c in mine)
        print(f"{suite}: {counts['passed']} passed, {counts['failed']} failed, "
              f"{counts['skipped']} skipped")
        for c in mine:
            if c["outcome"] != "passed":
                print(f"  {c['outcome'].upper()} {c['test']}: {c['reason']}")
    print("pytest:", *result["summary"])
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
