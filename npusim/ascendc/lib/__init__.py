"""Ascend C's high-level APIs (高阶API: the ``lib/`` headers of the Ascend C library),
built from the basic instructions the way the library builds them, so that their cost
comes out of the timing model rather than a table.

* :mod:`.math` — Sigmoid, Tanh, Gelu, FasterGelu, Erf, Exp (high precision), Log, Sign,
  Sin, Cos, Floor, Ceil, Round, Trunc;
* :mod:`.softmax` — SoftMax and its host tiling;
* :mod:`.normalization` — LayerNorm, RmsNorm and their host tilings;
* :mod:`.quantization` — AscendQuant (per tensor) and its temporary-size getter;
* :mod:`.matmul_tiling` — the Matmul host tiling (``matmul_tiling`` namespace:
  MatmulApiTiling, MultiCoreMatmulTiling, TCubeTiling, CubeFormat, DataType);
* :mod:`.matmul` — the Matmul object (Matmul, MatmulType, REGIST_MATMUL_OBJ);
* :mod:`.matmul_config` — its templates (MatmulConfig, CFG_NORM, CFG_MDL, GetMMConfig,
  GetMatmulApiTiling, MatmulApiStaticTiling).
"""
from npusim.ascendc.lib.math import *            # noqa: F401,F403
from npusim.ascendc.lib.normalization import *   # noqa: F401,F403
from npusim.ascendc.lib.softmax import *         # noqa: F401,F403
from npusim.ascendc.lib.quantization import *    # noqa: F401,F403
from npusim.ascendc.lib import math as _m, normalization as _n, softmax as _s
from npusim.ascendc.lib import quantization as _q
from npusim.ascendc.lib import matmul_tiling                    # C++: matmul_tiling::...
from npusim.ascendc.lib.matmul_tiling import (CubeFormat, MatmulApiTiling,  # noqa: F401
                                              MultiCoreMatmulTiling, TCubeTiling)
from npusim.ascendc.lib.matmul import Matmul, MatmulType, REGIST_MATMUL_OBJ  # noqa: F401
from npusim.ascendc.lib.matmul_config import *   # noqa: F401,F403
from npusim.ascendc.lib import matmul_config as _mc

__all__ = [*_m.__all__, *_s.__all__, *_n.__all__, *_q.__all__, "matmul_tiling", "MatmulApiTiling",
           "MultiCoreMatmulTiling", "TCubeTiling", "CubeFormat", "Matmul", "MatmulType",
           "REGIST_MATMUL_OBJ", *_mc.__all__]
