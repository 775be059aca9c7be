"""``asc.lib.host`` on npusim: the platform and the Matmul tiling classes.

pyasc's ``asc.lib.host`` classes are proxies of a C++ extension built against CANN's tiling
library (``asc/lib/host/loader.py``: ``Loader.get_attr(name)``). npusim installs this module
as that extension: ``host.MultiCoreMatmulTiling(host.get_ascendc_platform())`` is npusim's
:class:`npusim.ascendc.lib.matmul_tiling.MultiCoreMatmulTiling` behind pyasc's snake_case
methods (``set_a_type`` -> ``SetAType``; pyasc's ``enable_bias`` is C++'s ``SetBias``), and
``get_tiling(asc.adv.TCubeTiling())`` fills pyasc's struct field by field (its fields carry
the C++ names: ``used_core_num`` is ``usedCoreNum``).

Source: pyasc ``asc/lib/host/wrappers.py`` (the method list) and ``bindings/*.cpp`` (the
enums); hiascend "Matmul Tiling类" for the C++ names.
"""
from __future__ import annotations

import enum

from npusim.pyasc._api import camel, not_supported
from npusim.soc import get_soc

#: pyasc method names whose C++ name is not their CamelCase.
_METHODS = {"enable_bias": "SetBias", "enable_multi_core_split_k": "EnableMultiCoreSplitK"}


def _tiling_module():
    try:
        from npusim.ascendc.lib import matmul_tiling
    except ImportError:
        return None
    return matmul_tiling


class TPosition(enum.IntEnum):
    """``asc.lib.host.TPosition`` (bindings/Enums.cpp)."""

    GM = 0
    A1 = 1
    A2 = 2
    B1 = 3
    B2 = 4
    C1 = 5
    C2 = 6
    CO1 = 7
    CO2 = 8
    VECIN = 9
    VECOUT = 10
    VECCALC = 11
    LCM = 12
    SPM = 13
    SHM = 14
    TSCM = 15
    MAX = 16


def _enum(name: str, fallback: list[str]):
    """The host enum ``name``: npusim's matmul_tiling one if present, else a plain one."""
    mt = _tiling_module()
    found = getattr(mt, name, None) if mt is not None else None
    return found if found is not None else enum.IntEnum(name, fallback)


class PlatformAscendC:
    """``platform_ascendc::PlatformAscendC`` of one SoC (what the tiling classes take)."""

    def __init__(self, soc_version: str):
        self.soc = get_soc(soc_version)

    def get_core_num_aic(self) -> int:
        return self.soc.cube_block_num

    def get_core_num_aiv(self) -> int:
        return self.soc.vector_block_num

    def get_soc_version(self) -> str:
        return self.soc.soc_version


class PlatformAscendCManager:
    """``PlatformAscendCManager.get_instance([soc_version])``."""

    @staticmethod
    def get_instance(soc_version: str | None = None) -> PlatformAscendC:
        if soc_version is None:
            from asc.lib.runtime import get_soc_version
            soc_version = get_soc_version().value
        return PlatformAscendC(soc_version)


def _to_npusim(value):
    """A host enum member -> npusim's of the same name (positions, formats, dtypes); the
    platform -> its SocSpec."""
    if isinstance(value, PlatformAscendC):
        return value.soc
    if isinstance(value, enum.Enum):
        from npusim.ascendc.types import TPosition as NpTPosition
        name = type(value).__name__
        cls = NpTPosition if name == "TPosition" else getattr(_tiling_module(), name, None)
        if cls is not None and value.name in cls.__members__:
            return cls[value.name]
    return value


class _Tiling:
    """A pyasc host tiling object over npusim's class of the same C++ name."""

    _cpp = ""

    def __init__(self, platform=None):
        mt = _tiling_module()
        cls = getattr(mt, self._cpp, None) if mt is not None else None
        if cls is None:
            raise not_supported(f"asc.lib.host.{self._cpp}")
        self._impl = cls(_to_npusim(platform) if platform is not None else None)

    def __getattr__(self, name: str):
        target = getattr(self._impl, _METHODS.get(name, camel(name)), None)
        if target is None:
            raise not_supported(f"asc.lib.host.{type(self).__name__}.{name}")

        def call(*args, **kwargs):
            return target(*[_to_npusim(a) for a in args],
                          **{k: _to_npusim(v) for k, v in kwargs.items()})
        return call

    def get_tiling(self, tiling) -> int:
        """Fill pyasc's ``asc.adv.TCubeTiling`` (or npusim's) and return 0, or -1."""
        mt = _tiling_module()
        cube = mt.TCubeTiling()
        ret = self._impl.GetTiling(cube)
        if ret == 0:
            copy_struct(cube, tiling)
        return ret


def copy_struct(src, dst) -> None:
    """Copy npusim's tiling struct ``src`` into pyasc's Struct ``dst`` by C++ field names."""
    fields = getattr(type(dst), "struct_fields", None)
    if fields is None:                       # npusim's own struct: copy attributes
        for name, value in vars(src).items():
            setattr(dst, name, value)
        return
    for py_name, field in fields.items():
        cpp = field.ir_name(py_name)
        if hasattr(src, cpp):
            setattr(dst, py_name, type(getattr(dst, py_name))(getattr(src, cpp)))


class MultiCoreMatmulTiling(_Tiling):
    _cpp = "MultiCoreMatmulTiling"


class MatmulApiTiling(_Tiling):
    _cpp = "MatmulApiTiling"


class BatchMatmulTiling(_Tiling):
    _cpp = "BatchMatmulTiling"


class MatmulConfigParams:
    def __init__(self, *args, **kwargs):
        raise not_supported("asc.lib.host.MatmulConfigParams")


class HostModule:
    """What ``asc.lib.host.loader.Loader.module`` answers (the C++ extension's names)."""

    PlatformAscendC = PlatformAscendC
    PlatformAscendCManager = PlatformAscendCManager
    TPosition = TPosition
    MultiCoreMatmulTiling = MultiCoreMatmulTiling
    MatmulApiTiling = MatmulApiTiling
    BatchMatmulTiling = BatchMatmulTiling
    MatmulConfigParams = MatmulConfigParams

    def __getattr__(self, name: str):
        fallbacks = {"CubeFormat": ["ND", "NZ", "ZN", "ZZ", "NN", "ND_ALIGN", "SCALAR", "VECTOR"],
                     "DataType": ["DT_FLOAT", "DT_FLOAT16", "DT_INT8", "DT_INT32", "DT_BF16"],
                     "MatrixTraverse": ["NOSET", "FIRSTM", "FIRSTN"],
                     "MatrixMadType": ["NORMAL", "HF32", "MXMODE"],
                     "DequantType": ["SCALAR", "TENSOR"],
                     "ScheduleType": ["INNER_PRODUCT", "OUTER_PRODUCT"]}
        if name in fallbacks:
            value = _enum(name, fallbacks[name])
            setattr(HostModule, name, value)
            return value
        raise AttributeError(f"asc.lib.host.{name} is not provided by npusim")
