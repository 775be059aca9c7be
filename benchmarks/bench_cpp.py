"""The C++ front end's costs: compiling (cold, with the precompiled header, cached), the host
time of one forwarded intrinsic, the host time per intrinsic of a kernel built with and
without the source-line flags (npusim/cpp/sourceline.py), and asc-devkit's TPipe/TQue Add
kernel in C++ against the same kernel written with npusim.ascendc in Python (results, Task
Duration, host time per record).

    NPUSIM_ASC_DEVKIT=/path/to/asc-devkit python benchmarks/bench_cpp.py [--cold]

--cold empties this kernel's cache entries first (the precompiled header is kept unless
NPUSIM_CPP_COLD_PCH=1). Without a devkit only the forwarding figures are printed.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from npusim.cpp import builder
from npusim.cpp.dispatch import KernelRuntime

ADD_SAMPLE = "examples/01_simd_cpp_api/00_introduction/01_add/add_tpipe_tque"
FORWARD_SRC = r"""
#include "stub_fun.h"
extern "C" void npusim_hw_buffers(void** b, uint64_t* s)
{ for (int i = 0; i < 7; ++i) { b[i] = nullptr; s[i] = 0; } }
extern "C" uint64_t spin(int n)
{ uint64_t x = 0; for (int i = 0; i < n; ++i) { x = sbitset1(x, i & 63); } return x; }
#include "npusim_runtime.cpp"
"""


def forwarding_us(n: int = 200_000) -> float:
    """Host microseconds per forwarded intrinsic (sbitset1: the callback, the argument
    decoding and a trivial handler)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, lib = Path(tmp) / "fwd.cpp", Path(tmp) / "fwd.so"
        src.write_text(FORWARD_SRC)
        subprocess.run([builder.find_compiler(), "-std=c++17", "-shared", "-fPIC", "-O1",
                        f"-I{builder.INCLUDE_DIR}", "-o", str(lib), str(src)], check=True)
        so = ctypes.CDLL(str(lib))
        rt = KernelRuntime(so)
        so.spin.restype = ctypes.c_uint64
        t0 = time.perf_counter()
        got = so.spin(n)
        dt = time.perf_counter() - t0
        assert got == (1 << 64) - 1 and rt.error is None
    return dt / n * 1e6


LOOP_SRC = r"""
#include "stub_fun.h"
#include "npusim_runtime.cpp"
alignas(4096) static uint8_t g_ub[196608];
extern "C" void npusim_hw_buffers(void** b, uint64_t* s)
{ for (int i = 0; i < 7; ++i) { b[i] = i ? nullptr : g_ub; s[i] = i ? 0 : sizeof(g_ub); } }
extern "C" void npusim_reset_core_state() {}
static inline void step(float* a)
{
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    vadd(a + 64, a, a, 1, 1, 1, 1, 8, 8, 8);
}
void loop(uint8_t* x, uint32_t n)
{
    float* a = reinterpret_cast<float*>(g_ub);
    copy_gm_to_ubuf(a, x, 0, 1, 8, 0, 0);
    pipe_barrier(PIPE_ALL);
    set_vector_mask(0, ~0ull);
    for (uint32_t i = 0; i < n; ++i) { step(a); }
}
"""


def source_line_cost(n: int = 200, repeats: int = 5) -> None:
    """Host time per intrinsic of a kernel (set_flag, wait_flag, vadd in a loop) built
    without and with npusim's source-line flags (frame pointers noted at each intrinsic;
    every SetFlag/WaitFlag's line resolved for the checker), plain and traced."""
    import npusim.cpp as cpp
    from npusim.gm import GlobalMemory
    from npusim.launch import run_kernel
    from npusim.soc import get_soc
    soc = get_soc("Ascend910B1")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "loop.cpp"
        src.write_text(LOOP_SRC)
        for label, flags in (("plain -O1", []), ("source lines", builder.SOURCE_LINE_FLAGS)):
            lib = Path(tmp) / f"loop{len(flags)}.so"
            subprocess.run([builder.find_compiler(), "-std=c++17", "-shared", "-fPIC", "-O1",
                            *flags, "-w", f"-I{builder.INCLUDE_DIR}", "-o", str(lib), str(src)],
                           check=True)
            k = cpp.CppKernel(builder.Build(lib, 0.0, False, "", [], "aiv"), "loop", "aiv")
            figures = []
            for spans in (False, True):
                gm = GlobalMemory(soc.memory_size)
                x = gm.malloc(256)
                gm.write(x, np.ones(64, np.float32))
                best = None
                for _ in range(repeats):
                    calls0 = k.rt.calls
                    t0 = time.perf_counter()
                    prof = run_kernel(k, 1, (x, n), soc=soc, gm=gm, keep_spans=spans)
                    dt = (time.perf_counter() - t0) / (k.rt.calls - calls0)
                    best = dt if best is None else min(best, dt)
                figures.append(best * 1e6)
            line = next(ln for r, ln in zip(prof.records[0], prof.lines[0]) if r[5] == "Add")
            print(f"{label:13s}: {figures[0]:.1f} us per intrinsic, {figures[1]:.1f} traced "
                  f"(keep_spans; Add's line {line})")


def python_add_kernel(x, y, z, total):
    """The same TPipe/TQue Add, written with npusim.ascendc (float32, one tile per block)."""
    from npusim import ascendc as asc
    n = total // asc.GetBlockNum()
    off = n * asc.GetBlockIdx() * 4
    pipe = asc.TPipe()
    qx, qy = asc.TQue(asc.TPosition.VECIN, 1), asc.TQue(asc.TPosition.VECIN, 1)
    qz = asc.TQue(asc.TPosition.VECOUT, 1)
    gx, gy, gz = asc.GlobalTensor(np.float32), asc.GlobalTensor(np.float32), \
        asc.GlobalTensor(np.float32)
    gx.SetGlobalBuffer(x + off, n)
    gy.SetGlobalBuffer(y + off, n)
    gz.SetGlobalBuffer(z + off, n)
    for q in (qx, qy, qz):
        pipe.InitBuffer(q, 1, n * 4)
    xl, yl = qx.AllocTensor(np.float32), qy.AllocTensor(np.float32)
    asc.DataCopy(xl, gx, n)
    asc.DataCopy(yl, gy, n)
    qx.EnQue(xl)
    qy.EnQue(yl)
    xl, yl = qx.DeQue(np.float32), qy.DeQue(np.float32)
    zl = qz.AllocTensor(np.float32)
    asc.Add(zl, xl, yl, n)
    qz.EnQue(zl)
    qx.FreeTensor(xl)
    qy.FreeTensor(yl)
    zl = qz.DeQue(np.float32)
    asc.DataCopy(gz, zl, n)
    qz.FreeTensor(zl)


def add_comparison(devkit: Path, cold: bool) -> None:
    import npusim.cpp as cpp
    from npusim.gm import GlobalMemory
    from npusim.launch import run_kernel
    from npusim.soc import get_soc
    src = next((devkit / ADD_SAMPLE).glob("*.asc"))
    if cold:
        b = builder.build(src)
        shutil.rmtree(b.library.parent, ignore_errors=True)
        if os.environ.get("NPUSIM_CPP_COLD_PCH") == "1":
            for d in (builder.cache_root() / "devkit").glob("*/pch-*"):
                shutil.rmtree(d, ignore_errors=True)
    t0 = time.perf_counter()
    b = builder.build(src)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    builder.build(src)
    cached = time.perf_counter() - t0
    print(f"compile {src.name}: {'cached' if b.cached else f'{b.seconds:.1f} s'} "
          f"(whole first build() {first:.1f} s); a cached build() {cached * 1e3:.0f} ms")
    kernel = cpp.load(src)
    soc = get_soc("Ascend910B1")
    rng = np.random.default_rng(0)
    xs = rng.uniform(1, 10, [8, 2048]).astype(np.float32)
    ys = rng.uniform(1, 10, [8, 2048]).astype(np.float32)
    for label, k in (("C++", kernel), ("Python", python_add_kernel)):
        gm = GlobalMemory(soc.memory_size)
        x, y, z = (gm.malloc(xs.nbytes) for _ in range(3))
        gm.write(x, xs)
        gm.write(y, ys)
        calls0 = kernel.rt.calls
        best = None
        for _ in range(5):
            t0 = time.perf_counter()
            prof = run_kernel(k, 8, (x, y, z, xs.size), soc=soc, gm=gm, keep_spans=True,
                              lockstep=False, name="add_custom")
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        out = np.frombuffer(gm.view(z, xs.nbytes), np.float32).reshape(xs.shape)
        records = sum(len(r) for r in prof.records)
        extra = (f", {(kernel.rt.calls - calls0) // 5} intrinsics forwarded"
                 if label == "C++" else "")
        print(f"{label:6s}: exact {np.array_equal(out, xs + ys)}, Task Duration "
              f"{prof.duration_us:.3f} us, {records} records, host {best * 1e3:.1f} ms per "
              f"launch = {best / records * 1e6:.1f} us per record{extra}")


def main() -> None:
    print(f"one forwarded intrinsic (sbitset1, ctypes callback): {forwarding_us():.2f} us")
    source_line_cost()
    try:
        devkit = builder.find_devkit()
    except builder.CppBuildError as exc:
        print(f"no devkit: {exc}")
        return
    add_comparison(devkit, "--cold" in sys.argv)


if __name__ == "__main__":
    main()
