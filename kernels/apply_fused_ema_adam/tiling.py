"""Host tiling of ApplyFusedEmaAdam: SoC + element count + dtype + attributes -> TilingData.

This is ``TilingCompute`` of ``optim/apply_fused_ema_adam/op_host/apply_fused_ema_adam_tiling.cpp``
as described in ``docs/reference/operators.md`` §1 "Tiling":

* cores: ``coreNum = GetCoreNumAiv()``; the first ``frontCoreNum = total % coreNum`` cores
  (or all of them when it divides) take ``coreCalcNum = ceil(total / coreNum)`` elements,
  the ``tailCoreNum`` others one fewer; ``blockDim = min(total, coreNum)``.
* UB: ``bufferSize = ubSize - 2*32`` (two 32 B TBufs for beta1^step and beta2^step), split
  over 9 slots per element (5 inputs + 4 outputs, 4 + 4 in mode 1 where grad reuses var's
  slot), plus fp32 cast copies of every slot for fp16/bf16: ``coreCalcMax`` elements per
  tile, rounded down to 8 (fp32) or 16 (fp16/bf16) so every slot stays 32 B aligned.
* tiles: ``loopNum`` tiles of ``coreCalcMax`` per core, the last one of ``frontCalcExtra``
  elements on front cores and ``tailCalcExtra`` on tail cores.
* attributes are stored as float32 (``set_lr(static_cast<float>(*attrLr))``).
* workspace: the Ascend C system workspace, ``GetLibApiWorkSpaceSize()`` (16 MiB on A2/A3).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Tiling keys of the real operator (docs/reference/operators.md §1 "Interface").
TILING_KEY = {"bfloat16": 100, "float16": 101, "float32": 102}
#: 9 UB slots per element: var, m, v, s, grad in; var, m, v, s out.
QUEUE_NUM = 9
#: Bytes of the two TBufs that hold beta1^step and beta2^step.
POW_BUF_BYTES = 2 * 32


@dataclass(frozen=True)
class ApplyFusedEmaAdamTilingData:
    """The operator's TilingData (counts in elements; attributes as float32)."""

    frontCoreNum: int
    tailCoreNum: int
    coreCalcNum: int
    coreCalcMax: int
    loopNum: int
    frontCalcExtra: int
    tailCalcExtra: int
    lr: np.float32
    emaDecay: np.float32
    beta1: np.float32
    beta2: np.float32
    eps: np.float32
    weightDecay: np.float32
    mode: int
    biasCorrection: bool
    # launch parameters, kept with the tiling as the host hands them to the runtime
    blockDim: int
    workspaceSize: int
    tilingKey: int


def core_calc_max(ub_size: int, dtype, mode: int) -> int:
    """Elements per UB tile: ``(ub_size - 64) / bytesPerElement``, aligned down.

    bytesPerElement is 36 (fp32) or 54 (fp16/bf16: each of 9 slots in 2 B plus its fp32
    cast copy), less one slot (4 or 6 B) in mode 1.
    """
    is_fp32 = np.dtype(dtype) == np.float32
    one = 4 * QUEUE_NUM if is_fp32 else (2 + 4) * QUEUE_NUM
    if mode == 1:
        one -= 4 if is_fp32 else 6
    align = 8 if is_fp32 else 16
    return (ub_size - POW_BUF_BYTES) // one // align * align


def tiling(soc, total: int, dtype, *, lr=1e-3, ema_decay=0.9999, beta1=0.9, beta2=0.999,
           eps=1e-8, mode=1, bias_correction=True, weight_decay=0.0,
           core_num: int | None = None, ub_size: int | None = None) -> ApplyFusedEmaAdamTilingData:
    """Compute the TilingData for ``total`` elements of ``dtype``.

    Args:
        soc: the SocSpec; ``core_num`` defaults to its AIV count (``vector_block_num``) and
            ``ub_size`` to what ``GetCoreMemSize(UB)`` reports (``soc.ub_usable``,
            docs/reference/hardware.md §1.7). The unit test of the real operator uses
            ``ub_size=196608``; pass it to reproduce that table.
        total: number of elements of each tensor (>= 0).
        dtype: float32, float16 or bfloat16 (numpy dtype or name).

    Returns:
        The TilingData, whose ``blockDim`` is ``min(total, coreNum)`` (0 for an empty tensor,
        in which case nothing is launched).
    """
    core_num = soc.vector_block_num if core_num is None else int(core_num)
    ub_size = soc.ub_usable if ub_size is None else int(ub_size)
    total = int(total)
    front = total % core_num if total % core_num != 0 else core_num
    tail = 0 if total <= core_num else core_num - front
    if total == 0:
        front = tail = 0
    calc_num = -(-total // core_num)
    calc_max = core_calc_max(ub_size, dtype, mode)
    loop_num = -(-calc_num // calc_max) if calc_max < calc_num else 1
    front_extra = calc_num if loop_num == 1 else calc_num - calc_max * (loop_num - 1)
    f32 = np.float32
    return ApplyFusedEmaAdamTilingData(
        frontCoreNum=front, tailCoreNum=tail, coreCalcNum=calc_num, coreCalcMax=calc_max,
        loopNum=loop_num, frontCalcExtra=front_extra, tailCalcExtra=front_extra - 1,
        lr=f32(lr), emaDecay=f32(ema_decay), beta1=f32(beta1), beta2=f32(beta2), eps=f32(eps),
        weightDecay=f32(weight_decay), mode=int(mode), biasCorrection=bool(bias_correction),
        blockDim=front + tail, workspaceSize=soc.lib_api_workspace_size,
        tilingKey=TILING_KEY[np.dtype(dtype).name])
