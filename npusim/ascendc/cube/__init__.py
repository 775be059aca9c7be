"""The cube half of the AI core: its data movement, Mmad and Fixpipe, in Ascend C's names.

A cube kernel's data path (docs/reference/hardware.md §2.1 pipe assignment; DESIGN.md "The
cube half")::

    GM --DataCopy(Nd2NzParams), MTE2--> L1 (A1/B1, NZ)
       --LoadData / LoadDataWithTranspose, MTE1--> L0A (A2, ZZ) / L0B (B2, ZN)
       --Mmad, M--> L0C (CO1, NZ, float/int32)
       --Fixpipe, FIX--> GM (ND or NZ; half/bf16/int8... converted on the way)

Modules: :mod:`.datamove` (DataCopy's GM <-> L1, ND -> NZ and L1 -> bias-table paths,
LoadData, LoadDataWithTranspose), :mod:`.load3d` (LoadData3DParamsV2, SetFmatrix and the
Load3D registers), :mod:`.mmad`, :mod:`.fixpipe`; :mod:`.common` holds the
fractal geometry, operand checks and costs. ``DataCopy`` itself stays in
:mod:`npusim.ascendc.datacopy` and hands these paths to :func:`.datamove.data_copy`.

Like the vector instructions, each is a function of its operands' views and parameters;
the numerics run on numpy over whole tiles and every instruction records its pipe and cost
for the timing replay.
"""
from npusim.ascendc.cube.datamove import LoadData, LoadDataWithTranspose
from npusim.ascendc.cube.fixpipe import Fixpipe
from npusim.ascendc.cube.load3d import *  # noqa: F401,F403  (Load3Dv2 and its registers)
from npusim.ascendc.cube import load3d as _load3d
from npusim.ascendc.cube.l0c_copy import *  # noqa: F401,F403  (DataCopy out of L0C, FB)
from npusim.ascendc.cube import l0c_copy as _l0c_copy
from npusim.ascendc.cube.mmad import Mmad
from npusim.ascendc.types import (CFG_NZ, CFG_ROW_MAJOR, CO2Layout, FixpipeConfig,
                                  FixpipeParamsV220, KernelMetaType, LoadData2DParams,
                                  LoadData2dTransposeParams, MmadParams, Nd2NzParams,
                                  QuantMode_t)

__all__ = ["LoadData", "LoadDataWithTranspose", "Mmad", "Fixpipe", "Nd2NzParams",
           "LoadData2DParams", "LoadData2dTransposeParams", "MmadParams", "FixpipeParamsV220",
           "QuantMode_t", "CO2Layout", "FixpipeConfig", "CFG_NZ", "CFG_ROW_MAJOR",
           "KernelMetaType", *_load3d.__all__, *_l0c_copy.__all__]
