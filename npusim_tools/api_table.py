"""Writes ``docs/ascendc_api.md``: every Ascend C API ``npusim.ascendc`` exports, with its
dtypes, its pipe and what it costs, from the live namespace.

Run ``python -m npusim_tools.api_table`` after adding or changing an API;
``tests/test_api_table.py`` fails when the file is out of date or an exported API has no
row. The families (pipe, cost rule) and the dtypes are stated here once per API; the
summary column is the first sentence of the API's docstring. Cost symbols: ``n`` elements,
``rate`` elements per cycle per AIV (``npusim.ascendc.vector.RATE_SIMPLE`` /
``RATE_SLOW`` / ``RATE_CAST``), ``head`` = ``soc.vec_head_cycles``, ``dma`` =
``soc.dma_latency_cycles``, ``scalar`` = ``soc.scalar_cycles``; bytes over GM share the
device's HBM/L2 bandwidth with the other cores (docs/calibration.md).
"""
from __future__ import annotations

import inspect
import os
import sys

import npusim.ascendc as asc
from npusim.ascendc import vector

F16_F32 = "half, float"
ARITH = "half, float, int16, int32"
_SIMPLE = (f"head + ceil(n / rate), rate {vector.RATE_SIMPLE[2]} (16-bit) / "
           f"{vector.RATE_SIMPLE[4]} (32-bit)")
_SLOW = f"head + ceil(n / {vector.RATE_SLOW[4]})"
_CAST = f"head + ceil(n / {vector.RATE_CAST})"
_LEVEL0 = "level-0 form: repeatTime x ceil(lanes / rate), whatever the mask"
_DMA = "dma + bytes over the shared GM bandwidth (MTE2 in, MTE3 out)"
_MTE1 = ("L1 -> L0A / L0B: mte1_head (22) + ceil(bytes / 256 into L0A, 128 into L0B), one "
         "instruction per call (LoadData3DParamsV2: a whole base slice)")
_LIB = "the sum of the vector instructions it issues (see its docstring)"
_NONE = "nothing (no instruction)"

#: module -> (family title, pipe, default dtypes, default cost).
FAMILIES = {
    "npusim.ascendc.vector": ("Vector: element-wise", "PIPE_V", ARITH, _SIMPLE + "; " + _LEVEL0),
    "npusim.ascendc.arith": ("Vector: more arithmetic", "PIPE_V", F16_F32, _SIMPLE),
    "npusim.ascendc.compare": ("Vector: compare and select", "PIPE_V", F16_F32, _SIMPLE),
    "npusim.ascendc.reduce": ("Vector: reductions", "PIPE_V", F16_F32,
                              "head + per repeat: ceil(lanes / rate) (see docs/kernels.md)"),
    "npusim.ascendc.gather": ("Vector: gather and broadcast in UB", "PIPE_V",
                              "16- and 32-bit types", "head + ceil(n / rate)"),
    "npusim.ascendc.bilinear": ("Vector: gather and broadcast in UB", "PIPE_V", "half",
                                "the Gatherb, Brcb, Mul, Add and Adds it issues"),
    "npusim.ascendc.transpose": ("Vector: transpose", "PIPE_V", "16- and 32-bit types",
                                 "head + one cycle per 512 B repeat"),
    "npusim.ascendc.sort": ("Vector: sort", "PIPE_V", F16_F32,
                            "head + one repeat per 32 elements (Sort32, MrgSort per element)"),
    "npusim.ascendc.broadcast": ("Vector: broadcast", "PIPE_V", "16- and 32-bit types",
                                 "the copies and Brcb it issues"),
    "npusim.ascendc.repeat": ("Vector unit registers", "PIPE_S / none", "-", _NONE),
    "npusim.ascendc.datacopy": ("Data movement", "PIPE_MTE2 / PIPE_MTE3 / PIPE_V", "any",
                                _DMA),
    "npusim.ascendc.pipe": ("Memory management", "-", "-", _NONE),
    "npusim.ascendc.tensor": ("Tensors", "-", "any", _NONE),
    "npusim.ascendc.sync": ("Intra-core synchronisation", "the event's pipes", "-",
                            "0 cycles: an edge of the pipes' timeline"),
    "npusim.ascendc.syncall": ("Inter-core synchronisation", "PIPE_ALL", "-",
                               "waits for every block (sync_all launches)"),
    "npusim.ascendc.atomic": ("Atomic GM stores", "PIPE_S", "half, float, int32 (SetAtomicAdd)",
                              "scalar; the MTE3 stores then accumulate"),
    "npusim.ascendc.core": ("Block indexing", "PIPE_S", "-", "scalar"),
    "npusim.ascendc.scalar": ("Tiling", "PIPE_S", "-",
                              "scalar: a 64 B line missed and one cost per word of the struct"),
    "npusim.ascendc.crosscore": ("Mixed launches: cross-core", "PIPE_S", "-",
                                 "scalar; flags are edges between the cores' timelines"),
    "npusim.ascendc.cube.datamove": ("Cube: data movement", "PIPE_MTE1 / PIPE_MTE2",
                                     "half, bfloat16, float, int8", _MTE1 + "; from GM: " + _DMA),
    "npusim.ascendc.cube.load3d": ("Cube: Load3D registers", "PIPE_S", "-",
                                   "1 cycle (a register write)"),
    "npusim.ascendc.cube.mmad": ("Cube: Mmad", "PIPE_M", "half, bfloat16, float, int8",
                                 "mmad_head (22) + ceil(m/16) x ceil(n/16) x ceil(k/k0) steps, "
                                 "k0 = 32 B / sizeof(T); one cycle per step for half/bf16 "
                                 "(16x16x16) and int8 (16x16x32), two for float (16x16x8 as "
                                 "16x16x4 a cycle); m, n or k = 0: nothing. unitFlag 3 releases "
                                 "C's first 16 x 16 fractal after mmad_head + its k steps"),
    "npusim.ascendc.cube.fixpipe": ("Cube: Fixpipe", "PIPE_FIX", "float -> half, bfloat16, float",
                                    "to L1: fixpipe_head (22) + ceil(elements / 64); to GM: a "
                                    "DMA write on FIX costed as MTE3's (dma_write latency + "
                                    "bytes over the shared GM bandwidth); a V* mode adds "
                                    "fixpipe_head + ceil(8 nSize / 32) for its table. unitFlag: "
                                    "starts on the Mmad's first fractal, ends no earlier than "
                                    "the Mmad's end + ceil(256 / 64); its waits count as FIX "
                                    "time (msprof)"),
    "npusim.ascendc.cube.l0c_copy": ("Cube: Fixpipe registers", "PIPE_S", "-",
                                     "1 cycle (a register write); DataCopy out of L0C with "
                                     "DataCopyCO12DstParams costs what Fixpipe does"),
    "npusim.ascendc.socstate": ("Control registers", "PIPE_S", "-",
                                "1 cycle per register written (4 on an AIC, 3 on an AIV)"),
    "npusim.ascendc.lib.math": ("High-level math (library)", "PIPE_V", F16_F32, _LIB),
    "npusim.ascendc.lib.normalization": ("High-level normalization (library)", "PIPE_V",
                                         F16_F32, _LIB),
    "npusim.ascendc.lib.softmax": ("High-level SoftMax (library)", "PIPE_V", F16_F32, _LIB),
    "npusim.ascendc.lib.quantization": ("High-level quantization (library)", "PIPE_V",
                                        "half, float -> int8", _LIB),
    "npusim.ascendc.aipp": ("Image pre-processing (AIPP)", "PIPE_S", "uint8 images",
                            "scalar (the AIPP register writes)"),
    "npusim.ascendc.lib.matmul": ("High-level Matmul (library)", "cube pipes",
                                  "half, bfloat16, float", "the cube instructions it issues"),
    "npusim.ascendc.lib.matmul_tiling": ("Matmul tiling (host)", "host", "-", _NONE),
    "npusim.ascendc.lib.matmul_config": ("Matmul templates (MatmulConfig)", "-", "-", _NONE),
}

#: API -> (dtypes, cost) where they differ from the family's.
OVERRIDES = {
    "Div": (F16_F32, _SLOW), "Sqrt": (F16_F32, _SLOW), "Exp": (F16_F32, _SLOW),
    "Ln": (F16_F32, _SLOW), "Abs": (F16_F32, None), "Reciprocal": (F16_F32, None),
    "Relu": ("half, float, int32", None), "Power": ("float", _SLOW),
    "Duplicate": ("16- and 32-bit types, bfloat16 included", None),
    "Cast": ("pairs of half, float, bfloat16, int8, uint8, int16, int32, int64 (the SoC's "
             "Cast table)", _CAST),
    "Adds": (ARITH, None), "Muls": (ARITH, None), "Maxs": (ARITH, None), "Mins": (ARITH, None),
    "AddRelu": ("half, float, int16", None), "SubRelu": ("half, float, int16", None),
    "Not": ("int16, uint16", None), "And": ("int16, uint16", None), "Or": ("int16, uint16", None),
    "ShiftLeft": ("int16, uint16, int32, uint32", None),
    "ShiftRight": ("int16, uint16, int32, uint32", None),
    "Rsqrt": (F16_F32, _SLOW),
    "Select": ("half, float (mask: uint8 bits)", None),
    "GetCmpMask": ("-", "head + 1 cycle on PIPE_V (the CMPMASK register moves through UB)"),
    "SetCmpMask": ("-", "head + 1 cycle on PIPE_V (the CMPMASK register moves through UB)"),
    "DataCopyPad": ("any", _DMA + "; rows padded to 32 B in UB"),
    "Copy": ("16- and 32-bit types", "head + one repeat per 256 B (PIPE_V, UB -> UB)"),
    "SetPadValue": ("-", _NONE),
    "GetTPipePtr": ("-", _NONE), "GetGatherMaskRemainCount": ("-", "1 cycle (a register read)"),
    "PipeBarrier": ("-", "0 cycles: the pipe (PIPE_ALL: every pipe) drains first"),
    "LoadDataWithTranspose": (None, "L1 -> L0A / L0B: mte1_head (22) + ceil(bytes / 256 into "
                              "L0A, 128 into L0B), one instruction per call"),
}

#: API -> pipe where it differs from the family's.
PIPE_OVERRIDES = {"GetGatherMaskRemainCount": "PIPE_S"}

_KINDS = ("function", "class", "constant")


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "class"
    return "function" if callable(obj) else "constant"


def _summary(obj) -> str:
    doc = inspect.getdoc(obj) if _kind(obj) != "constant" else None
    if not doc:
        return ""
    first = doc.strip().split("\n\n")[0].replace("\n", " ")
    end = first.find(". ")
    first = first if end < 0 else first[:end + 1]
    return first.replace("|", "\\|")[:160]


def rows() -> list[dict]:
    """One dict per exported name of ``npusim.ascendc``: name, family, kind, pipe, dtypes,
    cost, summary (functions and classes); constants with their value's type."""
    out = []
    for name in sorted(set(asc.__all__), key=str.lower):
        obj = getattr(asc, name)
        kind = _kind(obj)
        module = getattr(obj, "__module__", None) if kind != "constant" else None
        fam = FAMILIES.get(module)
        if kind == "function" and fam is not None:
            title, pipe, dtypes, cost = fam
            o_dtypes, o_cost = OVERRIDES.get(name, (None, None))
            pipe = PIPE_OVERRIDES.get(name, pipe)
            out.append({"name": name, "family": title, "kind": kind, "pipe": pipe,
                        "dtypes": o_dtypes or dtypes, "cost": o_cost or cost,
                        "summary": _summary(obj), "module": module})
        else:
            out.append({"name": name, "family": "Types, parameters and constants", "kind": kind,
                        "pipe": "", "dtypes": "", "cost": "", "module": module or "",
                        "summary": _summary(obj) or (
                            f"module {obj.__name__}" if inspect.ismodule(obj)   # no path
                            else f"{type(obj).__name__} {obj!r}"[:80])})
    return out


def render() -> str:
    """The text of ``docs/ascendc_api.md``."""
    all_rows = rows()
    lines = ["# The Ascend C API of npusim.ascendc", "",
             "<!-- generated by `python -m npusim_tools.api_table`; tests/test_api_table.py "
             "checks it is up to date -->", "",
             f"{len(all_rows)} names: every one `from npusim.ascendc import *` gives. Cost "
             "symbols: `n` elements, `rate` elements per cycle per AIV, `head` the SoC's "
             "`vec_head_cycles`, `dma` its `dma_latency_cycles`; GM bytes share the device's "
             "HBM/L2 bandwidth (docs/calibration.md). A vector API's level-0 form "
             "(mask, repeatTime, repeat params) costs its repeats whatever the mask. Every UB "
             "operand starts 32 B aligned; `DataCopy` moves whole 32 B blocks (`DataCopyPad` "
             "for the rest). The guide: docs/kernels.md.", ""]
    families = list(dict.fromkeys(f[0] for f in FAMILIES.values())) + \
        ["Types, parameters and constants"]
    for fam in families:
        rs = [r for r in all_rows if r["family"] == fam]
        if not rs:
            continue
        lines += [f"## {fam}", ""]
        if fam == "Types, parameters and constants":
            lines += ["| name | kind | what |", "|---|---|---|"]
            lines += [f"| `{r['name']}` | {r['kind']} | {r['summary']} |" for r in rs]
        else:
            lines += ["| API | pipe | dtypes | cost (cycles) | what |", "|---|---|---|---|---|"]
            lines += [f"| `{r['name']}` | {r['pipe']} | {r['dtypes']} | {r['cost']} | "
                      f"{r['summary']} |" for r in rs]
        lines.append("")
    return "\n".join(lines)


DOC_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                        "ascendc_api.md")


def main(argv=None) -> int:
    """Write the table to ``docs/ascendc_api.md`` (or the path given); with ``--check``,
    write nothing and exit 1 if the file differs from what would be written."""
    import argparse
    parser = argparse.ArgumentParser(prog="python -m npusim_tools.api_table",
                                     description=main.__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", default=DOC_PATH,
                        help="where to write the table (default: docs/ascendc_api.md)")
    parser.add_argument("--check", action="store_true",
                        help="only check that the file is up to date (exit 1 if not)")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    text = render()
    if args.check:
        try:
            with open(args.path, encoding="utf-8") as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        print(f"{args.path}: {'up to date' if same else 'out of date'}")
        return 0 if same else 1
    with open(args.path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"{args.path}: {len(rows())} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
