"""The scalar work of the Matmul API itself: what its Init, SetTensorA/B, Iterate and each k
step cost the scalar unit (PIPE_S) beyond the instructions they issue, with the tiling read
at run time (a TCubeTiling) or known at compile time (constant tiling: a
MatmulApiStaticTiling registered with a null tiling).

Why it differs. Huawei's best practice for constant tiling (atlas_ascendc_best_practices
10_10001 / 10_10011, "Matmul高阶API使能Tiling全量常量化") says the Matmul API does "a large
amount of scalar computation" at Init (which delays the first instructions) and between
iterations (which can hold back MTE2), and that constant tiling moves it to compile time.
No msprof figure of that scalar time is among our references (the practice's profiles are
figures without numbers in the text we have), so the counts below are an **estimate** [R]:
the scalar operations each call does on tiling values, counted on the arithmetic the API
performs (npusim/ascendc/lib/matmul.py mirrors the library's per-call work), with the
operations a compile-time tiling folds away removed. Each operation costs
``scalar_issue_cycles`` (1.83 cycles, fitted to the Add best practice: one scalar
operation with its share of loop control, docs/calibration.md "Scalar unit"); each TCubeTiling
field read costs ``scalar_tiling_word_cycles`` (the struct is in the scalar unit's cache
after GET_TILING_DATA).

==================  ======================================  ===================================
call                run-time tiling (ops)                   constant tiling (ops)
==================  ======================================  ===================================
Init                22 field reads + 30: 3 axes x (iteration  6: buffer addresses (the sizes
                    count = ceil div, tail = mul + sub) = 12,  are constants)
                    A1/B1 chunk counts and sizes (2 x 4),
                    L0 / L0C / bias sizes (6), 4 buffer
                    addresses
SetTensorA/B        4: address, transpose flag, reset         4 (the same: the address is a
                    of the cached chunks                       run-time value)
Iterate (a block)   20: next index (3), M/N tails             8: next index (3), offsets
                    (2 x mul + sub + min = 6), A/B GM          with constant strides (4),
                    offsets (2 x 3), k loop bound (2),         residency (1)
                    chunk residency (3)
k step              8: k tail (3), chunk index (div +          4: chunk index by a constant
                    mod), L1 offset (mul + add), loop          (1), offset (1), tail (1),
                    compare                                    compare (1)
==================  ======================================  ===================================

A run-time tiling registered partly constant (a MatmulConfig with constant base sizes but a
TCubeTiling passed in) is charged as run time. The charges are the scalar unit's debt
(:func:`npusim.ascendc.scalar.debt`): summed and recorded as one PIPE_S instruction where
the scalar unit's timeline matters, and off with the rest of the scalar unit's charges
(``scalar.CHARGE = False``).
"""
from __future__ import annotations

from npusim.ascendc import scalar as _scalar

__all__ = ["INIT_FIELDS", "OPS", "charge"]

#: TCubeTiling fields Init reads with a run-time tiling (M, N, Ka, Kb, singleCoreM/N/K,
#: baseM/N/K, depthA1/B1, stepM/N/Ka/Kb, isBias, iterateOrder, dbL0A/B/C).
INIT_FIELDS = 22

#: call -> (run-time tiling ops, constant tiling ops); the table of the module docstring.
OPS = {"Init": (30, 6), "SetTensor": (4, 4), "Iterate": (20, 8), "kstep": (8, 4)}


def cycles(soc, call: str, constant: bool) -> float:
    """Scalar cycles of one ``call`` ("Init", "SetTensor", "Iterate", "kstep")."""
    ops = OPS[call][1 if constant else 0]
    extra = INIT_FIELDS * soc.scalar_tiling_word_cycles if call == "Init" and not constant else 0
    return ops * soc.scalar_issue_cycles + extra


def charge(ctx, call: str, constant: bool, flush: bool = False) -> None:
    """Add one ``call``'s scalar work to core ``ctx``'s debt (nothing when the core's scalar
    charges are off); ``flush``: record the debt now as one PIPE_S instruction, which every
    pipe's next instruction waits for (Init: the "instruction head" the practice names;
    Iterate: the work between iterations that holds back the next block's MTE2)."""
    if not ctx.scalar_issue:          # the scalar unit's charges are off for this core
        return
    _scalar.debt(ctx, cycles(ctx.soc, call, constant))
    if flush:
        _scalar.flush(ctx, f"Matmul::{call}")
