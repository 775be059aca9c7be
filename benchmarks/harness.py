"""Timing and memory helpers the benchmarks share.

:func:`interleave` runs the simulator and its baselines on the same data in one process,
one after another in turn (sim, numpy, torch, sim, numpy, torch, ...), so that a change in
the machine's load or clock during the run reaches all of them alike, and keeps the
fastest run of each. :func:`prepare` warms the memory a measurement will touch and resets
the process's peak resident set, so that the peak read by :func:`peak` after the first
simulator run is that run's own.
"""
from __future__ import annotations

import json
import resource
import time

import numpy as np

#: the baselines' column when torch cannot be imported
NOT_INSTALLED = "not installed"

#: torch's intra-op threads in the benchmarks: one, as the simulator and numpy's ufuncs use
#: one core; on the shared 2-core host a second OpenMP thread waits for a busy core
#: (AdamW + EMA, 2^18 fp32, measured 2026-11-24 with another process running: 70 ms with
#: two threads, 0.5 ms with one)
TORCH_THREADS = 1


def torch_threads(n: int = TORCH_THREADS) -> int | None:
    """Set torch's intra-op thread count to ``n``; return it, or None without torch."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(n)
    return torch.get_num_threads()


def peak() -> int:
    """Peak resident bytes of this process so far (``ru_maxrss``; since :func:`prepare`
    where Linux lets the peak be reset)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss() -> int:
    """Resident bytes now (Linux ``/proc/self/status``; elsewhere the peak so far)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return peak()


def prepare(warm_bytes: int = 0) -> int:
    """Get a fresh benchmark process ready to measure; return its baseline resident bytes.

    Imports the simulator first, so that the baseline holds the interpreter and the
    libraries (torch too, when installed: the baselines import it). Then, where Linux lets
    the peak be reset (``/proc/self/clear_refs``), touches and frees ``warm_bytes`` and
    resets the peak: on a virtual machine, memory nobody used for a few seconds can cost ten
    times more to touch the first time (measured on this host 2026-11-21: 1.2 ms/MiB
    against 0.13 ms/MiB), which would be charged to whichever run first writes fresh
    memory.
    """
    import aclnn  # noqa: F401  (the code under test, loaded before the baseline)
    import npusim.kernels.add  # noqa: F401
    import npusim.kernels.apply_fused_ema_adam.kernel  # noqa: F401
    import npusim.kernels.embedding_dense_backward  # noqa: F401
    import simpy  # noqa: F401
    torch_threads()                                     # imports torch when installed
    try:
        with open("/proc/self/clear_refs", "w") as f:
            if warm_bytes:
                np.ones(warm_bytes, np.uint8)           # touched, then freed at once
            f.write("5")                                # reset the peak to the current RSS
    except OSError:
        pass
    return rss()


#: The simulator's runners and whether each may take a kept replay
#: (``npusim.timing.REPLAY_MEMO``). "sim" replays the timing of every launch: the host time
#: of a launch the simulator has not seen before. "sim_kept" (added by
#: :func:`with_kept_replays`) takes the replay an earlier launch with the same records left:
#: the host time of each step of a loop that repeats a launch, as a training loop does.
SIM_REPLAYS = {"sim": False, "sim_kept": True}


def with_kept_replays(runners: dict) -> dict:
    """``runners`` with a "sim_kept" runner first: the "sim" runner's reset and run again,
    with kept replays. The simulator then runs twice per round, "sim_kept" then "sim"."""
    return {"sim_kept": runners["sim"], **runners}


def fastest_sim_runs(times: dict, runs: list) -> tuple:
    """The entries of ``runs`` (one per call of the "sim" function, in call order, under
    :func:`with_kept_replays`) of the fastest "sim" run and of the fastest "sim_kept" run."""
    kept, replayed = runs[0::2], runs[1::2]     # the calls alternate: sim_kept, then sim
    return (replayed[int(np.argmin(times["sim"]))],
            kept[int(np.argmin(times["sim_kept"]))])


def kept_figures(times: dict, timing_s: float, numpy_s: float | None) -> dict:
    """A benchmark's figures of its repeated launches: the fastest "sim_kept" run and all
    of them (s), that run's ``timing_s`` (the lookup of its kept replays) and its ratio to
    numpy (None without numpy)."""
    kept_s = min(times["sim_kept"])
    return {"sim_kept_s": kept_s, "sim_kept_runs": times["sim_kept"],
            "timing_kept_s": timing_s, "ratio_numpy_kept": ratio(kept_s, numpy_s)}


#: a ``cProfile.Profile`` to enable around the "sim" runner's last run (run_all's profile of
#: a missed target: a warm run, as the timed figures are); None: no profiling
SIM_PROFILER = None


def interleave(runners: dict, repeats: int, after_first=None) -> dict:
    """Time each runner ``repeats`` times, in turn; return ``{name: [seconds, ...]}``.

    The "sim" runner runs with ``npusim.timing.REPLAY_MEMO`` off, "sim_kept" with it on
    (:data:`SIM_REPLAYS`); the others as it is.

    Args:
        runners: ``{name: (reset, run)}`` in the order to run them; ``reset`` (untimed, may
            be None) restores the inputs ``run`` modifies, ``run`` is timed with
            ``time.perf_counter``. A runner whose ``run`` is None is skipped (torch not
            installed) and maps to ``[]``.
        repeats: rounds (>= 1).
        after_first: called once after the first runner's first run (untimed): where the
            caller reads the simulator's peak memory and checks its output before any
            baseline allocates.

    Raises:
        ValueError: ``repeats`` < 1.
    """
    from npusim import timing
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    times = {name: [] for name in runners}
    kept = timing.REPLAY_MEMO
    try:
        for i in range(repeats):
            for j, (name, (reset, run)) in enumerate(runners.items()):
                if run is None:
                    continue
                if reset is not None:
                    reset()
                timing.REPLAY_MEMO = SIM_REPLAYS.get(name, kept)
                prof = SIM_PROFILER if name == "sim" and i == repeats - 1 else None
                if prof is not None:
                    prof.enable()
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
                if prof is not None:
                    prof.disable()
                if i == 0 and j == 0 and after_first is not None:
                    after_first()
    finally:
        timing.REPLAY_MEMO = kept
    return times


def fastest(runs) -> float | None:
    """The fastest of ``runs`` (seconds), None for an empty list."""
    return min(runs) if runs else None


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b``, None when either is missing."""
    return a / b if a is not None and b else None


def fmt_s(x: float | None, digits: int = 3) -> str:
    """Seconds for a table cell; the torch column's "not installed" when None."""
    return NOT_INSTALLED if x is None else f"{x:.{digits}f}"


def fmt_x(x: float | None) -> str:
    """A ratio for a table cell ("—" when missing)."""
    return "—" if x is None else f"{x:.2f}x"


def to_device(arr: np.ndarray):
    """Copy a C-contiguous host array to a new device allocation (``aclrtMalloc``,
    ``aclrtMemcpy`` host to device) and return an ND ``aclTensor`` over it, with the array's
    shape, dtype and strides (in elements).

    Raises:
        AssertionError: the allocation or the copy fails.
    """
    import aclnn
    from aclnn import acl
    ptr, ret = acl.rt.malloc(max(arr.nbytes, 1), aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0, acl.get_recent_err_msg()
    assert acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes,
                         aclnn.ACL_MEMCPY_HOST_TO_DEVICE) == 0, acl.get_recent_err_msg()
    shape = list(arr.shape)
    return aclnn.aclCreateTensor(shape, aclnn.numpy_to_acl_dtype(arr.dtype),
                                 [st // arr.itemsize for st in arr.strides], 0,
                                 aclnn.ACL_FORMAT_ND, shape, ptr)


def second_phase(second, ws: int, executor, stream) -> None:
    """The second phase of an aclnn call, run to its end: a workspace of ``ws`` bytes
    (``aclrtMalloc``, none for 0), ``second(workspace, ws, executor, stream)``,
    ``aclrtSynchronizeStream``, the workspace freed.

    Raises:
        AssertionError: the call or the synchronisation returns a nonzero status.
    """
    import aclnn
    from aclnn import acl
    wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
    assert second(wptr, ws, executor, stream) == 0
    assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
    if ws:
        acl.rt.free(wptr)


def write_json(path: str | None, figures, **dump_kw) -> None:
    """``--json PATH``: the figures written to ``path``, indented (nothing when it is None);
    ``dump_kw`` goes to :func:`json.dump` (``default=str`` for values JSON lacks)."""
    if path:
        with open(path, "w") as f:
            json.dump(figures, f, indent=2, **dump_kw)


def fastest_per_core_and_lockstep(run, repeats: int) -> dict:
    """The fastest of ``repeats`` interleaved launches run per core and in lockstep:
    ``run(lockstep)`` gives (host seconds, profile, ...); returns per ``lockstep`` (False,
    True) the fastest run's (host s, functional s, timing s)."""
    best = {}
    for _ in range(repeats):
        for lockstep in (False, True):
            wall, prof = run(lockstep)[:2]
            old = best.get(lockstep)
            if old is None or wall < old[0]:
                best[lockstep] = (wall, prof.host_functional_s, prof.host_timing_s)
    return best


def print_per_core_and_lockstep(best: dict, lockstep_label: str) -> None:
    """The lines of :func:`fastest_per_core_and_lockstep`'s figures and the speed-up."""
    for lockstep, label in ((False, "per core (coroutines)"), (True, lockstep_label)):
        wall, fn, tm = best[lockstep]
        print(f"  {label:24s} {wall:7.3f} s  (functional {fn:.3f} s, timing {tm:.3f} s)")
    print(f"  speed-up {best[False][0] / best[True][0]:.2f}x "
          f"(functional {best[False][1] / best[True][1]:.2f}x)")
