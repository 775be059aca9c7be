"""Running asc-devkit's own C++ samples on npusim, as their READMEs run them.

A sample is a folder of ``examples/01_simd_cpp_api`` holding one ``.asc``/``.cpp`` source with
a host ``main``, ``scripts/gen_data.py`` and ``scripts/verify_result.py``. Its README's steps
are followed in a scratch build folder: ``python3 ../scripts/gen_data.py``, the program
(here :func:`npusim.cpp.run_host` on Ascend910B1), then the README's own
``verify_result.py`` command line. The scripts run with ``$NPUSIM_SAMPLE_PYTHON`` when set
(an interpreter with what they import: two samples' gen_data.py need tensorflow), else
the running Python. Nothing of the sample is copied into npusim: the scripts
run where they are.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

#: The README line naming Atlas A2 among a sample's products.
_A2 = re.compile(r"Atlas A2")


@dataclass
class SampleResult:
    """One sample: compiled / ran / correct, the reason of the first failure, timings and
    the launches' Task Duration (us)."""

    name: str
    compiled: bool = False
    ran: bool = False
    correct: bool = False
    reason: str = ""
    compile_s: float = 0.0
    run_s: float = 0.0
    task_us: tuple = ()


def find_samples(devkit: Path, subdirs=("examples/01_simd_cpp_api",)) -> list[Path]:
    """Sample folders (a source, gen_data.py and verify_result.py) whose README lists Atlas A2."""
    out = []
    for sub in subdirs:
        for gen in sorted((Path(devkit) / sub).rglob("scripts/gen_data.py")):
            d = gen.parent.parent
            readme = d / "README.md"
            if not (d / "scripts" / "verify_result.py").is_file() or not readme.is_file():
                continue
            if not _A2.search(readme.read_text(errors="replace")):
                continue
            if sources(d):
                out.append(d)
    return out


def sources(d: Path) -> list[Path]:
    return sorted([*d.glob("*.asc"), *d.glob("*.cpp")])


def scenario(d: Path) -> str | None:
    """The SCENARIO_NUM a sample's CMake build requires (the README's example value, else
    the first of the CMake list of valid ones), or None."""
    cmake = d / "CMakeLists.txt"
    if not cmake.is_file() or "SCENARIO_NUM" not in cmake.read_text(errors="replace"):
        return None
    m = re.search(r"^\s*SCENARIO_NUM=(\d+)", (d / "README.md").read_text(errors="replace"), re.M)
    if m:
        return m.group(1)
    m = re.search(r"set\(VALID_SCENARIOS\s+(\d+)", cmake.read_text(errors="replace"))
    return m.group(1) if m else "0"


def _cmake_commands(text: str):
    """(name, arguments) of each command of a CMake file, comments removed, a command spread
    over lines joined (``target_compile_definitions(demo PRIVATE\n    A=1\n)``)."""
    body = "\n".join(line.split("#")[0] for line in text.splitlines())
    for m in re.finditer(r"(\w+)\s*\(((?:[^()]|\([^()]*\))*)\)", body):
        yield m.group(1).lower(), " ".join(m.group(2).split())


def _cmake_condition(cond: str, variables: dict):
    """True/False for an ``if()`` of one comparison of a variable (``[NOT] VAR STREQUAL "x"``
    or ``VAR EQUAL n``; a variable the file never sets is empty, as in CMake: a sample's
    option left at its default), None for any other (both branches then count)."""
    m = re.fullmatch(r'(NOT\s+)?\$?\{?(\w+)\}?\s+(STREQUAL|EQUAL)\s+"?([^"\s]*)"?', cond.strip())
    if not m:
        return None
    name, value = m.group(2), m.group(4)
    if name == "CMAKE_ASC_RUN_MODE" and value == "npu":
        known = False       # npusim builds as the samples' simulator mode
    elif name in variables and variables[name] is None:
        return None
    else:
        known = variables.get(name, "") == value
    return known != bool(m.group(1))


def cmake_defines(d: Path, arch: str = "2201", scenario_num: str | None = None) -> list[str]:
    """The definitions of a sample's CMake build: its ``add_definitions(-DNAME=value)`` and
    ``target_compile_definitions(<target> PRIVATE NAME=value ...)`` (on one line or several),
    with the variables they use filled in: the architecture number its CMake derives from
    CMAKE_ASC_ARCHITECTURES (``${ARCH_NUM}``, dav-2201 for Atlas A2), ``${SCENARIO_NUM}``
    (``scenario_num``) and what its own ``set(NAME value)`` commands give. Of an
    ``if()/elseif()/else()`` on one of those (``CMAKE_ASC_ARCHITECTURES STREQUAL
    "dav-2201"``, ``SCENARIO_NUM EQUAL 1``), the branch CMake takes counts; npusim builds as
    the samples' simulator mode does: of an ``if (CMAKE_ASC_RUN_MODE STREQUAL "npu") ...
    else() ... endif()``, the ``else`` branch counts (e.g. a loop count of 1 instead of the
    device's 10000). Every branch of any other ``if`` counts as written. The definition of
    SCENARIO_NUM itself is the README's business (:func:`scenario`)."""
    cmake = d / "CMakeLists.txt"
    if not cmake.is_file():
        return []
    fixed = {"CMAKE_ASC_ARCHITECTURES": f"dav-{arch}", "ARCH_NUM": arch,
             "SCENARIO_NUM": scenario_num}
    variables = dict(fixed)
    out = []
    stack = []      # per open if(): "taking", "not_yet", "done" or "unknown" (count all)
    for name, args in _cmake_commands(cmake.read_text(errors="replace")):
        if name == "if":
            v = _cmake_condition(args, variables)
            stack.append("unknown" if v is None else "taking" if v else "not_yet")
            continue
        if name in ("elseif", "else"):
            if stack:
                top = stack[-1]
                v = _cmake_condition(args, variables) if name == "elseif" else True
                if top in ("taking", "done"):
                    stack[-1] = "done"
                elif top == "not_yet":
                    stack[-1] = "unknown" if v is None else "taking" if v else "not_yet"
                elif v is False:
                    stack[-1] = "not_yet"
            continue
        if name == "endif":
            if stack:
                stack.pop()
            continue
        if any(state in ("not_yet", "done") for state in stack):
            continue
        if name == "set":
            parts = args.split()
            if len(parts) >= 2 and parts[0] not in fixed:
                variables[parts[0]] = parts[1].strip('"')
            continue
        if name == "add_definitions":
            flags = [f[2:] for f in args.split() if f.startswith("-D")]
        elif name == "target_compile_definitions":
            flags = [f[2:] if f.startswith("-D") else f for f in args.split()[1:]
                     if f not in ("PRIVATE", "PUBLIC", "INTERFACE")]
        else:
            continue
        for flag in flags:
            if flag.split("=")[0] == "SCENARIO_NUM":
                continue
            for var, value in variables.items():
                if value is not None:
                    flag = flag.replace(f"${{{var}}}", value)
            if "${" not in flag:
                out.append(flag)
    return out


def _readme_command(d: Path, script: str, values: dict) -> list[str] | None:
    """The README's command line running ``scripts/<script>`` (its arguments, with
    ``$NAME`` replaced from ``values``), if any."""
    for line in (d / "README.md").read_text(errors="replace").splitlines():
        line = line.split("#")[0].strip()
        if f"scripts/{script}" in line and line.startswith("python"):
            for k, v in values.items():
                line = line.replace(f"${k}", v).replace(f"${{{k}}}", v)
            args = shlex.split(line)[1:]
            return [str(d / "scripts" / script) if a.endswith(f"scripts/{script}") else a
                    for a in args]
    return None


def run_sample(d: Path, *, soc: str = "Ascend910B1", devkit=None, defines=(),
               timeout: float = 600) -> SampleResult:
    """Build and run one sample (see the module docstring)."""
    import npusim.cpp as cpp
    from npusim.cpp.builder import build
    d = Path(d)
    res = SampleResult(str(d))
    srcs = sources(d)
    if len(srcs) != 1:
        res.reason = f"{len(srcs)} sources (one expected)"
        return res
    # the samples' own scripts may need packages npusim does not (two gen_data.py import
    # tensorflow): NPUSIM_SAMPLE_PYTHON names an interpreter that has them
    py = os.environ.get("NPUSIM_SAMPLE_PYTHON") or sys.executable
    values = {}
    scen = scenario(d)
    defines = (*defines, *cmake_defines(d, scenario_num=scen))
    if scen is not None:
        values["SCENARIO_NUM"] = scen
        defines = (*defines, f"SCENARIO_NUM={scen}")
        res.name += f" (SCENARIO_NUM={scen})"
    try:
        t0 = time.perf_counter()
        b = build(srcs[0], devkit=devkit, defines=defines)
        res.compile_s = b.seconds if not b.cached else 0.0
        res.compiled = True
    except cpp.CppBuildError as exc:
        first = next((ln for ln in str(exc).splitlines()[1:] if "error" in ln), str(exc))
        res.reason = "compile: " + re.sub(r"^.*?error: ", "", first)[:200]
        return res
    with tempfile.TemporaryDirectory(prefix="npusim-sample-") as tmp:
        build_dir = Path(tmp) / "build"
        build_dir.mkdir()
        for sub in ("input", "output"):
            (build_dir / sub).mkdir()
        gen = _readme_command(d, "gen_data.py", values) or [str(d / "scripts" / "gen_data.py")]
        r = subprocess.run([py, *gen], cwd=build_dir, capture_output=True, text=True,
                           timeout=timeout)
        if r.returncode != 0:
            res.reason = "gen_data.py failed: " + (r.stderr.strip().splitlines() or [""])[-1][:200]
            return res
        try:
            t0 = time.perf_counter()
            run = cpp.run_host(srcs[0], soc=soc, cwd=build_dir, devkit=devkit, defines=defines)
            res.run_s = time.perf_counter() - t0
        except Exception as exc:   # noqa: BLE001 - reported in the coverage table
            res.reason = f"run: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            return res
        res.ran = run.status == 0 and bool(run.profiles)
        res.task_us = tuple(round(p.duration_us, 3) for p in run.profiles)
        if not res.ran:
            res.reason = f"main returned {run.status}, {len(run.profiles)} launches"
            return res
        ver = _readme_command(d, "verify_result.py", values) or [
            str(d / "scripts" / "verify_result.py"), "output/output.bin", "output/golden.bin"]
        ver = [a for a in ver if "$" not in a]
        r = subprocess.run([py, *ver], cwd=build_dir, capture_output=True, text=True,
                           timeout=timeout)
        res.correct = r.returncode == 0 and "pass" in r.stdout.lower()
        if not res.correct:
            tail = (r.stdout + r.stderr).strip().splitlines()
            res.reason = "verify: " + (tail[-1] if tail else f"status {r.returncode}")[:200]
    return res


def coverage_table(results: list[SampleResult], root: Path, earlier=frozenset()) -> str:
    """docs/cpp_coverage.md's table (names in ``earlier`` marked †)."""
    rows = ["| sample | compiled | ran | correct | Task Duration (us) | reason |",
            "|---|---|---|---|---|---|"]
    yes = {True: "yes", False: "no"}
    for r in results:
        name = os.path.relpath(r.name, root).replace("examples/01_simd_cpp_api/", "")
        if r.name.split(" (")[0] in earlier:
            name += " †"
        rows.append(f"| {name} | {yes[r.compiled]} | {yes[r.ran]} | {yes[r.correct]} | "
                    f"{', '.join(map(str, r.task_us))} | {r.reason.replace('|', '/')} |")
    return "\n".join(rows) + "\n"


#: Failure causes, by the reason's text (the first match names the group).
CAUSES = (
    ("MIX kernel (AIC + AIVs: KFC messages, cross-core flags)", r"MIX kernel|ffts_cross_core|"
     r"crosscore|cross_core|CrossCore|__kfc_workspace__|kfc"),
    ("blocks waiting for each other (IBSet/IBWait, SyncAll, GM flags)",
     r"hangs|ib_wait|SyncAll|polls GM"),
    ("too slow for the run (stopped)", r"timeout|stopped after"),
    ("int4 forms", r"_s4\b|int4|s4 "),
    ("an intrinsic not forwarded yet", r"not modelled by npusim's C\+\+ front end"),
    ("a symbol of the closed CPU library or of a host tiling source not compiled yet, or a "
     "header", r"undefined symbol|No such file|asc_dump"),
    ("the C++ program crashed (SIGSEGV/SIGABRT)", r"process ended"),
    ("checker finding", r"GmAccessError|UbError|SyncError|UninitialisedError"),
    ("Fixpipe channel split", r"channelSplit"),
    ("result differs (verify_result.py)", r"^verify"),
    ("sample tooling (gen_data.py)", r"gen_data"),
)


def failure_groups(results: list[SampleResult]) -> list[tuple[str, list[str]]]:
    """(cause, samples) for the samples not correct, grouped by CAUSES ("other" last)."""
    import re as _re
    groups: dict = {}
    for r in results:
        if r.correct:
            continue
        cause = next((c for c, pat in CAUSES if _re.search(pat, r.reason)), "other")
        groups.setdefault(cause, []).append(r.name)
    order = [c for c, _ in CAUSES] + ["other"]
    return [(c, groups[c]) for c in order if c in groups]


def coverage_page(results: list[SampleResult], root: Path, total: int,
                  untried: list | None = None, earlier=frozenset()) -> str:
    """docs/cpp_coverage.md: the counts, the table, and the A2 samples not tried; rows of
    ``earlier`` (sample folders) are marked as results of an earlier run."""
    n = len(results)
    comp = sum(r.compiled for r in results)
    ran = sum(r.ran for r in results)
    ok = sum(r.correct for r in results)
    head = (
        "# asc-devkit's C++ samples on npusim\n\n"
        "Each Atlas A2 sample of asc-devkit's `examples/01_simd_cpp_api` (a source with its host\n"
        "`main`, `scripts/gen_data.py` and `scripts/verify_result.py`, its README listing Atlas A2)\n"
        "is built with g++ against the asc-devkit snapshot's headers (npusim.cpp), and run as its\n"
        "README runs it: `gen_data.py`, the program on a simulated Ascend910B1, then the README's\n"
        "`verify_result.py` command (`benchmarks/cpp_coverage.py`, `npusim.cpp.samples`).\n"
        "Samples whose CMake build requires `SCENARIO_NUM` run the README's example value;\n"
        "the CMake's other definitions are passed too. The samples' scripts run with a Python\n"
        "that has what they import (`--python`: two gen_data.py import tensorflow).\n\n"
        f"Tried {n} of the {total} A2 samples: **{comp} compiled, {ran} ran, {ok} correct**.\n"
        "Task Duration is the simulated time of each launch. The reason is the first failure\n"
        "(an error's location reads `?` or `<frozen runpy>`: it has no Python frame of the\n"
        "kernel's own, and npusim does not yet name the C++ line).\n\n")
    if earlier:
        head += ("† a result of the previous run, not measured again in this one (for time); "
                 "a † row whose\nreason says a MIX kernel is not supported predates MIX support "
                 "(not measured with it yet).\n\n")
    page = head + coverage_table(results, root, earlier)
    groups = failure_groups(results)
    if groups:
        page += "\nThe samples not correct, by cause:\n\n| cause | samples |\n|---|---|\n"
        page += "".join(f"| {cause} | {len(names)} |\n" for cause, names in groups)
    if untried:
        page += ("\nNot tried in this run (for time; the kind is "
                 "npusim.cpp.builder.kernel_core's):\n\n")
        page += "".join(f"- {os.path.relpath(str(d), root).replace('examples/01_simd_cpp_api/', '')}"
                        f" ({kind})\n" for d, kind in untried)
    return page


if __name__ == "__main__":      # python -m npusim.cpp.samples DIR: one sample, one JSON line
    import json
    result = run_sample(Path(sys.argv[1]))
    print(json.dumps(result.__dict__))
