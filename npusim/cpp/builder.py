"""Building an Ascend C kernel source for npusim: finding the user's headers and a compiler,
generating what the CPU-debug build needs, compiling (cached) and loading the library.

The kernel compiles with the host's g++ (or clang++) in Ascend C's CPU-debug configuration
(``-DASCENDC_CPU_DEBUG=1`` and the architecture macros of an A2/A3 AIV or AIC build) against
the user's own asc-devkit or CANN headers, plus npusim's intrinsic layer (``include/`` beside
this module: stub_def.h, stub_fun.h, half, bfloat16_t, the runtime). Nothing of asc-devkit is
copied: ``kernel_tiling/kernel_tiling.h`` is generated into the cache by the devkit's own
script, and the ``AscendC::check`` hooks the headers declare are defined from their own
declarations (each returns "valid": npusim's checker does the checking).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from npusim.errors import NpuSimError

#: npusim's intrinsic layer (package data).
INCLUDE_DIR = Path(__file__).resolve().parent / "include"
#: Bumped when the source rewrite or the unit's layout changes, so that cached builds are
#: rebuilt (the intrinsic layer's files and GLUE are hashed themselves).
GLUE_VERSION = "4"

#: Ascend C's CPU-debug build of an A2/A3 (dav-c220, __NPU_ARCH__ 2201) AIV or AIC kernel:
#: the definitions of Huawei's own unit-test build for ascend910B1.
ARCH_DEFINES = {
    "aiv": ["-DASCENDC_CPU_DEBUG=1", "-D__NPU_ARCH__=2201", "-D__DAV_C220__",
            "-D__DAV_C220_VEC__", "-D__DAV_VEC__"],
    "aic": ["-DASCENDC_CPU_DEBUG=1", "-D__NPU_ARCH__=2201", "-D__DAV_C220__",
            "-D__DAV_C220_CUBE__", "-D__DAV_CUBE__"],
    # a MIX kernel (or a source with both kinds of kernel): one build for both kinds of
    # core, neither __DAV_CUBE__ nor __DAV_VEC__, the headers choosing by g_coreType at run
    # time (ASCEND_IS_AIC/AIV in CPU mode; the CPU-mode Matmul API is the client on the
    # AIVs and its server on the AIC: kfc_register_obj.h, matmul_intf.h)
    "mix": ["-DASCENDC_CPU_DEBUG=1", "-D__NPU_ARCH__=2201", "-D__DAV_C220__"],
}
#: What makes ``GlobalTensor::SetL2CacheHint`` work on A2: the device build of Huawei's
#: compiler defines ``L2_CACHE_HINT`` for Ascend910B kernels (asc-devkit's kernel-launch
#: compiler, tools/ascc/asc_plugin asc_compile_options.cpp, and its operator build,
#: tools/build/asc_op_compile_base compile_op.py), unless the build defines ASCENDC_DEBUG
#: or runs the sanitizer. Under it ``L2CacheAlter`` (impl/basic_api/utils/
#: kernel_utils_macros.h) moves a CACHE_MODE_DISABLE tensor's address up by the runtime's
#: ``g_opSystemRunCfg.l2Cacheoffset``; npusim sets that offset to L2_BYPASS_OFFSET (GLUE)
#: and its runtime reads an address in that window as the same bytes with L2 bypassed
#: (npusim.cpp.dispatch), as the Python API's ``GlobalTensor.SetL2CacheHint`` does.
L2_HINT_DEFINE = "-DL2_CACHE_HINT"
#: The L2 bypass window's offset: bit 62, above every host address (x86-64 and arm64 user
#: space are below 2**48 (2**52 with large addresses); arm64's memory tags are bits 56-59).
L2_BYPASS_OFFSET = 1 << 62
#: What checker messages and profile spans need to name the kernel's C++ line
#: (npusim/cpp/sourceline.py): line tables with their inlined calls (-g1), and frame
#: pointers, which the runtime follows from each intrinsic to the kernel's frames (only in
#: a library that says it has them: NPUSIM_SOURCE_LINES).
SOURCE_LINE_FLAGS = ["-g1", "-fno-omit-frame-pointer", "-DNPUSIM_SOURCE_LINES=1"]
#: SoCs whose kernels build for dav-c220 (Atlas A2 training/inference series, A3).
A2_SOCS = ("Ascend910B", "Ascend910_93")


class CppBuildError(NpuSimError):
    """A C++ kernel could not be built: no compiler, no Ascend C headers, or a compile error
    (the compiler's messages are in the exception text)."""

    def __init__(self, message: str):
        super().__init__(message)


def find_devkit(path: str | os.PathLike | None = None) -> Path:
    """The root of the user's Ascend C headers: ``path``, else ``$NPUSIM_ASC_DEVKIT`` (an
    asc-devkit checkout), else a CANN installation's Ascend C headers
    (``$ASCEND_HOME_PATH`` or ``/usr/local/Ascend/ascend-toolkit/latest``, under
    ``compiler/asc`` or ``aarch64-linux/asc`` / ``x86_64-linux/asc``).

    Raises:
        CppBuildError: none found (the message says which setting to make).
    """
    cands = []
    if path:
        cands.append(Path(path))
    env = os.environ.get("NPUSIM_ASC_DEVKIT")
    if env:
        cands.append(Path(env))
    for home in (os.environ.get("ASCEND_HOME_PATH"), "/usr/local/Ascend/ascend-toolkit/latest"):
        if home:
            for sub in ("compiler/asc", "x86_64-linux/asc", "aarch64-linux/asc", "asc"):
                cands.append(Path(home) / sub)
    for c in cands:
        if (c / "include" / "kernel_operator.h").is_file() or \
                (c / "include" / "basic_api" / "kernel_tpipe.h").is_file():
            return c.resolve()
    raise CppBuildError("no Ascend C headers found: set NPUSIM_ASC_DEVKIT to an asc-devkit "
                        "checkout (the folder holding include/ and impl/) or install CANN "
                        "(docs/cpp.md)" + (f"; looked in {', '.join(map(str, cands))}"
                                           if cands else ""))


def find_compiler() -> str:
    """``$CXX``, else g++, else clang++ from PATH.

    Raises:
        CppBuildError: none found.
    """
    for c in (os.environ.get("CXX"), "g++", "clang++"):
        if c and shutil.which(c):
            return shutil.which(c)
    raise CppBuildError("no C++ compiler found: install g++ (>= 9) or clang++, or set CXX")


def include_dirs(devkit: Path) -> list[Path]:
    """The include path of Ascend C's kernel headers inside ``devkit`` (its CMake's
    asc_kernel_headers and asc_host_headers targets)."""
    subs = ["", "include", "include/basic_api", "include/simt_api", "impl", "impl/basic_api",
            "impl/simt_api", "include/utils", "include/adv_api"]
    return [devkit / s if s else devkit for s in subs]


def cache_root() -> Path:
    """``$NPUSIM_CACHE/cpp`` or ``~/.cache/npusim/cpp``."""
    base = os.environ.get("NPUSIM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                          "npusim")
    return Path(base) / "cpp"


@functools.lru_cache(maxsize=8)
def _devkit_version(devkit: Path) -> str:
    """A fingerprint of the headers: the git commit when there is one, else the newest
    modification time and count of their files (computed once per process: headers that
    change while a process runs are not noticed until the next one)."""
    head = devkit / ".git" / "HEAD"
    if head.is_file():
        return head.read_text().strip()
    newest, count = 0.0, 0
    for sub in ("include", "impl"):
        for root, _dirs, files in os.walk(devkit / sub):
            for f in files:
                if f.endswith(".h"):
                    count += 1
                    newest = max(newest, os.stat(os.path.join(root, f)).st_mtime)
    return f"{newest:.3f}:{count}"


@functools.lru_cache(maxsize=1)
def _own_layer_hash() -> str:
    h = hashlib.sha256(GLUE_VERSION.encode())
    for p in sorted(INCLUDE_DIR.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(INCLUDE_DIR)).encode())
            h.update(p.read_bytes())
    h.update(GLUE.encode())
    return h.hexdigest()


_CHECK_DECL = re.compile(
    r"^(bool|void)\s+(Check[A-Za-z0-9_]*Impl[A-Za-z0-9_]*)\s*\(([^;{}]*)\)\s*;", re.M)


def check_hooks(devkit: Path) -> str:
    """Definitions of the ``AscendC::check::Check*Impl`` functions the headers declare (the
    CPU library's argument checks): each says "valid" (npusim's own checker runs on the
    instructions). Built from the headers' declarations, so it follows their version."""
    seen, out = set(), ["namespace AscendC {", "namespace check {"]
    utils = devkit / "impl" / "basic_api" / "utils"
    for p in sorted(utils.glob("kernel_check*.h")):
        text = p.read_text(errors="replace")
        for ret, name, params in _CHECK_DECL.findall(text):
            params = " ".join(params.split())
            params = re.sub(r"\s*=\s*[^,]+", "", params)      # no default arguments again
            if (name, params) in seen:
                continue
            seen.add((name, params))
            body = "{ return true; }" if ret == "bool" else "{}"
            out.append(f"{ret} {name}({params}) {body}")
    out += ["}  // namespace check", "}  // namespace AscendC"]
    return "\n".join(out) + "\n"


def kernel_tiling_header(devkit: Path, out_dir: Path) -> Path:
    """``kernel_tiling/kernel_tiling.h`` generated under ``out_dir`` by the devkit's own
    ``impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py`` (as its CMake build does)."""
    target = out_dir / "kernel_tiling" / "kernel_tiling.h"
    if target.is_file():
        return target
    script = devkit / "impl" / "adv_api" / "cmake" / "scripts" / "gen_kernel_tiling_data_def.py"
    if not script.is_file():
        raise CppBuildError(f"{script} not found: these headers cannot generate "
                            "kernel_tiling/kernel_tiling.h")
    tmp = out_dir / f"kernel_tiling.{os.getpid()}.h"
    subprocess.run([sys.executable, str(script), str(devkit / "include" / "adv_api"), str(tmp)],
                   check=True, capture_output=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, target)
    return target


#: ``kernel<<<blockDim, l2ctrl, stream>>>(args)``: the launch syntax of the device compiler.
_CHEVRON = re.compile(r"\b([A-Za-z_][A-Za-z0-9_:<>, ]*?)\s*<<<((?:(?!<<<|>>>).)*?)>>>\s*\(", re.S)


def rewrite_source(text: str) -> str:
    """The user's source with ``k<<<b, l2, s>>>(...)`` written as a call npusim can compile
    (``npusim::Launch{"k", &k, b, nullptr}(...)``, npusim_launch.h; ``k`` may be a template
    instance) and ``main`` renamed so that the
    library keeps the sample's host program as ``npusim_host_main``."""
    def launch(m):
        kernel, config = m.group(1).strip(), m.group(2)
        depth, cut = 0, len(config)
        for i, ch in enumerate(config):            # blockDim: up to the first top-level comma
            depth += ch in "(<[{"
            depth -= ch in ")>]}"
            if ch == "," and depth == 0:
                cut = i
                break
        name = kernel.replace('"', "")
        return (f'npusim::Launch{{"{name}", reinterpret_cast<void*>(&{kernel}), '
                f"static_cast<uint64_t>({config[:cut].strip()}), nullptr}}(")
    text = _CHEVRON.sub(launch, text)
    text = re.sub(r"\bint(32_t)?\s+main\s*\(", "int npusim_host_main(", text)
    return text


GLUE = """
/* npusim glue: the headers' host buffers for UB, L1, L0A, L0B, L0C, BT and FB. */
extern "C" void npusim_hw_buffers(void** bases, uint64_t* sizes)
{
    using AscendC::Hardware;
    const Hardware hw[7] = {Hardware::UB, Hardware::L1, Hardware::L0A, Hardware::L0B,
                            Hardware::L0C, Hardware::BIAS, Hardware::FIXBUF};
    auto& d = AscendC::ConstDefiner::Instance();
    for (int i = 0; i < 7; ++i) {
        bases[i] = d.GetHardwareBaseAddr(hw[i]);
        sizes[i] = d.bufferInitLen.at(hw[i]);
    }
}
/* Per-core state of the headers that assume one process per core: cleared before each block.
 * ConstDefiner's set of used LocalMemAllocator positions is private; an explicit template
 * instantiation may name a private member (C++17 [temp.spec]/6), which gives its address. */
template <typename Tag, typename Tag::type M> struct NpusimMember {
    friend typename Tag::type npusim_member(Tag) { return M; }
};
struct NpusimAllocatorUsed {
    using type = std::set<AscendC::Hardware> AscendC::ConstDefiner::*;
    friend type npusim_member(NpusimAllocatorUsed);
};
template struct NpusimMember<NpusimAllocatorUsed, &AscendC::ConstDefiner::allocatorUsed>;
extern "C" void npusim_reset_core_state()
{
    (AscendC::ConstDefiner::Instance().*npusim_member(NpusimAllocatorUsed{})).clear();
}
/* The system workspace (the Matmul API's message area, GetSysWorkSpacePtr): in CPU mode the
 * closed library defines these; npusim sets it per launch from the kernel's workspace
 * parameter (npusim.cpp.workspace_parameter). */
__gm__ uint8_t* __gm__ GetSysWorkSpacePtr() { return g_sysWorkspaceReserved; }
void SetSysWorkSpacePtr(__gm__ uint8_t* workspace) { g_sysWorkspaceReserved = workspace; }
extern "C" void npusim_set_sys_workspace(uint8_t* workspace) { g_sysWorkspaceReserved = workspace; }
/* The size of a core buffer by its Hardware number (kernel_check_vec_util.h declares it for
 * the CPU library's checks). */
namespace AscendC {
namespace check {
uint64_t GetHardWarebufferSize(uint8_t index)
{
    auto& lens = AscendC::ConstDefiner::Instance().bufferInitLen;
    auto it = lens.find(static_cast<AscendC::Hardware>(index));
    return it == lens.end() ? 0 : it->second;
}
}  // namespace check
}  // namespace AscendC
/* The runtime's L2 cache hint configuration (kernel_utils_macros.h declares it under
 * L2_CACHE_HINT): L2CacheAlter adds l2Cacheoffset to the address of a GlobalTensor set to
 * CACHE_MODE_DISABLE; npusim's runtime reads an address in that window as the same GM bytes
 * copied around L2 (npusim.cpp.builder.L2_BYPASS_OFFSET). */
#if defined(L2_CACHE_HINT)
__gm__ struct OpSystemRunCfg g_opSystemRunCfg = {NPUSIM_L2_BYPASS_OFFSET};
#endif
/* The headers' process lock (kernel_process_lock.h): npusim runs one core at a time. */
namespace AscendC {
ProcessLock* ProcessLock::processLock = nullptr;
ProcessLock::ProcessLock() {}
ProcessLock::~ProcessLock() {}
ProcessLock* ProcessLock::CreateLock() { static ProcessLock lock; return &lock; }
void ProcessLock::FreeLock() {}
void ProcessLock::UnInit() {}
int ProcessLock::Read() { return 0; }
int ProcessLock::Write() { return 0; }
int ProcessLock::Unlock() { return 0; }
}
"""
#: the window of L2CacheAlter (the one constant, here and in npusim.cpp.dispatch)
GLUE = GLUE.replace("NPUSIM_L2_BYPASS_OFFSET", f"{L2_BYPASS_OFFSET:#x}ull")


#: A source whose host code uses Ascend C's host tiling API (PlatformAscendC, the Matmul tiling).
_HOST_TILING = re.compile(r'#\s*include\s*["<]tiling/(tiling_api|platform/platform_ascendc)\.h[">]')
#: The host tiling sources compiled for it (the user's headers' own, under impl/adv_api/tiling).
HOST_TILING_SOURCES = ("matmul/bmm_tiling.cpp", "matmul/math_util.cpp", "matmul/matmul_tiling.cpp",
                       "matmul/matmul_tiling_algorithm.cpp", "matmul/matmul_tiling_base.cpp",
                       "transpose/confusion_transpose_tiling_impl.cpp", "math/axpy_tiling_impl.cpp")


#: npusim's stand-ins the host tiling sources compile against (their hash keys the library).
_TILING_STANDINS = ("register/tilingdata_base.h", "platform/soc_spec.h", "dlog_pub.h",
                    "securec.h", "graph/types.h", "graph/tensor.h", "npusim_tiling_support.cpp")
#: Headers at the paths a CANN installation puts them, forwarding to the devkit's own
#: (written into the cache): path -> the devkit file.
INSTALL_PATHS = {"tiling/tiling_api.h": "include/adv_api/tiling_api.h",
                 "lib/matmul_intf.h": "include/adv_api/matmul/matmul_intf.h"}


def install_layout(devkit: Path, gen: Path) -> None:
    """Write ``gen/<path>`` forwarding to the devkit's file for each of INSTALL_PATHS."""
    for rel, target in INSTALL_PATHS.items():
        fwd = gen / rel
        if not fwd.is_file() and (devkit / target).is_file():
            fwd.parent.mkdir(parents=True, exist_ok=True)
            fwd.write_text(f'#include "{devkit / target}"\n')


def host_tiling_library(cxx: str, devkit: Path, gen: Path) -> Path:
    """A static library of the devkit's own host tiling sources (HOST_TILING_SOURCES, as
    CANN's ``tiling_api`` library holds them) compiled against npusim's stand-ins for the
    closed CANN pieces they include (``register/tilingdata_base.h``, ``platform/soc_spec.h``,
    ``dlog_pub.h``, ``securec.h``; include/), built once per devkit, compiler and layer
    (about 45 s).

    Raises:
        CppBuildError: a source failed to compile (its messages).
    """
    h = hashlib.sha256((cxx + " ".join(HOST_TILING_SOURCES)).encode())
    for name in _TILING_STANDINS:                  # what the sources see of npusim's layer
        h.update((INCLUDE_DIR / name).read_bytes())
    key = h.hexdigest()[:16]
    out = gen / f"host-tiling-{key}"
    lib = out / "libnpusim_tiling.a"
    if lib.is_file():
        return lib
    out.mkdir(parents=True, exist_ok=True)
    tiling = devkit / "impl" / "adv_api" / "tiling"
    incs = [INCLUDE_DIR, gen, *include_dirs(devkit), devkit / "impl" / "adv_api",
            tiling / "matmul"]
    objs = []
    for src in [tiling / s for s in HOST_TILING_SOURCES] + [INCLUDE_DIR / "npusim_tiling_support.cpp"]:
        obj = out / (src.stem + ".o")
        r = subprocess.run([cxx, "-std=c++17", "-fPIC", "-O1", "-w", "-c",
                            *[f"-I{p}" for p in incs], "-o", str(obj), str(src)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            msg = "\n".join(line for line in r.stderr.splitlines() if "error" in line)[:4000]
            raise CppBuildError(f"compiling the host tiling source {src.name} failed:\n{msg}")
        objs.append(str(obj))
    tmp = out / f"lib.{os.getpid()}.a"
    subprocess.run(["ar", "rcs", str(tmp), *objs], check=True, capture_output=True)
    os.replace(tmp, lib)
    return lib


def generated_dir(devkit: Path) -> Path:
    """The cache folder of what is generated from ``devkit`` (kernel_tiling.h, the install
    layout, the host tiling library, precompiled headers), created if missing."""
    gen = cache_root() / "devkit" / hashlib.sha256(
        (str(devkit) + _devkit_version(devkit)).encode()).hexdigest()[:16]
    gen.mkdir(parents=True, exist_ok=True)
    return gen


def host_tiling_program(source: str | os.PathLike, devkit=None) -> Path:
    """A shared library of a host-only program (no kernel headers) that calls Ascend C's
    host tiling API: ``source`` compiled with npusim's runtime and PlatformAscendC (the
    source includes ``npusim_runtime.cpp`` and ``npusim_platform.cpp``) and linked with
    :func:`host_tiling_library`; cached by the source's bytes, the compiler, the headers'
    version and npusim's layer (a few seconds cold once the tiling library is built).
    Load it with ``ctypes`` and :class:`npusim.cpp.dispatch.KernelRuntime`, which answers
    its PlatformAscendC queries.

    Raises:
        CppBuildError: no compiler, no headers, or the compile failed (its messages).
    """
    source = Path(source).resolve()
    devkit = find_devkit(devkit)
    cxx = find_compiler()
    gen = generated_dir(devkit)
    install_layout(devkit, gen)
    lib_a = host_tiling_library(cxx, devkit, gen)
    h = hashlib.sha256(source.read_bytes())
    for part in (cxx, str(devkit), _devkit_version(devkit), _own_layer_hash(), str(lib_a)):
        h.update(part.encode())
    out = cache_root() / f"host-{h.hexdigest()[:24]}"
    lib = out / f"{source.stem}.so"
    if lib.is_file():
        return lib
    out.mkdir(parents=True, exist_ok=True)
    incs = [INCLUDE_DIR, gen, *include_dirs(devkit), devkit / "impl" / "adv_api"]
    tmp = out / f"tmp.{os.getpid()}.so"
    r = subprocess.run([cxx, "-std=c++17", "-shared", "-fPIC", "-O1", "-w",
                        *[f"-I{p}" for p in incs], "-o", str(tmp), str(source), str(lib_a)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        msg = "\n".join(line for line in r.stderr.splitlines() if "error" in line)[:4000]
        raise CppBuildError(f"compiling {source.name} failed:\n{msg or r.stderr[-4000:]}")
    os.replace(tmp, lib)
    return lib


def _precompiled_header(cxx: str, flags: list, incs: list, gen: Path) -> Path | None:
    """A folder holding ``npusim_pch.h`` (our layer and ``kernel_operator.h``) and its
    precompiled form for these flags, built on first use; None when the compiler cannot
    (the build then parses the headers itself)."""
    cflags = [f for f in flags if f != "-shared"]
    # npusim's own layer is part of the precompiled header (stub_def.h, stub_fun.h...)
    key = hashlib.sha256((cxx + " ".join(cflags) + _own_layer_hash()).encode()).hexdigest()[:16]
    d = gen / f"pch-{key}"
    gch = d / "npusim_pch.h.gch"
    if gch.is_file():
        return d
    d.mkdir(parents=True, exist_ok=True)
    header = d / "npusim_pch.h"
    header.write_text('#include "npusim_launch.h"\n#include "kernel_operator.h"\n')
    tmp = d / f"npusim_pch.h.gch.{os.getpid()}"
    r = subprocess.run([cxx, *cflags, "-x", "c++-header", *[f"-I{p}" for p in incs], "-o",
                        str(tmp), str(header)], capture_output=True, text=True)
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        return None
    os.replace(tmp, gch)
    return d


def workspace_parameters(text: str) -> dict:
    """Kernel name -> the index of its parameter named like ``workspace`` (the system
    workspace a launch hands the kernel: GetSysWorkSpacePtr in CPU mode), for the
    ``__global__`` functions of a source that have one."""
    out = {}
    for m in re.finditer(r"__global__(?:[^(;{]|\([^()]*\))*?\b(?!__mix__\b)([A-Za-z_]\w*)\s*"
                         r"\(([^)]*)\)", text):
        params = [p.strip() for p in m.group(2).split(",")]
        for i, p in enumerate(params):
            if re.search(r"\b\w*workspace\w*\s*$", p, re.I):
                out[m.group(1)] = i
                break
    return out


def selected_text(text: str, defines=(), cxx: str | None = None) -> str:
    """``text`` (a kernel source) with its own ``#if``/``#ifdef`` branches chosen as the build
    chooses them: the compiler's preprocessor under the CPU-debug A2 definitions and the
    user's ``defines`` (e.g. a ``SCENARIO_NUM`` that selects ``__cube__`` or
    ``ASCENDC_CUBE_ONLY``), its ``#include`` lines kept as text, not read (their macros are
    not needed to tell the kernels' kinds), ``#define`` lines kept (``-dD``). The text itself
    when the preprocessor fails."""
    if "#if" not in text:
        return text
    body = re.sub(r"^\s*#\s*include\b", "__npusim_include__", text, flags=re.M)
    try:
        r = subprocess.run([cxx or find_compiler(), "-E", "-P", "-dD", "-x", "c++", "-std=c++17",
                            "-DASCENDC_CPU_DEBUG=1", "-D__NPU_ARCH__=2201",
                            *[f"-D{d}" for d in defines], "-"],
                           input=body, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError, NpuSimError):
        return text
    if r.returncode != 0:
        return text
    return re.sub(r"^\s*__npusim_include__", "#include", r.stdout, flags=re.M)


def kernel_core(text: str) -> str:
    """"aiv", "aic" or "mix": the cores a source's kernels run on, from their ``__vector__`` /
    ``__cube__`` / ``__mix__`` qualifiers or ``KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_...)``
    (a vector kernel when nothing says otherwise; a kernel using the Matmul API without
    ``ASCENDC_CUBE_ONLY`` or ``__cube__`` is MIX: the library runs on the AIC for the AIVs)."""
    if re.search(r"__mix__|KERNEL_TYPE_MIX", text):
        return "mix"
    if (re.search(r'#\s*include\s*["<]lib/matmul_intf\.h', text) and "ASCENDC_CUBE_ONLY" not in text
            and not re.search(r"__global__[^;{(]*__cube__|__cube__[^;{(]*__global__", text)):
        return "mix"        # the Matmul API from vector code: its AIC serves it (KFC messages)
    # the qualifiers in either order (``__global__ __cube__`` or ``__cube__ __global__``)
    cube = re.search(r"__global__[^;{(]*__cube__|__cube__[^;{(]*__global__|KERNEL_TYPE_AIC_ONLY|"
                     r"#\s*define\s+ASCENDC_CUBE_ONLY", text)
    vec = re.search(r"__global__[^;{(]*__vector__|__vector__[^;{(]*__global__|"
                    r"KERNEL_TYPE_AIV_ONLY", text)
    if cube and vec:
        return "mix"
    return "aic" if cube else "aiv"


@dataclass
class Build:
    """A compiled kernel library: its path, the compile's wall time (0 when cached), the
    key it is cached under, the command line and the core it was built for."""

    library: Path
    seconds: float
    cached: bool
    key: str
    command: list = field(default_factory=list)
    core: str = "aiv"
_KERNEL_DEF = re.compile(r"__global__((?:[^;{(]|\([^()]*\))*?)\b(?!__mix__\b)([A-Za-z_]\w*)\s*\(")


def kernel_types(text: str) -> dict:
    """Kernel name -> "aiv", "aic", "mix" (one AIC, two AIVs) or "mix11" (one of each) for
    the ``__global__`` functions of a source: ``__vector__``, ``__cube__``,
    ``__mix__(1, n)`` on the function, else the source's kind (:func:`kernel_core`)."""
    whole = kernel_core(text)
    out = {}
    for m in _KERNEL_DEF.finditer(text):
        quals, name = m.group(1), m.group(2)
        mix = re.search(r"__mix__\s*\(\s*1\s*,\s*(\d)\s*\)", quals)
        if mix:
            out[name] = "mix11" if mix.group(1) == "1" else "mix"
        elif "__cube__" in quals:
            out[name] = "aic"
        elif "__vector__" in quals:
            out[name] = "aiv"
        else:
            out[name] = whole
    return out


def build(source: str | os.PathLike, *, core: str | None = None, devkit=None, defines=(),
          include=(), opt: str = "-O1", force: bool = False, pch: bool = True) -> Build:
    """Compile ``source`` (an Ascend C ``.cpp``/``.asc`` file) into a shared library for an
    A2/A3 ``core`` ("aiv", "aic" or "mix": one build for both kinds; default:
    :func:`kernel_core` of the source), cached by the source's and its folder's headers' bytes,
    the flags, the headers' version and npusim's intrinsic layer. ``opt``: -O1 by default: at
    -O0 the headers' CPU-mode TPipe (which fills every core buffer with random words through
    a std::map look-up per word) costs 0.4 s per block. ``pch``: parse the Ascend C
    headers once per flag set (a precompiled ``kernel_operator.h``, cached beside the
    generated headers) instead of once per kernel. ``L2_CACHE_HINT`` is defined as Huawei's
    A2 device build defines it, so ``GlobalTensor::SetL2CacheHint`` takes effect
    (:data:`L2_HINT_DEFINE`), except when ``defines`` has ``ASCENDC_DEBUG``, as there.

    Raises:
        CppBuildError: no compiler, no headers, or the compile failed (its messages).
    """
    source = Path(source).resolve()
    if core is None:
        core = kernel_core(selected_text(source.read_text(errors="replace"), defines))
    if core not in ARCH_DEFINES:
        raise CppBuildError(f"core {core!r}: use 'aiv', 'aic' or 'mix'")
    devkit = find_devkit(devkit)
    cxx = find_compiler()
    text = source.read_text(errors="replace")
    host_tiling = bool(_HOST_TILING.search(text))
    # the L2 cache hint as the device build has it, except in a debug build (L2_HINT_DEFINE)
    hint = [] if any(str(d).split("=")[0] == "ASCENDC_DEBUG" for d in defines) \
        else [L2_HINT_DEFINE]
    # a program with host tiling builds as the headers' host side too (__NPU_HOST__): their
    # DT_* data-type macros (kernel_type.h) would otherwise replace the names of the tiling
    # API's matmul_tiling::DataType
    flags = ["-std=c++17", "-shared", "-fPIC", opt, *SOURCE_LINE_FLAGS, "-w", *ARCH_DEFINES[core],
             *hint, *(["-D__NPU_HOST__"] if host_tiling else []), *[f"-D{d}" for d in defines]]
    h = hashlib.sha256()
    h.update(source.read_bytes())
    for p in sorted(source.parent.glob("*.h")):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    for part in (cxx, " ".join(flags), " ".join(map(str, include)), str(devkit),
                 _devkit_version(devkit), _own_layer_hash()):
        h.update(part.encode())
    if host_tiling:             # the host tiling sources linked in
        h.update(" ".join(HOST_TILING_SOURCES).encode())
    key = h.hexdigest()[:24]
    out = cache_root() / key
    lib = out / f"{source.stem}.so"
    if lib.is_file() and not force:
        return Build(lib, 0.0, True, key, [], core)
    out.mkdir(parents=True, exist_ok=True)
    gen = generated_dir(devkit)
    kernel_tiling_header(devkit, gen)
    install_layout(devkit, gen)
    hooks = gen / "npusim_check_hooks.cpp"
    if not hooks.is_file():
        hooks.write_text('#include "kernel_operator.h"\n' + check_hooks(devkit))
    incs = [INCLUDE_DIR, gen, source.parent, *map(Path, include), *include_dirs(devkit)]
    libs = [str(host_tiling_library(cxx, devkit, gen))] if host_tiling else []
    # the user's -D definitions stay out of the precompiled header's flags: the headers do
    # not read them (GCC takes a header precompiled without a macro the source defines when
    # the header does not use it), so one header serves every SCENARIO_NUM of a sample
    user = {f"-D{d}" for d in defines}
    pch_dir = _precompiled_header(cxx, [f for f in flags if f not in user], incs, gen) \
        if pch else None
    unit = out / "kernel_unit.cpp"
    unit.write_text(('#include "npusim_pch.h"\n' if pch_dir else '') +
                    '#include "npusim_launch.h"\n'
                    f'#line 1 "{source}"\n' + rewrite_source(source.read_text(errors="replace"))
                    + "\n" + GLUE + f'#include "{hooks}"\n'
                    + f'#include "{INCLUDE_DIR / "npusim_runtime.cpp"}"\n'
                    + (f'#include "{INCLUDE_DIR / "npusim_platform.cpp"}"\n' if host_tiling
                       else ""))
    cmd = [cxx, *flags, *[f"-I{p}" for p in ([pch_dir] if pch_dir else []) + incs], "-o",
           str(out / "tmp.so"), str(unit), *libs]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if r.returncode != 0:
        msg = "\n".join(line for line in r.stderr.splitlines() if "error" in line)[:4000]
        raise CppBuildError(f"compiling {source.name} failed:\n{msg or r.stderr[-4000:]}")
    os.replace(out / "tmp.so", lib)
    return Build(lib, seconds, False, key, cmd, core)
