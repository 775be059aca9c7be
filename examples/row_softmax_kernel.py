"""A row softmax written with Ascend C's level-0 vector instructions.

Each block takes ``rows_per_block`` rows of 64 floats. One 256 B repeat is one row, so a
single instruction with ``repeatTime = rows`` covers the whole tile, and the strides say
where each repeat reads and writes:

* ``WholeReduceMax`` leaves one maximum per row (``dstRepStride = 1``: results side by
  side);
* ``Brcb`` turns each maximum into a full 32 B block (8 floats);
* ``Sub`` with ``src1BlkStride = 0, src1RepStride = 1`` reads that one block for all 8
  blocks of a row, and the next block for the next row: a per-row broadcast with no copy;
* ``Exp``, then the same reduce / broadcast for the sum, and ``Div``.

Run it: ``python examples/row_softmax_kernel.py`` prints the largest error against numpy
and the profile of the launch.
"""
import numpy as np

from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403

COLS = 64                      # one repeat of float32: 64 lanes


def row_softmax_kernel(x, y, rows_per_block):
    rows = rows_per_block
    pipe = TPipe()
    qin, qout = TQue(TPosition.VECIN), TQue(TPosition.VECOUT)
    pipe.InitBuffer(qin, 1, rows * COLS * 4)
    pipe.InitBuffer(qout, 1, rows * COLS * 4)
    calc = TBuf()
    pipe.InitBuffer(calc, 2 * rows * 32 + rows * 4)        # two [rows, 8] blocks + [rows]
    off = GetBlockIdx() * rows * COLS
    xGm, yGm = GlobalTensor(float32), GlobalTensor(float32)
    xGm.SetGlobalBuffer(x + off * 4, rows * COLS)
    yGm.SetGlobalBuffer(y + off * 4, rows * COLS)

    xLocal = qin.AllocTensor(float32)
    DataCopy(xLocal, xGm, rows * COLS)
    qin.EnQue(xLocal)
    xLocal = qin.DeQue(float32)
    yLocal = qout.AllocTensor(float32)
    maxBlk = calc.Get(float32)                    # [rows, 8]: each row's max, 8 times
    sumBlk = maxBlk[rows * 8]                     # [rows, 8]: each row's sum, 8 times
    perRow = maxBlk[rows * 16]                    # [rows]: one value per row

    one_row = UnaryRepeatParams(1, 1, 8, 8)
    by_row = BinaryRepeatParams(1, 1, 0, 8, 8, 1)     # src1: one block per row, 8 times
    WholeReduceMax(perRow, xLocal, COLS, rows, 1, 1, 8, ReduceOrder.ORDER_ONLY_VALUE)
    Brcb(maxBlk, perRow, rows // 8, BrcbRepeatParams(1, 8))
    Sub(yLocal, xLocal, maxBlk, COLS, rows, by_row)
    Exp(yLocal, yLocal, COLS, rows, one_row)
    WholeReduceSum(perRow, yLocal, COLS, rows, 1, 1, 8)
    Brcb(sumBlk, perRow, rows // 8, BrcbRepeatParams(1, 8))
    Div(yLocal, yLocal, sumBlk, COLS, rows, by_row)

    qout.EnQue(yLocal)
    qin.FreeTensor(xLocal)
    yLocal = qout.DeQue(float32)
    DataCopy(yGm, yLocal, rows * COLS)
    qout.FreeTensor(yLocal)


def main(blocks=8, rows_per_block=64, soc_name="Ascend910B1"):
    soc = get_soc(soc_name)
    gm = GlobalMemory(soc.memory_size)
    n = blocks * rows_per_block * COLS
    x_host = np.random.default_rng(0).standard_normal((blocks * rows_per_block, COLS),
                                                      dtype=np.float32) * 4
    x, y = gm.malloc(n * 4), gm.malloc(n * 4)
    gm.write(x, x_host)
    profile = run_kernel(row_softmax_kernel, blocks, (x, y, rows_per_block), soc=soc, gm=gm)
    y_host = np.frombuffer(gm.read(y, n * 4), np.float32).reshape(x_host.shape)
    e = np.exp(x_host.astype(np.float64) - x_host.max(axis=1, keepdims=True))
    err = np.abs(y_host - e / e.sum(axis=1, keepdims=True)).max()
    print(f"largest error against float64: {err:.2e}")
    print(profile.summary())
    return y_host, err, profile


if __name__ == "__main__":
    main()
