"""asc-devkit's two memory-access best-practice samples through npusim's C++ front end, each
scenario's profile printed next to the msprof figures of the sample's README.

    NPUSIM_ASC_DEVKIT=/path/to/asc-devkit python benchmarks/cpp_best_practices.py \
        [--only bank_conflict_ub data_copy/UB/3 ...] [--timeout 300] [--jsonl bp.jsonl]

The samples (``examples/01_simd_cpp_api/05_best_practices/04_memory_access``):

* ``bank_conflict_ub``, scenarios 1-8: one AIV issues 1000 ``Add``s (4096 fp32, 64 repeats)
  on UB addresses chosen to meet or miss bank conflicts. The README's "Benchmark Perf" is
  the system-counter ticks of the 1000 Adds (README.md, "Scenario Details" table), read with
  ``GetSystemCycle``, whose counter runs at 50 MHz on Atlas A2 (Ascend C API reference,
  GetSystemCycle: ``time = cycles / 50`` us). The sample's own printed count cannot be used:
  in CPU-debug mode the headers' GetSystemCycle returns the host's clock in ns. npusim's
  figure is the launch's ``aiv_vec_time`` (the Adds are the kernel's only vector work).
* ``data_copy``, COPY_DST=UB scenarios 1-8 (48 AIVs, DataCopyPad GM -> UB) and COPY_DST=L1
  scenarios 1-7 (24 AICs, DataCopy ND2NZ GM -> L1). The README's tables give Task Duration
  and ``aiv_mte2_time``/``aic_mte2_time`` (or ``aiv_time``/``aicore_time`` for the L2Cache
  scenarios) on Atlas A2/A3; those are compared with the launch's Task Duration and its
  mte2 time (busy time averaged over the cores, as msprof's).

Each scenario runs in a child process (``--one``) with the sample's own ``gen_data.py``
(the README's command line) in a scratch folder, then its host ``main`` through
:func:`npusim.cpp.run_host` on Ascend910B1; a child still running after ``--timeout`` s is
stopped and reported as such. The README figures are parsed from the README's tables (the
"Atlas A2/A3" rows), not transcribed.
"""
from __future__ import annotations

import argparse
import html
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOC = "Ascend910B1"
SAMPLES = "examples/01_simd_cpp_api/05_best_practices/04_memory_access"
#: GetSystemCycle's counter on Atlas A2/A3, ticks per us (Ascend C API reference).
SYS_CNT_PER_US = 50.0


def devkit() -> Path:
    from npusim.cpp import builder
    return Path(builder.find_devkit())


# ---------------------------------------------------------------- the READMEs' figures

def bank_conflict_readme(readme: Path) -> dict:
    """{scenario: ticks of 1000 Adds} from the "Scenario Details" Markdown table (the
    column whose header holds "Perf"; README.md's header is Chinese, README_en.md's
    English: the column is found by position of the one numeric column after the addresses)."""
    out = {}
    rows = [ln for ln in readme.read_text().splitlines() if ln.startswith("|")]
    header = None
    for ln in rows:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if header is None and any("src0" in c for c in cells) and any("dst" in c for c in cells) \
                and len(cells) >= 9:
            header = cells
            col = next(i for i, c in enumerate(cells) if "dst" in c) + 1
            continue
        if header and len(cells) == len(header) and cells[0].isdigit():
            out[int(cells[0])] = float(cells[col])
        elif header and out and not cells[0].isdigit() and not set(cells[0]) <= set("-: "):
            break
    return out


def _cells(tr: str) -> list[str]:
    return [html.unescape(re.sub(r"<[^>]+>", " ", c)).strip()
            for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)]


def data_copy_readme(readme: Path) -> dict:
    """{(dst, scenario): {column: value}} of the Atlas A2/A3 rows of every HTML table of
    the README whose header has "Task Duration" and a "Scenario" column; dst is UB for an
    ``aiv_*`` table, L1 for an ``aic_*`` one. A scenario met in two tables (the baseline
    repeated) keeps its first figures."""
    out: dict = {}
    for table in re.findall(r"<table>(.*?)</table>", readme.read_text(), re.S):
        trs = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        if not trs:
            continue
        head = _cells(trs[0])
        if not any("Task Duration" in h for h in head):
            continue
        dst = "UB" if any(h.startswith("aiv_") for h in head) else "L1"
        arch = None
        for tr in trs[1:]:
            cells = _cells(tr)
            if "rowspan" in tr.split("</td>")[0]:
                arch = cells[0]
                cells = cells[1:]
            if arch is None or "A2" not in arch:
                continue
            row = dict(zip(head[1:], cells))
            try:
                scen = int(row["Scenario"])
            except (KeyError, ValueError):
                continue
            figures = {}
            for k, v in row.items():
                try:
                    figures[k] = float(v)
                except ValueError:
                    pass
            out.setdefault((dst, scen), figures)
    return out


# ---------------------------------------------------------------- one scenario (child)

def run_one(sample: str, dst: str | None, scen: int) -> dict:
    """Build and run one scenario; its Task Duration and pipe times (us), host seconds."""
    import npusim.cpp as cpp
    from npusim.cpp import samples
    d = devkit() / SAMPLES / sample
    src = samples.sources(d)[0]
    py = os.environ.get("NPUSIM_SAMPLE_PYTHON") or sys.executable
    if sample == "data_copy":
        # its data_utils.h declares an enum member DT_UNDEFINED after the kernel headers,
        # whose CPU-mode kernel_type.h defines DT_UNDEFINED as a macro unless the build is a
        # host/ascc one; __NPU_HOST__ (as npusim.cpp.builder sets for host-tiling programs)
        # leaves those DT_* macros out
        defines = ("__NPU_HOST__", f"COPY_DST_{dst}=1", "ARCH_2201=1", f"SCENARIO_NUM={scen}")
        gen = [str(d / "scripts" / "gen_data.py"), "-scenarioNum", str(scen),
               "-copyDst", dst, "-arch", "dav-2201"]
    else:
        defines = (*samples.cmake_defines(d, scenario_num=str(scen)), f"SCENARIO_NUM={scen}")
        gen = samples._readme_command(d, "gen_data.py", {"SCENARIO_NUM": str(scen)})
    t0 = time.perf_counter()
    b = cpp.build(src, defines=defines)
    build_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="npusim-bp-") as tmp:
        for sub in ("input", "output"):
            os.makedirs(os.path.join(tmp, sub))
        subprocess.run([py, *gen], cwd=tmp, check=True, capture_output=True)
        t0 = time.perf_counter()
        run = cpp.run_host(src, soc=SOC, cwd=tmp, defines=defines)
        run_s = time.perf_counter() - t0
    p = run.profiles[-1]
    return {"sample": sample, "dst": dst, "scenario": scen, "status": run.status,
            "task_us": p.duration_us, "blocks": p.block_dim, "pipes": dict(p.pipe_time_us),
            "build_s": 0.0 if b.cached else build_s, "run_s": run_s}


# ---------------------------------------------------------------- the table

def pct(ours, theirs):
    return f"{100 * (ours - theirs) / theirs:+.1f} %"


def rows(results: list[dict], root: Path) -> list[str]:
    bc = bank_conflict_readme(root / SAMPLES / "bank_conflict_ub" / "README.md")
    dc = data_copy_readme(root / SAMPLES / "data_copy" / "README_en.md")
    out = ["| sample / scenario | npusim Task Duration (us) | README Task Duration (us) | err "
           "| npusim pipe time (us) | README (msprof) pipe time (us) | err "
           "| Python study Task (us) | host s |",
           "|---|---|---|---|---|---|---|---|---|"]
    study = study_figures(Path(__file__).resolve().parent.parent / "docs" / "calibration.md")
    for r in results:
        if "task_us" not in r:
            continue
        if r["sample"] == "bank_conflict_ub":
            vec = r["pipes"].get("aiv_vec_time", 0.0)
            ref = bc[r["scenario"]] / SYS_CNT_PER_US
            out.append(f"| bank_conflict_ub {r['scenario']} | {r['task_us']:.3f} | - | - | "
                       f"aiv_vec_time {vec:.3f} | 1000 Adds: {bc[r['scenario']]:.0f} ticks "
                       f"/ 50 = {ref:.3f} | {pct(vec, ref)} | - | {r['run_s']:.0f} |")
            continue
        ref = dc.get((r["dst"], r["scenario"]), {})
        core = "aiv" if r["dst"] == "UB" else "aic"
        mte2 = r["pipes"].get(f"{core}_mte2_time", 0.0)
        # the L2Cache scenarios' tables give the core's time (aiv_time / aicore_time), not
        # its MTE2 time: npusim's MTE2 time is set beside it (the cores do nothing else)
        key = next((k for k in ref if k.startswith(f"{core}_mte2_time")), None) or \
            next((k for k in ref if k.startswith(("aiv_time", "aicore_time"))), None)
        ref_task = ref.get("Task Duration(μs)")
        py = study.get(f"{r['dst'][0]}{r['scenario']}")
        out.append(f"| data_copy {r['dst']} {r['scenario']} | {r['task_us']:.3f} | "
                   f"{ref_task if ref_task else '-'} | "
                   f"{pct(r['task_us'], ref_task) if ref_task else '-'} | "
                   f"{core}_mte2_time {mte2:.3f} | "
                   f"{key.split('(')[0] + f' {ref[key]:.3f}' if key else '-'} | "
                   f"{pct(mte2, ref[key]) if key else '-'} | {py if py else '-'} | "
                   f"{r['run_s']:.0f} |")
    return out


def study_figures(page: Path) -> dict:
    """{"U3": simulated Task (us)} of docs/calibration.md's DataCopy study table (npusim's
    Python renderings of the scenarios, examples/data_copy_study.py)."""
    out = {}
    for m in re.finditer(r"^\| ([UL]\d) [^|]*\| ([\d.]+) \|", page.read_text(), re.M):
        out.setdefault(m.group(1), float(m.group(2)))   # the study table comes first
    return out


#: Scenarios left out unless --all, and why (host time estimated from a smaller scenario).
SKIP = {
    "data_copy/UB/1": "49,152 DataCopyPad calls per core (2.36 million on 48 AIVs), 64 times "
                      "U2's 36,864, which took 157 s of host time: about 2.8 h",
}


def all_scenarios():
    for s in range(1, 9):
        yield ("bank_conflict_ub", None, s)
    for s in range(1, 9):
        yield ("data_copy", "UB", s)
    for s in range(1, 8):
        yield ("data_copy", "L1", s)


def label(sample, dst, scen):
    return "/".join(str(x) for x in (sample, dst, scen) if x is not None)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=(), help="labels such as bank_conflict_ub, "
                    "data_copy/UB, data_copy/L1/2 (prefixes)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per scenario")
    ap.add_argument("--jsonl", default="cpp_best_practices.jsonl",
                    help="results appended as they come; scenarios already there are skipped")
    ap.add_argument("--all", action="store_true", help="also the scenarios of SKIP")
    ap.add_argument("--one", nargs=3, metavar=("SAMPLE", "DST", "SCENARIO"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        sample, dst, scen = args.one
        print(json.dumps(run_one(sample, None if dst == "-" else dst, int(scen))))
        return
    done = {}
    if os.path.exists(args.jsonl):
        for line in open(args.jsonl):
            rec = json.loads(line)
            done[label(rec["sample"], rec["dst"], rec["scenario"])] = rec
    with open(args.jsonl, "a") as log:
        for sample, dst, scen in all_scenarios():
            name = label(sample, dst, scen)
            if args.only and not any(name.startswith(k) for k in args.only):
                continue
            if name in done:
                continue
            if name in SKIP and not args.all:
                print(f"not run: {name}: {SKIP[name]}")
                continue
            cmd = [sys.executable, __file__, "--one", sample, dst or "-", str(scen)]
            try:
                r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
                lines = [ln for ln in r.stdout.splitlines() if ln.startswith('{"sample"')]
                rec = json.loads(lines[-1]) if lines else {
                    "sample": sample, "dst": dst, "scenario": scen,
                    "error": (r.stderr.strip().splitlines() or ["?"])[-1][:200]}
            except subprocess.TimeoutExpired:
                rec = {"sample": sample, "dst": dst, "scenario": scen,
                       "error": f"stopped after {args.timeout:.0f} s"}
            done[name] = rec
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(name, rec.get("task_us", rec.get("error")), flush=True)
    results = [done[label(*k)] for k in all_scenarios() if label(*k) in done]
    print("\n".join(rows(results, devkit())))
    for r in results:
        if "error" in r:
            print(f"not run: {label(r['sample'], r['dst'], r['scenario'])}: {r['error']}")


if __name__ == "__main__":
    main()
