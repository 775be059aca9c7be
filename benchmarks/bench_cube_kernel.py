"""Benchmark: a hand-written basic-API cube kernel (static buffers, SetFlag/WaitFlag, no
TQue), C (N x N, float) = A (N x N, half) @ B (N x N, half) on all 24 AICs of an
Ascend910B2, against numpy's single-thread float32 matmul of the same shape, side by side
in one process.

The kernel (:func:`cube_matmul`): C is cut into base blocks of ``BASE_M x BASE_N``, dealt
round-robin over the AICs (block ``g`` takes ``g, g + 24, ...``, written as the C++ loop
``for (tile = GetBlockIdx(); tile < tiles; tile += blockDim)``). Per base block::

    GM --DataCopy(Nd2NzParams), MTE2--> L1 (A1/B1: chunks of K_L1, two buffers)
       --LoadData, MTE1--> L0A (ZZ) / L0B (ZN) (steps of BASE_K, two buffers)
       --Mmad, M--> L0C (float, the first step starts at 0, the others accumulate)
       --Fixpipe, FIX--> GM (NZ -> ND, float kept)

Every buffer is a static ``LocalTensor.at`` tensor at a fixed address and every hand-off a
``SetFlag``/``WaitFlag`` pair on a ping-pong eventID (the reverse flags set once at the
start and waited once at the end, as Ascend C's static-buffer samples do). The kernel
checks its own result against numpy's float32 product (relative error printed).

Printed per size: the simulator's host time (functional run, timing replay) and numpy's
float32 ``a @ b`` on one BLAS thread (threadpoolctl), the ratio, and the simulated kernel
time; and the first launch's own time, which is more: it finds the launch's lockstep
groups (8 blocks do one tile more when 24 does not divide the tiles: the blocks run as one
group timing-only until their tile loops part, then each group functionally; later
launches start from those groups: :func:`npusim.lockstep._probe`) and loads numba's
compiled loops. Target (8192^3): within 5x numpy. Timings are the fastest of ``--repeats``
interleaved runs (sim, numpy, sim, numpy, ...); the process's CPU time of each is printed
too (on a host other processes load, wall time counts their share).

Mmad's step sums run in the compiled loop when numba is installed (``pip install
'npusim[fast]'``, :mod:`npusim.ascendc.cube.step_sums_numba`), in numpy with
``NPUSIM_NUMBA=0``: the line says which, and the digest of C shows the bytes are the same.

Run: ``python benchmarks/bench_cube_kernel.py [--sizes 2048,4096] [--repeats N]
[--json F]`` (8192^3 takes minutes of host time per run).
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

from npusim import GlobalMemory, get_soc, run_kernel  # noqa: E402
from npusim.ascendc.cube import step_sums_numba  # noqa: E402
from npusim.ascendc import (DataCopy, Fixpipe, FixpipeParamsV220, GetBlockIdx,  # noqa: E402
                            GlobalTensor, HardEvent, KernelMetaType, LoadData, LoadData2DParams,
                            LocalTensor, Mmad, MmadParams, Nd2NzParams, QuantMode_t, SetFlag,
                            TPosition, WaitFlag, float32, half)

SOC = "Ascend910B2"
BASE_M, BASE_N, BASE_K, K_L1 = 128, 256, 64, 256      # L0C 128 KiB; L1 2 x (64 + 128) KiB
FRAC = 16 * 16                                        # half elements in one fractal


def cube_matmul(a, b, c, n, block_dim):
    """The kernel: GM addresses of A, B, C (row-major n x n) and the launch's blockDim."""
    aGm, bGm, cGm = GlobalTensor(half), GlobalTensor(half), GlobalTensor(float32)
    aGm.SetGlobalBuffer(a, n * n)
    bGm.SetGlobalBuffer(b, n * n)
    cGm.SetGlobalBuffer(c, n * n)
    a1 = [LocalTensor.at(half, TPosition.A1, i * 65536, BASE_M * K_L1) for i in range(2)]
    b1 = [LocalTensor.at(half, TPosition.B1, 131072 + i * 131072, K_L1 * BASE_N)
          for i in range(2)]
    a2 = [LocalTensor.at(half, TPosition.A2, i * 32768, BASE_M * BASE_K) for i in range(2)]
    b2 = [LocalTensor.at(half, TPosition.B2, i * 32768, BASE_K * BASE_N) for i in range(2)]
    co1 = LocalTensor.at(float32, TPosition.CO1, 0, BASE_M * BASE_N)
    M1, N1, K1, KL1 = BASE_M // 16, BASE_N // 16, BASE_K // 16, K_L1 // 16
    nTiles = n // BASE_N
    for i in range(2):                       # the buffers start free
        SetFlag(HardEvent.MTE1_MTE2, i)
        SetFlag(HardEvent.M_MTE1, i)
    SetFlag(HardEvent.FIX_M, 0)
    l1, l0 = 0, 0                            # ping-pong indices
    tile = GetBlockIdx()
    while tile < (n // BASE_M) * nTiles:
        m0, n0 = (tile // nTiles) * BASE_M, (tile % nTiles) * BASE_N
        for k0 in range(0, n, K_L1):
            WaitFlag(HardEvent.MTE1_MTE2, l1)
            DataCopy(a1[l1], aGm[m0 * n + k0], Nd2NzParams(1, BASE_M, K_L1, 0, n, BASE_M, 1, 0))
            DataCopy(b1[l1], bGm[k0 * n + n0], Nd2NzParams(1, K_L1, BASE_N, 0, n, K_L1, 1, 0))
            SetFlag(HardEvent.MTE2_MTE1, l1)
            WaitFlag(HardEvent.MTE2_MTE1, l1)
            for kk in range(0, K_L1, BASE_K):
                WaitFlag(HardEvent.M_MTE1, l0)
                kb = kk // 16
                for j in range(K1):          # A: NZ column of fractals -> ZZ (dstGap K1 - 1)
                    LoadData(a2[l0][j * FRAC], a1[l1][(kb + j) * M1 * FRAC],
                             LoadData2DParams(0, M1, 1, 0, K1 - 1))
                for j in range(K1):          # B: NZ row of fractals -> ZN, transposed
                    LoadData(b2[l0][j * N1 * FRAC], b1[l1][(kb + j) * FRAC],
                             LoadData2DParams(0, N1, KL1, 0, 0, True))
                SetFlag(HardEvent.MTE1_M, l0)
                WaitFlag(HardEvent.MTE1_M, l0)
                first = k0 == 0 and kk == 0
                if first:
                    WaitFlag(HardEvent.FIX_M, 0)
                Mmad(co1, a2[l0], b2[l0], MmadParams(BASE_M, BASE_N, BASE_K, 0, False, first))
                SetFlag(HardEvent.M_MTE1, l0)
                l0 = 1 - l0
            SetFlag(HardEvent.MTE1_MTE2, l1)
            l1 = 1 - l1
        SetFlag(HardEvent.M_FIX, 0)
        WaitFlag(HardEvent.M_FIX, 0)
        Fixpipe(cGm[m0 * n + n0], co1, FixpipeParamsV220(BASE_N, BASE_M, BASE_M, n,
                                                         QuantMode_t.NoQuant))
        SetFlag(HardEvent.FIX_M, 0)
        tile += block_dim
    for i in range(2):
        WaitFlag(HardEvent.MTE1_MTE2, i)
        WaitFlag(HardEvent.M_MTE1, i)
    WaitFlag(HardEvent.FIX_M, 0)


def operands(n: int):
    """The launch's inputs for size ``n``: (soc, block_dim, a, b, gm, pa, pb, pc), A and B
    random fp16 (seed 0) written to ``gm`` at ``pa``/``pb``, ``pc`` C's n*n floats."""
    soc = get_soc(SOC)
    block_dim = soc.cube_block_num
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)
    b = rng.standard_normal((n, n), dtype=np.float32).astype(np.float16)
    gm = GlobalMemory(3 * n * n * 4 + (1 << 20))
    pa, pb, pc = gm.malloc(a.nbytes), gm.malloc(b.nbytes), gm.malloc(n * n * 4)
    gm.write(pa, a)
    gm.write(pb, b)
    return soc, block_dim, a, b, gm, pa, pb, pc


def measure(n: int, repeats: int) -> dict:
    soc, block_dim, a, b, gm, pa, pb, pc = operands(n)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    c32 = np.empty((n, n), np.float32)
    sim = {}

    cpu = {"sim": [], "numpy": []}

    def sim_run():
        t0 = time.process_time()
        sim.setdefault("profiles", []).append(run_kernel(
            cube_matmul, block_dim, (pa, pb, pc, n, block_dim), soc=soc, gm=gm,
            kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY, name="cube_matmul"))
        cpu["sim"].append(time.process_time() - t0)

    def after_first():
        c = np.frombuffer(gm.read(pc, n * n * 4), np.float32).reshape(n, n)
        ref = a32 @ b32
        sim["rel_err"] = float(np.abs(c - ref).max() / np.abs(ref).max())
        sim["c_sha256"] = hashlib.sha256(c.tobytes()).hexdigest()[:16]

    def numpy_run():
        t0 = time.process_time()
        with threadpool_limits(1, user_api="blas"):
            np.matmul(a32, b32, out=c32)
        cpu["numpy"].append(time.process_time() - t0)

    times = harness.interleave({"sim": (None, sim_run), "numpy": (None, numpy_run)}, repeats,
                               after_first=after_first)
    best = int(np.argmin(times["sim"]))
    prof = sim["profiles"][best]
    sim_s, numpy_s = min(times["sim"]), min(times["numpy"])
    return {"n": n, "blockDim": block_dim, "sim_s": sim_s, "sim_runs": times["sim"],
            "functional_s": prof.host_functional_s, "timing_s": prof.host_timing_s,
            "numpy_s": numpy_s, "numpy_runs": times["numpy"], "ratio": sim_s / numpy_s,
            "kernel_us": prof.duration_us, "rel_err": sim["rel_err"],
            "c_sha256": sim["c_sha256"], "step_sums": "numba" if step_sums_numba.ENABLED else "numpy",
            "sim_cpu_s": min(cpu["sim"]), "numpy_cpu_s": min(cpu["numpy"]),
            "ratio_cpu": min(cpu["sim"]) / min(cpu["numpy"]),
            "first_s": times["sim"][0], "first_cpu_s": cpu["sim"][0]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2048", help="comma-separated N of N^3")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    rows = []
    for n in map(int, args.sizes.split(",")):
        if n % K_L1 or n % BASE_N:
            raise SystemExit(f"N = {n} must be a multiple of {max(K_L1, BASE_N)}")
        t0 = time.perf_counter()
        r = measure(n, args.repeats)
        rows.append(r)
        print(f"fp16 {n}^3 on {SOC}, {r['blockDim']} AIC, base {BASE_M}x{BASE_N}x{BASE_K}: "
              f"simulated {r['kernel_us']:.1f} us; max rel err vs numpy fp32 {r['rel_err']:.1e}; "
              f"step sums in {r['step_sums']}, C sha256 {r['c_sha256']}\n"
              f"  host: simulator {r['sim_s']:.2f} s (functional {r['functional_s']:.2f} s, "
              f"timing {r['timing_s']:.2f} s); numpy fp32 1 thread {r['numpy_s']:.3f} s -> "
              f"{r['ratio']:.1f}x (target <= 5x); {time.perf_counter() - t0:.0f} s in all\n"
              f"  CPU time (this process, a loaded host's fairer figure): simulator "
              f"{r['sim_cpu_s']:.2f} s, numpy {r['numpy_cpu_s']:.3f} s -> {r['ratio_cpu']:.1f}x\n"
              f"  first launch of the process: {r['first_s']:.2f} s ({r['first_cpu_s']:.2f} s "
              f"CPU; it finds the lockstep groups, loads numba's cache)", flush=True)
    harness.write_json(args.json, rows)
    return rows


if __name__ == "__main__":
    main()
