"""What one base slice of A or B occupies in L0A/L0B as Ascend C's A2/A3 Matmul kernel
loads it, and whether that fits the L0 buffer the kernel loads it into. Shared by the
host tiling (:mod:`.matmul_tiling`: a library base the library's own kernel could not load
is not taken) and the kernel (:mod:`.matmul`: Init/SetTensorA/B refuse such a tiling).

The loads (asc-devkit ``impl/adv_api/detail/matmul/stage/split``):

* int8 with the non-K axis moved transposed (A kept K x M, B kept K x N):
  LoadDataWithTranspose on 32 x 32 squares, ``Ceil(madM, 32)`` of them down M
  (``load_to_l0a_loadInstr.h`` TransLoadDataToL0, LOAD2DTRANSPOSE) and ``Ceil(madN, 32)``
  per k square for B (``load_to_l0b_loadInstr.h`` LoadDataToL0): a base of 16 or 48 rows
  writes 32 or 64 rows' fractals, the extra ones never read by Mmad;
* float with K moved as the img2col M axis (A kept K x M, transposed; B kept K x N):
  LoadData3DV2 with ``mStep = CeilAlign(madK, 16)`` K rows (TransLoadDataToL0 /
  LoadDataToL0), A read by Mmad with ``kDirectionAlign`` (``mmad_compute.h``): a baseK of
  40 writes 48 rows of K;
* otherwise the slice itself (baseM/baseN rows of 16, baseK columns of C0).

The buffers (``resource/l0_buffer/tbuf_pool_l0_base.h`` TBufPoolL0Base: one TBuf of the
whole L0A/L0B, and with ping-pong (``(dbL0A - 1) & (dbL0B - 1)``) the second buffer starts
at half of it, ``L0AUF_SIZE / 2``): a slice must fit half of L0A/L0B when the kernel
double-buffers L0, else the whole of it; a larger slice would run into the other buffer.
"""
from __future__ import annotations


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


def slice_rows(itemsize: int, moved_transposed: bool, base_x: int, base_k: int) -> tuple[int, int]:
    """(rows of the non-K axis, columns of K) one base slice occupies in L0 (module
    docstring); ``moved_transposed``: the operand is kept K x X in L1 (A transposed, B not)."""
    if moved_transposed and itemsize == 1:
        return _align(base_x, 32), base_k
    if moved_transposed and itemsize == 4:
        return _align(base_x, 16), _align(base_k, 16)
    return base_x, base_k


def slice_bytes(itemsize: int, moved_transposed: bool, base_x: int, base_k: int) -> int:
    rows, cols = slice_rows(itemsize, moved_transposed, base_x, base_k)
    return rows * cols * itemsize


def buffer_bytes(l0_size: int, db_l0a: int, db_l0b: int) -> int:
    """The bytes of one L0A/L0B buffer of the library's kernel (module docstring)."""
    ping_pong = (db_l0a - 1) & (db_l0b - 1)
    return l0_size // 2 if ping_pong else l0_size
