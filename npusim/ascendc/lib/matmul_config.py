"""The Matmul API's templates (``MM_CFG``, the fifth template argument of ``Matmul``):
``MatmulConfig`` with ``CFG_NORM`` / ``CFG_MDL`` (``GetNormalConfig`` / ``GetMDLConfig``),
``GetMMConfig(MatmulConfigMode, MatmulShapeParams, ...)`` and the constant tiling
``GetMatmulApiTiling(...) -> MatmulApiStaticTiling``.

Usage, as in an Ascend C kernel (C++ ``Matmul<A, B, C, BIAS, CFG_MDL>``)::

    mm = Matmul(aType, bType, cType, biasType, CFG_MDL)
    REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm, tiling)

    # constant tiling: the shapes are known when the kernel is compiled
    cfg = GetMMConfig(MatmulConfigMode.CONFIG_MDL, MatmulShapeParams(128, 256, 1024, 128, 256, 64))
    static = GetMatmulApiTiling(aType, bType, cType, biasType, cfg)
    mm = Matmul(aType, bType, cType, biasType, static)
    REGIST_MATMUL_OBJ(pipe, GetSysWorkSpacePtr(), mm, None)    # (TCubeTiling*)nullptr
    mm.SetOrgShape(M, N, K)                                    # the tiling's M/N/K are one core's

What the simulator takes from a config: the template (NORM or MDL; both load L1 chunks of
``stepM*baseM x stepKa*baseK`` / ``stepKb*baseK x stepN*baseN`` and free a chunk after its
last k step is loaded when K does not fit one chunk: asc-devkit
``impl/adv_api/detail/matmul/scheduler/base/scheduler_mdl_base.h`` ClearL1BufferCache and
``resource/cube_in_buffer/cube_in_buffer_normal.h`` FreeTensor; NORM's separate cache of
whole-K base blocks is not distinguished), and with a :class:`MatmulApiStaticTiling` its
tiling, so that ``REGIST_MATMUL_OBJ(..., mm, None)`` needs no TCubeTiling from GM. The
other fields are carried as the library has them; the templates the simulator does not
model (basic block, special MDL, IBShare, batch, vector ND2NZ, preload) raise KernelError
at ``Matmul(...)``.

``GetMatmulApiTiling`` here computes the fields with npusim's host tiling
(:class:`~npusim.ascendc.lib.matmul_tiling.MultiCoreMatmulTiling` on one core with the
config's basic block fixed), not with the library's compile-time ``GetL1Factor``
(asc-devkit ``include/adv_api/matmul/constant_tiling.h``); like the library it fixes
``dbL0C = 1`` and takes ``M/N/Ka/Kb`` as the single-core shape (the kernel then calls
SetOrgShape). Its L1 size is the SoC's (the library's default ``L1_SIZE``).

Sources: asc-devkit ``include/adv_api/matmul/tiling.h`` (GetNormalConfig, GetMDLConfig,
CFG_NORM, CFG_MDL, GetMMConfig, MatmulApiStaticTiling), ``matmul_config.h``
(MatmulConfig, MatmulConfigMode, MatmulShapeParams, MatmulFuncParams, ...),
``impl/adv_api/detail/matmul/utils/matmul_config_impl.h`` (what each params struct sets);
hiascend "MatmulConfig", "GetMMConfig", "GetMatmulApiTiling".
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from enum import IntEnum


from npusim.errors import KernelError

__all__ = ["MatmulConfig", "MatmulConfigMode", "MatmulShapeParams", "MatmulQuantParams",
           "MatmulBatchParams", "MatmulFuncParams", "MatmulBiasParams", "IterateOrder",
           "ScheduleType", "BatchMode", "BatchOutMode", "IterateMode", "GetNormalConfig",
           "GetMDLConfig", "CFG_NORM", "CFG_MDL", "GetMMConfig", "MatmulApiStaticTiling",
           "GetMatmulApiTiling"]


class IterateOrder(IntEnum):
    """``IterateOrder``: M (ORDER_M) or N (ORDER_N) first; UNDEF: the tiling's."""

    ORDER_M = 0
    ORDER_N = 1
    UNDEF = 2


class ScheduleType(IntEnum):
    """``ScheduleType``: INNER_PRODUCT (a K loop per block; modelled) or OUTER_PRODUCT."""

    INNER_PRODUCT = 0
    OUTER_PRODUCT = 1


class BatchMode(IntEnum):
    """``BatchMode``: how a BatchMatmul's batches relate to L1 (batch interfaces: not modelled)."""

    NONE = 0
    BATCH_LESS_THAN_L1 = 1
    BATCH_LARGE_THAN_L1 = 2
    SINGLE_LARGE_THAN_L1 = 3


class BatchOutMode(IntEnum):
    """``BatchOutMode``: a BatchMatmul's output mode (not modelled)."""

    SINGLE_BATCH = 0
    MULTI_BATCH = 1
    DYNAMIC = 2


class IterateMode(IntEnum):
    """``IterateMode``: which Iterate forms the object compiles (carried, not used)."""

    ITERATE_MODE_NORMAL = 0b00000001
    ITERATE_MODE_ALL = 0b00000010
    ITERATE_MODE_BATCH = 0b00000100
    ITERATE_MODE_N_BATCH = 0b00001000
    ITERATE_MODE_DEFAULT = 0b11111111


class MatmulConfigMode(IntEnum):
    """``MatmulConfigMode``: the template GetMMConfig starts from."""

    CONFIG_NORM = 0
    CONFIG_MDL = 1
    CONFIG_SPECIALMDL = 2
    CONFIG_IBSHARE = 3


@dataclass(frozen=True)
class MatmulConfig:
    """``MatmulConfig`` (matmul_config.h), the fields a kernel sets; defaults are
    ``GetNormalConfig()``'s. Sizes in elements."""

    doNorm: bool = True
    doBasicBlock: bool = False
    doMultiDataLoad: bool = False
    basicM: int = 0
    basicN: int = 0
    basicK: int = 0
    intrinsicsCheck: bool = False
    isNBatch: bool = False
    enVecND2NZ: bool = False
    doSpecialBasicBlock: bool = False
    doMTE2Preload: int = 0
    singleCoreM: int = 0
    singleCoreN: int = 0
    singleCoreK: int = 0
    stepM: int = 0
    stepN: int = 0
    baseMN: int = 0
    singleCoreMN: int = 0
    enUnitFlag: bool = True
    isPerTensor: bool = False
    hasAntiQuantOffset: bool = False
    doIBShareNorm: bool = False
    doSpecialMDL: bool = False
    enableInit: bool = True
    batchMode: BatchMode = BatchMode.BATCH_LESS_THAN_L1
    enableEnd: bool = True
    enableGetTensorC: bool = True
    enableSetOrgShape: bool = True
    enableSetBias: bool = True
    enableSetTail: bool = True
    enableQuantVector: bool = True
    enableSetDefineData: bool = True
    iterateMode: IterateMode = IterateMode.ITERATE_MODE_DEFAULT
    enableReuse: bool = True
    enableUBReuse: bool = True
    enableL1CacheUB: bool = False
    intraBlockPartSum: bool = False
    iterateOrder: IterateOrder = IterateOrder.UNDEF
    scheduleType: ScheduleType = ScheduleType.INNER_PRODUCT
    enableDoubleCache: bool = False
    isBiasBatch: bool = True
    enableStaticPadZeros: bool = False
    isPartialOutput: bool = False
    enableMixDualMaster: bool = False
    isA2B2Shared: bool = False
    isEnableChannelSplit: bool = False
    enableKdimReorderLoad: bool = False
    isCO1Shared: bool = False
    bmmOutMode: BatchOutMode = BatchOutMode.SINGLE_BATCH
    enableL1BankConflictOptimise: bool = False
    enableRelu: bool = False

    @property
    def template(self) -> str:
        """"NORM", "MDL", "SpecialMDL", "IBShare", "BasicBlock" or "SpecialBasicBlock"."""
        for flag, name in (("doNorm", "NORM"), ("doMultiDataLoad", "MDL"),
                           ("doSpecialMDL", "SpecialMDL"), ("doIBShareNorm", "IBShare"),
                           ("doBasicBlock", "BasicBlock"),
                           ("doSpecialBasicBlock", "SpecialBasicBlock")):
            if getattr(self, flag):
                return name
        return "none"

    @property
    def is_constant(self) -> bool:
        """The shapes are given (constant tiling: GetMatmulApiTiling computes the rest)."""
        return bool(self.singleCoreM and self.singleCoreN and self.singleCoreK)


def GetNormalConfig(intrinsicsLimit: bool = False, batchLoop: bool = False,
                    isVecND2NZ: bool = False, bmmMode: BatchMode = BatchMode.BATCH_LESS_THAN_L1,
                    isMsgReuse: bool = True, iterateOrder: IterateOrder = IterateOrder.UNDEF,
                    scheduleType: ScheduleType = ScheduleType.INNER_PRODUCT,
                    enUnitFlag: bool = True, enableMixDualMaster: bool = False,
                    bmmOutMode: BatchOutMode = BatchOutMode.SINGLE_BATCH) -> MatmulConfig:
    """The NORM template with the given options (tiling.h GetNormalConfig)."""
    return MatmulConfig(intrinsicsCheck=intrinsicsLimit, isNBatch=batchLoop,
                        enVecND2NZ=isVecND2NZ, batchMode=BatchMode(bmmMode),
                        enableReuse=isMsgReuse, iterateOrder=IterateOrder(iterateOrder),
                        scheduleType=ScheduleType(scheduleType), enUnitFlag=enUnitFlag,
                        enableMixDualMaster=enableMixDualMaster,
                        bmmOutMode=BatchOutMode(bmmOutMode))


def GetMDLConfig(intrinsicsLimit: bool = False, batchLoop: bool = False, doMTE2Preload: int = 0,
                 isVecND2NZ: bool = False, isPerTensor: bool = False,
                 hasAntiQuantOffset: bool = False, enUnitFlag: bool = False,
                 isMsgReuse: bool = True, enableUBReuse: bool = True,
                 enableL1CacheUB: bool = False, enableMixDualMaster: bool = False,
                 enableKdimReorderLoad: bool = False,
                 enableL1BankConflictOptimise: bool = False) -> MatmulConfig:
    """The MDL ("multi data load") template (tiling.h GetMDLConfig): unitFlag off and batch
    mode NONE by default."""
    return MatmulConfig(doNorm=False, doMultiDataLoad=True, intrinsicsCheck=intrinsicsLimit,
                        isNBatch=batchLoop, doMTE2Preload=int(doMTE2Preload),
                        enVecND2NZ=isVecND2NZ, isPerTensor=isPerTensor,
                        hasAntiQuantOffset=hasAntiQuantOffset, enUnitFlag=enUnitFlag,
                        batchMode=BatchMode.NONE, enableReuse=isMsgReuse,
                        enableUBReuse=enableUBReuse, enableL1CacheUB=enableL1CacheUB,
                        enableMixDualMaster=enableMixDualMaster,
                        enableKdimReorderLoad=enableKdimReorderLoad,
                        enableL1BankConflictOptimise=enableL1BankConflictOptimise)


CFG_NORM = GetNormalConfig()
CFG_MDL = GetMDLConfig()


@dataclass(frozen=True)
class MatmulShapeParams:
    """Constant shapes (elements): one core's single shape and the basic (base) block."""

    singleCoreM: int
    singleCoreN: int
    singleCoreK: int
    basicM: int
    basicN: int
    basicK: int


@dataclass(frozen=True)
class MatmulQuantParams:
    """A16W8 quantisation fields (carried, not modelled)."""

    isPerTensor: bool
    hasAntiQuantOffset: bool


@dataclass(frozen=True)
class MatmulBatchParams:
    """BatchMatmul fields (not modelled)."""

    isNBatch: bool
    batchMode: BatchMode
    isBiasBatch: bool = True
    bmmOutMode: BatchOutMode = BatchOutMode.SINGLE_BATCH


@dataclass(frozen=True)
class MatmulFuncParams:
    """``MatmulFuncParams``: the feature switches GetMMConfig sets."""

    intrinsicsCheck: bool = False
    enVecND2NZ: bool = False
    enableDoubleCache: bool = False
    enableL1CacheUB: bool = False
    doMTE2Preload: int = 0
    iterateOrder: IterateOrder = IterateOrder.UNDEF
    scheduleType: ScheduleType = ScheduleType.INNER_PRODUCT
    enableReuse: bool = True
    enableUBReuse: bool = True
    isPartialOutput: bool = False
    isA2B2Shared: bool = False
    isEnableChannelSplit: bool = False
    enableKdimReorderLoad: bool = False
    enableL1BankConflictOptimise: bool = False
    enableRelu: bool = False


@dataclass(frozen=True)
class MatmulBiasParams:
    """``MatmulBiasParams``: enableSetBias."""

    enableSetBias: bool = True


def GetMMConfig(configMode: MatmulConfigMode, *args) -> MatmulConfig:
    """``GetMMConfig<configMode>(args...)``: the template's config with the fields of each
    MatmulShapeParams / MatmulQuantParams / MatmulBatchParams / MatmulFuncParams /
    MatmulBiasParams argument set (matmul_config_impl.h GetMMConfigImpl).

    Raises: KernelError for an argument of another type, or SPECIALMDL / IBSHARE (not
    modelled)."""
    mode = MatmulConfigMode(configMode)
    if mode in (MatmulConfigMode.CONFIG_SPECIALMDL, MatmulConfigMode.CONFIG_IBSHARE):
        raise KernelError("GetMMConfig", f"{mode.name}: the SpecialMDL and IBShare templates "
                          "are not modelled (CONFIG_NORM, CONFIG_MDL)")
    cfg = CFG_MDL if mode == MatmulConfigMode.CONFIG_MDL else CFG_NORM
    names = {f.name for f in dataclasses.fields(MatmulConfig)}
    for i, arg in enumerate(args):
        if not isinstance(arg, (MatmulShapeParams, MatmulQuantParams, MatmulBatchParams,
                                MatmulFuncParams, MatmulBiasParams)):
            raise KernelError("GetMMConfig", f"argument {i + 2} is a {type(arg).__name__}, not "
                              "MatmulShapeParams/QuantParams/BatchParams/FuncParams/BiasParams")
        cfg = replace(cfg, **{k: v for k, v in dataclasses.asdict(arg).items() if k in names})
    return cfg


@dataclass
class MatmulApiStaticTiling:
    """``MatmulApiStaticTiling`` (tiling.h): the constant tiling and its config; -1 where
    not set. :meth:`to_cube_tiling` gives the TCubeTiling the kernel runs with."""

    usedCoreNum: int = -1
    M: int = -1
    N: int = -1
    Ka: int = -1
    Kb: int = -1
    singleCoreM: int = -1
    singleCoreN: int = -1
    singleCoreK: int = -1
    baseM: int = -1
    baseN: int = -1
    baseK: int = -1
    depthA1: int = -1
    depthB1: int = -1
    stepM: int = -1
    stepN: int = -1
    isBias: int = -1
    transLength: int = -1
    iterateOrder: int = -1
    shareMode: int = -1
    shareL1Size: int = -1
    shareL0CSize: int = -1
    shareUbSize: int = -1
    stepKa: int = -1
    stepKb: int = -1
    depthAL1CacheUB: int = -1
    depthBL1CacheUB: int = -1
    dbL0A: int = -1
    dbL0B: int = -1
    dbL0C: int = -1
    cfg: MatmulConfig = field(default_factory=lambda: CFG_NORM)

    @property
    def is_complete(self) -> bool:
        """Every field a kernel needs is set (GetMatmulApiTiling had the shapes)."""
        return min(self.singleCoreM, self.singleCoreN, self.singleCoreK, self.baseM,
                   self.baseN, self.baseK, self.depthA1, self.depthB1, self.stepM, self.stepN,
                   self.stepKa, self.stepKb, self.dbL0A, self.dbL0B, self.dbL0C) > 0

    def to_cube_tiling(self):
        """The TCubeTiling these constants stand for (usedCoreNum 1: one core's part)."""
        from npusim.ascendc.lib.matmul_tiling import TCubeTiling
        t = TCubeTiling()
        for f in dataclasses.fields(TCubeTiling):
            v = getattr(self, f.name, None)
            if isinstance(v, int) and v >= 0:
                setattr(t, f.name, v)
        t.usedCoreNum = max(1, self.usedCoreNum)
        t.isBias = max(0, self.isBias)
        t.iterateOrder = max(0, self.iterateOrder)
        return t


def GetMatmulApiTiling(aType, bType, cType, biasType, mmCFG: MatmulConfig,
                       l1Size: int | None = None, soc=None) -> MatmulApiStaticTiling:
    """``GetMatmulApiTiling<A_TYPE, B_TYPE, C_TYPE, BIAS_TYPE>(mmCFG, l1Size)``: the
    constant tiling of a config whose shapes are set (GetMMConfig with MatmulShapeParams).
    Without singleCoreM/N/K only base, dbL0A/B and isBias are filled (as the library does);
    the fields are computed by npusim's host tiling with the basic block fixed (module
    docstring). ``soc``: the SoC (default: the running core's, else Ascend910B1).

    Raises: KernelError when no tiling fits (the basic block too large for L0/L1)."""
    from npusim.ascendc import core as _core
    from npusim.ascendc.lib.matmul_tiling import MultiCoreMatmulTiling, TCubeTiling
    from npusim.soc import get_soc
    cfg = mmCFG
    tiling = MatmulApiStaticTiling(cfg=cfg)
    if soc is None:
        ctx = _core.current_core_or_none()
        soc = ctx.soc if ctx is not None else get_soc("Ascend910B1")
    elif isinstance(soc, str):
        soc = get_soc(soc)
    if not cfg.is_constant:
        if cfg.basicM and cfg.basicN and cfg.basicK:
            tiling.baseM, tiling.baseN, tiling.baseK = cfg.basicM, cfg.basicN, cfg.basicK
            tiling.dbL0A = 2 if 2 * cfg.basicM * cfg.basicK * aType.dtype.itemsize <= \
                soc.l0_a_size else 1
            tiling.dbL0B = 2 if 2 * cfg.basicK * cfg.basicN * bType.dtype.itemsize <= \
                soc.l0_b_size else 1
            tiling.isBias = int(cfg.enableSetBias)
        return tiling
    host = MultiCoreMatmulTiling(soc)
    host.SetDim(1)
    host.SetAType(aType.position, aType.format, aType.dtype, aType.isTrans)
    host.SetBType(bType.position, bType.format, bType.dtype, bType.isTrans)
    host.SetCType(cType.position, cType.format, cType.dtype)
    if biasType is not None:
        host.SetBiasType(biasType.position, biasType.format, biasType.dtype)
    m, n, k = cfg.singleCoreM, cfg.singleCoreN, cfg.singleCoreK
    host.SetOrgShape(m, n, k)
    host.SetShape(m, n, k)
    host.SetBias(bool(cfg.enableSetBias) and biasType is not None)   # no BIAS_TYPE: no bias
    if cfg.basicM and cfg.basicN and cfg.basicK:
        host.SetFixSplit(cfg.basicM, cfg.basicN, cfg.basicK)
    if l1Size is not None:
        host.SetBufferSpace(int(l1Size), -1, -1)
    cube = TCubeTiling()
    if host.GetTiling(cube) != 0:
        raise KernelError("GetMatmulApiTiling", f"no tiling for single shape {m} x {n} x {k} "
                          f"with basic block {cfg.basicM} x {cfg.basicN} x {cfg.basicK}: "
                          f"{host.error}")
    for f in dataclasses.fields(MatmulApiStaticTiling):
        if f.name != "cfg" and hasattr(cube, f.name):
            setattr(tiling, f.name, int(getattr(cube, f.name)))
    tiling.dbL0C = 1                      # constant_tiling.h: "keep the same with runtime tiling"
    tiling.shareL0CSize = cube.baseM * cube.baseN * 4
    return tiling


def config_of(mm_cfg, name: str = "Matmul"):
    """(MatmulConfig, MatmulApiStaticTiling or None) of a Matmul's fifth argument, checked
    against what is modelled."""
    static = None
    if isinstance(mm_cfg, MatmulApiStaticTiling):
        static, cfg = mm_cfg, mm_cfg.cfg
    elif isinstance(mm_cfg, MatmulConfig):
        cfg = mm_cfg
    else:
        raise KernelError(name, f"MM_CFG is a {type(mm_cfg).__name__}: give a MatmulConfig "
                          "(CFG_NORM, CFG_MDL, GetMMConfig(...)) or a MatmulApiStaticTiling "
                          "(GetMatmulApiTiling(...))")
    if cfg.template not in ("NORM", "MDL"):
        raise KernelError(name, f"the {cfg.template} template is not modelled (CFG_NORM, "
                          "CFG_MDL and GetMMConfig of CONFIG_NORM / CONFIG_MDL are)")
    for flag in ("isNBatch", "enVecND2NZ", "doMTE2Preload", "enableL1CacheUB",
                 "intraBlockPartSum", "isPartialOutput", "isA2B2Shared", "isCO1Shared",
                 "enableMixDualMaster", "isEnableChannelSplit", "enableRelu"):
        if getattr(cfg, flag):
            raise KernelError(name, f"MatmulConfig.{flag} = {getattr(cfg, flag)} is not "
                              "modelled; leave it at its default")
    if cfg.scheduleType != ScheduleType.INNER_PRODUCT:
        raise KernelError(name, "scheduleType OUTER_PRODUCT is not modelled")
    return cfg, static


