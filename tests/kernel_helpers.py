"""Small Ascend C kernels the timing tests share."""
from npusim.ascendc import (CacheMode, DataCopy, Exp, GetBlockIdx, GlobalTensor, Muls, TPipe,
                            TPosition, TQue, half)


def streaming_kernel(buffer_num, tile, n_tiles, bypass_l2=False):
    """z = exp(2x) in half, ``n_tiles`` tiles of ``tile`` elements per block, through a VECIN
    and a VECOUT queue of ``buffer_num`` buffers each (2: double buffering); with
    ``bypass_l2`` both tensors skip the L2 (CACHE_MODE_DISABLE)."""
    def k(x, z):
        pipe = TPipe()
        qi, qo = TQue(TPosition.VECIN), TQue(TPosition.VECOUT)
        pipe.InitBuffer(qi, buffer_num, tile * 2)
        pipe.InitBuffer(qo, buffer_num, tile * 2)
        per = tile * n_tiles
        xg, zg = GlobalTensor(half), GlobalTensor(half)
        xg.SetGlobalBuffer(x + GetBlockIdx() * per * 2, per)
        zg.SetGlobalBuffer(z + GetBlockIdx() * per * 2, per)
        if bypass_l2:
            xg.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
            zg.SetL2CacheHint(CacheMode.CACHE_MODE_DISABLE)
        for i in range(n_tiles):
            a = qi.AllocTensor(half)
            DataCopy(a, xg[i * tile], tile)
            qi.EnQue(a)
            a = qi.DeQue(half)
            b = qo.AllocTensor(half)
            Muls(b, a, 2.0, tile)
            Exp(b, b, tile)
            qo.EnQue(b)
            qi.FreeTensor(a)
            b = qo.DeQue(half)
            DataCopy(zg[i * tile], b, tile)
            qo.FreeTensor(b)
    return k
