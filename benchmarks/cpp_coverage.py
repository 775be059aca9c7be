"""asc-devkit's Atlas A2 C++ samples on npusim: compiled / ran / correct, written to
docs/cpp_coverage.md.

    NPUSIM_ASC_DEVKIT=/path/to/asc-devkit python benchmarks/cpp_coverage.py \
        [--jsonl results.jsonl] [--only SUBSTRING ...] [--write docs/cpp_coverage.md] \
        [--python /path/to/python-with-tensorflow]

Each sample runs in a child process (``python -m npusim.cpp.samples DIR``: a crash of one
sample's C++ code cannot end the run) with the steps of its README (npusim.cpp.samples).
Results are appended to ``--jsonl`` as they come, and samples already there are skipped, so
an interrupted run resumes. Builds are cached (~/.cache/npusim/cpp).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from npusim.cpp import builder, samples


def run_one(d: Path, timeout: float) -> dict:
    try:
        r = subprocess.run([sys.executable, "-m", "npusim.cpp.samples", str(d)],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"name": str(d), "reason": f"timeout after {timeout:.0f} s"}
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("{\"name\"")]
    if lines:
        return json.loads(lines[-1])
    errors = [ln for ln in r.stderr.splitlines() if "[ERROR]" in ln]
    tail = errors[-1].rsplit("]", 1)[-1].strip() if errors else \
        (r.stderr.strip().splitlines() or [""])[-1]
    import signal
    how = (signal.Signals(-r.returncode).name if r.returncode < 0 else f"status {r.returncode}")
    return {"name": str(d), "compiled": True,
            "reason": f"run: the process ended ({how}) {tail[:160]}".strip()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", default="cpp_coverage.jsonl")
    ap.add_argument("--only", nargs="*", default=())
    ap.add_argument("--write", help="the Markdown file to write (docs/cpp_coverage.md)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--earlier", help="a file of sample folders whose records come from an "
                    "earlier run (marked in the page)")
    ap.add_argument("--python", help="the Python that runs the samples' own gen_data.py and "
                    "verify_result.py (NPUSIM_SAMPLE_PYTHON; e.g. a venv with tensorflow, which "
                    "two samples' gen_data.py import); default: this one")
    args = ap.parse_args()
    if args.python:
        os.environ["NPUSIM_SAMPLE_PYTHON"] = args.python
    devkit = builder.find_devkit()
    found = samples.find_samples(devkit)
    done = {}
    if os.path.exists(args.jsonl):
        for line in open(args.jsonl):
            rec = json.loads(line)
            done[rec["name"].split(" (")[0]] = rec
    with open(args.jsonl, "a") as out:
        for d in found:
            if args.only and not any((k == str(d)) if os.path.isdir(k) else (k in str(d))
                                     for k in args.only):     # a folder: that sample alone
                continue
            if str(d) in done:
                continue
            rec = run_one(d, args.timeout)
            done[str(d)] = rec
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(f"{rec.get('correct', False)!s:5} {d.relative_to(devkit)}  {rec.get('reason', '')}",
                  flush=True)
    if args.write:
        results = [samples.SampleResult(**{k: v for k, v in done[str(d)].items()
                                           if k in samples.SampleResult.__dataclass_fields__})
                   for d in found if str(d) in done]
        untried = [(d, builder.kernel_core(samples.sources(d)[0].read_text(errors="replace")))
                   for d in found if str(d) not in done]
        earlier = frozenset(open(args.earlier).read().split()) if args.earlier else frozenset()
        Path(args.write).write_text(samples.coverage_page(results, devkit, len(found), untried,
                                                          earlier))


if __name__ == "__main__":
    main()
