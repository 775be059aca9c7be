"""UB bank conflicts of vector instructions, by the documented 2201 rules.

Structure (Atlas A2/A3, NPU architecture 2201; docs/reference/hardware.md §2 "UB banks (2201)"
and §5 "UB banking"; Ascend C best practice 避免bank冲突（NPU架构版本2201）.md and the
``bank_conflict_ub`` sample's README in asc-devkit
``examples/01_simd_cpp_api/05_best_practices/04_memory_access/bank_conflict_ub``):

* UB is 48 banks of 128 rows x 32 B, in 16 bank groups of 3 banks. An address decodes as
  ``UB_ADDR[17:0] = {BANK[1:0], BANK_DEPTH[6:0], BG[3:0], BANK_WIDTH[4:0]}``: row
  ``row = addr // 32`` lies in bank group ``row % 16`` and bank
  ``bank_group + 16 * (row // 2048)`` (0x10000 is bank 16, 0x10020 bank 17, 0x20020 bank
  33, as the page's examples say). A SoC with 64 banks (910A, 310P: ini ``ubbank_num``)
  is read the same way with a fourth bank id [R: only the 2201 layout is documented].
* Per cycle the vector unit reads one row from each bank group and writes one row into
  each bank group; a bank does one read or one write per cycle. Hence the three
  conflicts: read-read in the same bank group, write-write in the same bank group,
  read-write in the same bank.
* A repeat reads the 8 data blocks of each source and writes the 8 of the destination;
  block ``b`` of repeat ``r`` is ``r * repStride + b * blkStride`` blocks after the
  operand's start, so block and repeat strides decide which groups a repeat touches. A
  source with ``blkStride = 0`` reads its one block once per repeat, and one with
  ``repStride = 0`` is read once for the whole instruction (the sample's summary).
  Rows two sources share are read once.
* The exemption: when the destination's 8 blocks lie bank for bank on a source's 8 blocks
  (the same bank for block 0 and for each of the 7 others, as a destination that overlaps
  a source exactly, or that shares its bank and starts in the same bank group, does) the
  hardware delays the write by one repeat, so it meets the next repeat's reads instead
  (sample scenarios 4 and 6: no conflict).

Cost (the documented mechanism: requests that cannot be served in one cycle queue per bank
group). One repeat takes, over the bank groups ``g`` it touches,

    max_g max(R_g, W_g, max_{bank b in g} (R_b + W_b))      cycles, at least 1

with ``R``/``W`` the rows read/written in that repeat's slot: 8 blocks of one operand in
one group take 8 cycles, two per group 4 (the page's write-write and read-read tables). A
repeat that needs more cycles than its compute (``per_repeat``) adds the difference. The
delayed write of the last repeat falls in the pipeline drain that ``vec_head_cycles``
covers (the sample measures scenarios 4 and 6 at the cycles of scenario 1). No constant is
fitted; docs/calibration.md "UB bank conflicts" compares the model with the sample's
measured cycles.
"""
from __future__ import annotations

import functools

import numpy as np

ROW_BYTES = 32          # ubblock_size: one bank row, one data block
BLOCKS_PER_REPEAT = 8   # data blocks of one 256 B repeat


def bank_of(addr: int, lay: tuple = (16, 2048)) -> tuple[int, int]:
    """``(bank, bank group)`` of a UB byte address (A2/A3 layout by default):
    ``bank_of(0x10020) == (17, 1)``, ``bank_of(0x20020) == (33, 1)``."""
    groups, set_rows = lay
    row = int(addr) // ROW_BYTES
    return (row // set_rows) * groups + row % groups, row % groups


def layout(soc) -> tuple[int, int]:
    """``(bank groups, rows per bank id)`` of a SoC: ``ubbank_group_num`` and
    ``ubbank_group_num * ubbank_size / 32`` (2048 on A2/A3: 16 groups x 128 rows)."""
    return int(soc.ubbank_group_num), int(soc.ubbank_group_num) * (int(soc.ubbank_size) // ROW_BYTES)


def operand(offset: int, blocks: int, blk_bytes: int = ROW_BYTES,
            rep_bytes: int | None = None) -> tuple:
    """One operand of a vector instruction as the bank model sees it: UB byte ``offset``,
    ``blocks`` data blocks per repeat, block and repeat strides in bytes (contiguous by
    default: ``rep_bytes = blocks * 32``)."""
    return (int(offset), int(blocks), int(blk_bytes),
            int(blocks * ROW_BYTES if rep_bytes is None else rep_bytes))


def _rows(spec: tuple, repeats: int, reading: bool) -> np.ndarray:
    """Rows an operand touches: int64 array (repeats, blocks), -1 where it touches none."""
    off, blocks, blk, rep = spec
    nb = 1 if blk == 0 else max(1, blocks)
    addr = off + np.arange(repeats)[:, None] * rep + np.arange(nb)[None, :] * blk
    rows = addr // ROW_BYTES
    if reading and rep == 0 and repeats > 1:
        rows[1:] = -1                     # read once for the whole instruction
    return rows


def _dedupe(rows: np.ndarray) -> np.ndarray:
    """Each row once per repeat (one read serves every operand that names it)."""
    s = np.sort(rows, axis=1)
    if s.shape[1] > 1:
        dup = np.zeros(s.shape, dtype=bool)
        dup[:, 1:] = s[:, 1:] == s[:, :-1]
        s[dup] = -1
    return s


def _bank(rows: np.ndarray, groups: int, set_rows: int) -> np.ndarray:
    return (rows // set_rows) * groups + rows % groups


def slot_cycles(lay: tuple, repeats: int, dst: tuple | None, srcs: tuple) -> np.ndarray:
    """Cycles of each access slot of an instruction: float array of ``repeats`` slots (one
    more when the write is delayed; that last slot holds only the last repeat's write).

    ``lay`` is :func:`layout`; ``dst`` and each of ``srcs`` an :func:`operand`.
    """
    groups, set_rows = lay
    if repeats <= 0:
        return np.zeros(0)
    reads = [_rows(s, repeats, True) for s in srcs]
    writes = _rows(dst, repeats, False) if dst is not None else None
    delayed = False
    if writes is not None:
        wb = _bank(writes, groups, set_rows)
        delayed = writes.shape[1] == BLOCKS_PER_REPEAT and any(
            r.shape == writes.shape and (r >= 0).all()
                      and np.array_equal(_bank(r, groups, set_rows), wb) for r in reads)
    slots = repeats + (1 if delayed else 0)
    cols = [r for r in reads]
    R = np.full((slots, 0), -1, dtype=np.int64)
    if cols:
        R = np.concatenate(cols, axis=1)
        if delayed:
            R = np.concatenate([R, np.full((1, R.shape[1]), -1, dtype=np.int64)])
        R = _dedupe(R)
    if writes is not None:
        W = _dedupe(writes)
        if delayed:
            W = np.concatenate([np.full((1, W.shape[1]), -1, dtype=np.int64), W])
    else:
        W = np.full((slots, 0), -1, dtype=np.int64)
    top = max(int(R.max(initial=0)), int(W.max(initial=0)))
    nbanks = (top // set_rows + 1) * groups
    slot_of = np.arange(slots)[:, None]

    def count(rows, keyf, width):
        ok = rows >= 0
        keys = (np.broadcast_to(slot_of, rows.shape) * width + keyf(rows))[ok]
        return np.bincount(keys, minlength=slots * width).reshape(slots, width)

    rg = count(R, lambda r: r % groups, groups)
    wg = count(W, lambda r: r % groups, groups)
    rwb = count(R, lambda r: _bank(r, groups, set_rows), nbanks) + \
        count(W, lambda r: _bank(r, groups, set_rows), nbanks)
    rw_g = rwb.reshape(slots, nbanks // groups, groups).max(axis=1)
    per = np.maximum(np.maximum(rg, wg), rw_g).max(axis=1)
    return np.maximum(per, 1).astype(float)


@functools.lru_cache(maxsize=8192)
def conflict_cycles(lay: tuple, repeats: int, per_repeat: float, dst: tuple | None,
                    srcs: tuple) -> float:
    """Cycles the UB bank conflicts add to an instruction whose repeats compute in
    ``per_repeat`` cycles each (memoised on the layout, operands and strides)."""
    c = slot_cycles(lay, repeats, dst, srcs)
    if c.size == 0:
        return 0.0
    extra = float(np.maximum(c[:repeats] - per_repeat, 0.0).sum())
    if c.size > repeats:                  # the delayed last write, in the pipeline drain
        extra += float(max(c[repeats] - 1.0, 0.0))
    return extra
