"""Validation of the memory-system model against measurements it was not fitted to.

The fit (benchmarks/calibrate_add.py) uses cases 1-3 of the Add example only. This script
simulates, on the presets, the published measurements of docs/reference/hardware.md §4 (and of
the Add example's README) that touch the memory system and were not used, and prints each
next to the measurement with the signed error:

* the torch NPU-to-NPU copy of 256 MiB fp16 on 910B1 (§4.2 [S]): median 1.2671 TB/s,
  counted as bytes read + bytes written over the time (1 read + 1 write). Simulated as a
  copy kernel on the 48 AIVs of Ascend910B1: each core bounces its share through UB in
  64 KB DataCopies, double-buffered (MTE2 -> MTE3 by flags), after one launch of the same
  copy (the measurement times 50 copies back to back, so each one meets the L2 the previous
  one left). How torch_npu runs the copy (an AIV kernel or the SDMA engine) is not
  documented in the source;
* the Add example's note that dataCopyLen 16512 instead of case 3's 16384 gives a Task
  Duration of 267.76 µs (README "dataCopyLen is not the bigger the better");
* cases 4-6 of the Add example (the README), the predictions of examples/add_study.py.

The matmul TFLOPS of §4.2 are validated by benchmarks/bench_matmul.py (its cube time does
not use the fitted parameters: the AIC's reads do not share the vector cores' interconnect).

Run: ``python benchmarks/validate_memory.py [--json FILE]`` (about a minute).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import calibrate_add  # noqa: E402

from npusim import GlobalMemory, get_soc, run_kernel  # noqa: E402
from npusim.ascendc import (DataCopy, GetBlockIdx, GetBlockNum, GlobalTensor,  # noqa: E402
                            HardEvent, LocalTensor, SetFlag, TPosition, WaitFlag, half)

add_study = calibrate_add.add_study

#: §4.2 [S]: 910B1, torch 256 MiB fp16 copy, median of 7 runs x 50 copies.
COPY_MEASURED_TBPS = 1.2671
COPY_BYTES = 256 * 2 ** 20
#: Add README: case 3 with dataCopyLen 16512, Task Duration (µs).
ADD_16512_MEASURED_US = 267.76
TILE = 32768                    # halves per DataCopy: 64 KB


def copy_kernel(src, dst, total):
    """One block: its share of ``total`` halves, GM -> UB -> GM, ping-pong buffers."""
    units, rest = divmod(total // 256, GetBlockNum())     # 512 B units, remainder first
    idx = GetBlockIdx()
    per = (units + (idx < rest)) * 256
    base = (idx * units + min(idx, rest)) * 256
    s, d = GlobalTensor(half), GlobalTensor(half)
    s.SetGlobalBuffer(src + base * 2, per)
    d.SetGlobalBuffer(dst + base * 2, per)
    bufs = [LocalTensor.at(half, TPosition.VECIN, k * TILE * 2, TILE) for k in range(2)]
    starts = list(range(0, per, TILE))
    for i, start in enumerate(starts):
        ev = i % 2
        n = min(TILE, per - start)
        if i > 1:
            WaitFlag(HardEvent.MTE3_MTE2, ev)       # the buffer's previous copy-out is done
        DataCopy(bufs[ev], s[start], n)
        SetFlag(HardEvent.MTE2_MTE3, ev)
        WaitFlag(HardEvent.MTE2_MTE3, ev)
        DataCopy(d[start], bufs[ev], n)
        SetFlag(HardEvent.MTE3_MTE2, ev)
    for ev in range(min(2, len(starts))):
        WaitFlag(HardEvent.MTE3_MTE2, ev)


def torch_copy(soc_name="Ascend910B1") -> dict:
    """The simulated 256 MiB fp16 copy: TB/s as (read + written bytes) / Task Duration."""
    soc = get_soc(soc_name)
    gm = GlobalMemory(soc.memory_size)
    n = COPY_BYTES // 2
    src, dst = gm.malloc(COPY_BYTES), gm.malloc(COPY_BYTES)
    data = np.arange(n, dtype=np.uint16).view(np.float16)
    gm.write(src, data)
    cores = soc.vector_block_num
    prof = run_kernel(copy_kernel, cores, (src, dst, n), soc=soc, gm=gm, name="copy",
                      reserve_ub=False, keep_spans=True)
    if not np.array_equal(np.frombuffer(gm.view(dst, COPY_BYTES), np.uint16), data.view(np.uint16)):
        raise AssertionError("the copy kernel did not copy")
    fig = add_study.figures(add_study.replay_warm(prof.records, soc), soc)
    tbps = 2 * COPY_BYTES / (fig["task_duration_us"] * 1e-6) / 1e12
    return {"task_us": fig["task_duration_us"], "simulated_TBps": tbps,
            "measured_TBps": COPY_MEASURED_TBPS, "error": tbps / COPY_MEASURED_TBPS - 1,
            "cold_TBps": 2 * COPY_BYTES / (prof.duration_us * 1e-6) / 1e12}


def add_16512() -> dict:
    fig, _ = add_study.run_case(3, data_copy_len=16512, check=False)
    t = fig["task_duration_us"]
    return {"task_us": t, "measured_us": ADD_16512_MEASURED_US,
            "error": t / ADD_16512_MEASURED_US - 1}


def add_predictions() -> dict:
    out = {}
    for c in (4, 5, 6):
        fig, _ = add_study.run_case(c, check=False)
        m = add_study.MEASURED[c]
        out[c] = {k: {"simulated": fig[f], "measured": m[k], "error": fig[f] / m[k] - 1}
                  for k, f in (("task", "task_duration_us"), ("mte2", "aiv_mte2_time_us"),
                               ("mte3", "aiv_mte3_time_us"), ("vec", "aiv_vec_time_us"))}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    res = {"copy": torch_copy(), "add_16512": add_16512(), "add_4_6": add_predictions()}
    c = res["copy"]
    print(f"torch copy 256 MiB fp16 (910B1): simulated {c['simulated_TBps']:.3f} TB/s "
          f"(Task {c['task_us']:.1f} us; a first launch, cold L2: {c['cold_TBps']:.3f}), "
          f"measured {c['measured_TBps']} TB/s: {c['error'] * 100:+.1f}%")
    a = res["add_16512"]
    print(f"Add case 3 with dataCopyLen 16512: Task {a['task_us']:.2f} us, measured "
          f"{a['measured_us']} us: {a['error'] * 100:+.1f}%")
    for case, figs in res["add_4_6"].items():
        print(f"Add case {case}: " + "  ".join(
            f"{k} {v['simulated']:.1f} / {v['measured']:.1f} ({v['error'] * 100:+.1f}%)"
            for k, v in figs.items()))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")
    print(f"({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
