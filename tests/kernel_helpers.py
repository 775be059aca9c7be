"""Small Ascend C kernels the timing tests share, launch helpers of the tests, and the
comparison of two timing replays."""
import numpy as np

from npusim import GlobalMemory, get_soc, run_kernel
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


def run_embedding_grad_v2(grad, idx, nw, pad, scale, det=False, small=None, fast=True,
                          core_num=None, keep_spans=False, soc="Ascend910B1"):
    """One EmbeddingDenseGradV2 launch on a fresh GM: grad [rows, E], ``idx`` (int32; sorted
    on the host with their positions unless the tiling picks the small-dim kernel, which
    sorts in UB), ``nw`` zeroed output rows. Returns ``(out [nw, E], profile, tiling)``."""
    from npusim.kernels.common.sorted_index import sorted_order_golden
    from npusim.kernels.embedding_dense_backward import tiling as edb
    from npusim.kernels.embedding_dense_backward.kernel_v2 import embedding_dense_grad_v2
    soc = get_soc(soc)
    rows, E = grad.shape
    gm = GlobalMemory(soc.memory_size)
    td = edb.tiling(soc, rows, E, nw, pad, scale, grad.dtype, deterministic=det,
                    small_dim=small, core_num=core_num)
    g = gm.malloc(grad.nbytes)
    gm.write(g, grad)
    keys = np.asarray(idx, np.int32)
    s, p = gm.malloc(4 * rows), gm.malloc(4 * rows)
    if td.isSmallDim:
        gm.write(s, keys)
    else:
        sk, pos = sorted_order_golden(keys)
        gm.write(s, sk)
        gm.write(p, pos)
    o = gm.malloc(nw * E * grad.itemsize)
    gm.write(o, np.zeros(nw * E, grad.dtype))
    w = gm.malloc(max(td.userWorkspaceSize, 32))
    prof = run_kernel(embedding_dense_grad_v2, td.blockDim,
                      (g, s, p, o, w, td, grad.dtype, fast), soc=soc, gm=gm,
                      sync_all=td.needSyncAll, keep_spans=keep_spans)
    out = np.frombuffer(gm.read(o, nw * E * grad.itemsize), grad.dtype).reshape(nw, E)
    return out, prof, td


def row_by_row(monkeypatch) -> None:
    """Run the small-dim EmbeddingDenseGradV2 walk and FusedSparseAdam's duplicate merge as
    the kernels write them, row by row, instead of their batched simulator forms (for
    records and figures stored before the batched forms existed)."""
    from npusim.kernels.embedding_dense_backward import kernel_v2
    from npusim.kernels.fused_sparse_adam.kernel import KernelFusedSparseAdam
    small = kernel_v2.KernelEmbeddingDenseGradV2SmallDim
    monkeypatch.setattr(kernel_v2, "KernelEmbeddingDenseGradV2SmallDim",
                        lambda gradDtype, fast=True: small(gradDtype, fast=False))
    monkeypatch.setattr(KernelFusedSparseAdam, "fast", False)


def assert_same_timing(got, ref) -> None:
    """Two replays (:class:`npusim.timing.KernelTiming`) agree to the bit: cycles, each
    block's start and end, each pipe's busy cycles, HBM and L2-hit bytes, spans."""
    assert got.cycles == ref.cycles
    np.testing.assert_array_equal(got.block_start, ref.block_start)
    np.testing.assert_array_equal(got.block_end, ref.block_end)
    assert set(got.pipe_busy) == set(ref.pipe_busy)
    for p in ref.pipe_busy:
        np.testing.assert_array_equal(got.pipe_busy[p], ref.pipe_busy[p])
    assert (got.hbm_bytes, got.l2_hit_bytes) == (ref.hbm_bytes, ref.l2_hit_bytes)
    assert got.spans == ref.spans
