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


def ub_run(body, buffers, soc="Ascend910B1", checks=None, reserve_ub=True): 
    """Run ``body(tensors)`` on one AI core, where ``tensors[name]`` is a LocalTensor
    holding ``buffers[name]`` (a numpy array, copied in from GM by MTE2 and handed to the
    vector pipe with a flag, as a kernel does). Returns ``(after, profile)``: ``after[name]``
    is that buffer's content once the body ran (copied out by MTE3), with the array's
    dtype and length.

    Each buffer is its own TBuf, rounded up to 32 B; the pad bytes are zero. The profile
    keeps its records: ``[r[5] for r in profile.records[0]]`` are the names of the
    instructions the core issued, in order.
    """
    import numpy as np
    from npusim import GlobalMemory, get_soc, run_kernel
    from npusim.ascendc import HardEvent, SetFlag, TBuf, WaitFlag

    soc = get_soc(soc)
    gm = GlobalMemory(soc.memory_size)
    padded = {}
    for name, arr in buffers.items():
        arr = np.asarray(arr)
        nbytes = -(-max(arr.nbytes, 32) // 32) * 32
        raw = np.zeros(nbytes, np.uint8)
        raw[:arr.nbytes] = arr.reshape(-1).view(np.uint8)
        addr = gm.malloc(nbytes)
        gm.write(addr, raw)
        padded[name] = (arr, addr, nbytes)

    def kernel():
        pipe = TPipe()
        tensors, bufs = {}, {}
        for name, (arr, addr, nbytes) in padded.items():
            buf = TBuf()
            pipe.InitBuffer(buf, nbytes)
            raw = buf.Get(np.uint8)
            g = GlobalTensor(np.uint8)
            g.SetGlobalBuffer(addr, nbytes)
            DataCopy(raw, g, nbytes)
            tensors[name] = buf.Get(arr.dtype, nbytes // arr.dtype.itemsize)
            bufs[name] = (raw, g)
        SetFlag(HardEvent.MTE2_V, 0)
        WaitFlag(HardEvent.MTE2_V, 0)
        SetFlag(HardEvent.MTE2_S, 0)
        WaitFlag(HardEvent.MTE2_S, 0)
        body(tensors)
        SetFlag(HardEvent.V_MTE3, 0)
        WaitFlag(HardEvent.V_MTE3, 0)
        SetFlag(HardEvent.S_MTE3, 0)
        WaitFlag(HardEvent.S_MTE3, 0)
        for raw, g in bufs.values():
            DataCopy(g, raw, g.length)

    prof = run_kernel(kernel, 1, (), soc=soc, gm=gm, checks=checks, reserve_ub=reserve_ub,
                      keep_spans=True)
    after = {}
    for name, (arr, addr, nbytes) in padded.items():
        out = np.frombuffer(gm.read(addr, nbytes), np.uint8)[:arr.nbytes].view(arr.dtype)
        after[name] = out.reshape(arr.shape).copy()
    return after, prof
