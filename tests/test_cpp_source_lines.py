"""Checker findings and profile spans of a C++ kernel name its own source line (the user's
file, not stub_fun.h's or a header's), as they name a Python kernel's line
(npusim/cpp/sourceline.py). The intrinsics are called through inline helpers, as the Ascend
C headers call them. The first tests need only a C++ compiler (tests/cpp_kernels/
source_lines.cpp against npusim's layer); the last one asc-devkit's headers (aclnnAdd's C++
kernel, test_cpp.py's rules for skipping)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from npusim.cpp import builder

from test_cpp import _compiler, needs_compiler, require_devkit

SOURCE = Path(__file__).resolve().parent / "cpp_kernels" / "source_lines.cpp"


def _line(marker: str, path: Path = SOURCE) -> int:
    """The line of ``path`` holding ``marker`` (1-based)."""
    rows = [i for i, row in enumerate(path.read_text().splitlines(), 1) if marker in row]
    assert len(rows) == 1, (marker, rows)
    return rows[0]


def _kernel(tmp_path, function: str, flags=None):
    import npusim.cpp as cpp
    lib = tmp_path / "source_lines.so"
    if not lib.is_file():
        subprocess.run([_compiler(), "-std=c++17", "-shared", "-fPIC", "-O1",
                        *(builder.SOURCE_LINE_FLAGS if flags is None else flags), "-w",
                        f"-I{builder.INCLUDE_DIR}", "-o", str(lib), str(SOURCE)], check=True)
    return cpp.CppKernel(builder.Build(lib, 0.0, False, "", [], "aiv"), function, "aiv")


def _launch(kernel, **kw):
    from npusim.gm import GlobalMemory
    from npusim.launch import run_kernel
    from npusim.soc import get_soc
    soc = get_soc("Ascend910B1")
    gm = GlobalMemory(soc.memory_size)
    x, z = gm.malloc(256), gm.malloc(256)
    gm.write(x, np.arange(64, dtype=np.float32))
    prof = run_kernel(kernel, 1, (x, z), soc=soc, gm=gm, **kw)
    return prof, np.frombuffer(gm.view(z, 256), np.float32)


@needs_compiler
def test_race_names_the_cpp_line(tmp_path):
    """vadd reads the tile copy_gm_to_ubuf writes, with no flag between: the Sync error
    names source_lines.cpp and the vadd line (inside the inline helper), not stub_fun.h."""
    from npusim.errors import SyncError
    with pytest.raises(SyncError) as got:
        _launch(_kernel(tmp_path, "lines_race"))
    line = f"source_lines.cpp:{_line('/* V */')}"
    assert got.value.line == line
    assert f"Add at {line}:" in str(got.value)


@needs_compiler
def test_profile_spans_name_the_cpp_lines(tmp_path):
    """Each instruction record of a traced launch, and its span in the Chrome trace, carries
    the line of the intrinsic's call in the kernel's file."""
    from npusim.trace import kernel_events
    prof, z = _launch(_kernel(tmp_path, "lines_ok"), keep_spans=True)
    assert np.array_equal(z, 2 * np.arange(64, dtype=np.float32))
    named = [(rec[5], line) for rec, line in zip(prof.records[0], prof.lines[0])]
    mte2, v, mte3 = (f"source_lines.cpp:{_line(m)}" for m in ("/* MTE2 */", "/* V */",
                                                              "/* MTE3 */"))
    wait = f"source_lines.cpp:{_line('/* wait MTE2 -> V */')}"
    for want in [("DataCopy", mte2), ("WaitFlag", wait), ("Add", v), ("DataCopy", mte3)]:
        assert want in named, (want, named)
    lines = {e["args"]["line"] for e in kernel_events(prof) if e.get("cat") in ("DMA",
                                                                                 "instruction")}
    assert {mte2, v, mte3} <= lines


@needs_compiler
def test_without_line_tables_the_launcher_line_stays(tmp_path):
    """A library built without npusim's source-line flags notes no frames: the message names
    the Python line that launched the kernel, as before."""
    from npusim.errors import SyncError
    with pytest.raises(SyncError) as got:
        _launch(_kernel(tmp_path, "lines_race", flags=[]))
    assert got.value.line.startswith("test_cpp_source_lines.py:")


def test_line_table_parses_addr2line_chains(monkeypatch, tmp_path):
    """addr2line -i -a output: one address, then its inlined chain innermost first; the line
    is the innermost one in the kernel's folder, npusim's layer left out."""
    from npusim.cpp import sourceline
    home = tmp_path / "op"
    out = "\n".join([
        "0x0000000000001230",
        f"{builder.INCLUDE_DIR}/stub_fun.h:86",
        "/devkit/impl/basic_api/kernel_operator_data_copy_impl.h:120",
        f"{home}/my_kernel.h:14 (discriminator 2)",
        f"{home}/my_kernel.cpp:40",
        "0x0000000000001300",
        "??:0",
    ]) + "\n"
    table = sourceline.LineTable.__new__(sourceline.LineTable)
    table.path, table.chains, table.lines = "lib.so", {}, {}
    monkeypatch.setattr(sourceline.subprocess, "run",
                        lambda *a, **k: subprocess.CompletedProcess(a, 0, out, ""))
    table.resolve([0x1230, 0x1300])
    assert table.chains[0x1300] == ()
    assert table.chains[0x1230][2] == (f"{home}/my_kernel.h", 14)

    # the runtime's globals: return addresses (one past each call), count, load bias
    pcs = (sourceline.ctypes.c_uint64 * 4)(0x5000 + 0x1231, 0x5000 + 0x1301)
    table.count, table.bias = sourceline.ctypes.c_int32(2), sourceline.ctypes.c_uint64(0x5000)
    table.raw = memoryview(pcs).cast("B")
    assert table.line() == "my_kernel.h:14"
    pcs[0] = 0x5000 + 0x1301                  # a chain of one unresolved address
    table.count.value = 1
    assert table.line() is None


def test_add_kernel_spans_and_errors_name_add_kernel_cpp(monkeypatch):
    """aclnnAdd's C++ kernel, built against asc-devkit's headers: its spans name
    add_kernel.cpp's lines (Add's, DataCopy's), and a GM read past the allocation (an x
    smaller than the tiling says) names the DataCopy line of TileIn."""
    devkit = require_devkit()
    monkeypatch.setenv("NPUSIM_ASC_DEVKIT", str(devkit))
    from npusim.errors import GmAccessError
    from npusim.gm import GlobalMemory
    from npusim.kernels.add import cpp as add_cpp
    from npusim.kernels.add import tiling as add_tiling
    from npusim.launch import run_kernel
    from npusim.soc import get_soc
    src = add_cpp.SOURCE
    kernel = add_cpp.kernel()
    soc = get_soc("Ascend910B1")
    gm = GlobalMemory(soc.memory_size)
    n = 4096
    x, y, z = (gm.malloc(n * 4) for _ in range(3))
    gm.write(x, np.ones(n, np.float32))
    gm.write(y, np.ones(n, np.float32))
    td = add_tiling.tiling(soc, n, np.float32, np.float32, np.float32)
    prof = run_kernel(kernel, td.blockDim, (x, y, z, 0, add_cpp.tiling_bytes(td)), soc=soc,
                      gm=gm, keep_spans=True)
    named = {(rec[5], line) for rec, line in zip(prof.records[0], prof.lines[0])}
    add_line = f"add_kernel.cpp:{_line('AscendC::Add(zLocal, xLocal, yLocal, count);', src)}"
    copy_in = f"add_kernel.cpp:{_line('AscendC::DataCopy(local, gm, count);', src)}"
    assert ("Add", add_line) in named and ("DataCopy", copy_in) in named, named
    assert all(line.startswith("add_kernel.cpp:") for _, line in named
               if _ != "scalar"), named
    small = gm.malloc(1024)                   # a quarter of what block 0 reads
    with pytest.raises(GmAccessError) as got:
        run_kernel(kernel, td.blockDim, (small, y, z, 0, add_cpp.tiling_bytes(td)), soc=soc,
                   gm=gm)
    assert got.value.line == copy_in, str(got.value)
    assert re.search(r"DataCopy at add_kernel\.cpp:\d+", str(got.value))
