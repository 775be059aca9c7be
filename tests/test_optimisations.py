"""The simulator's speed-ups change nothing: the timeline with merged vector runs equals the
instruction-by-instruction one, bit for bit, and so do results (every optimisation
keeps results bit-identical and the timeline identical)."""
import gc
import importlib.util
import json
import tempfile
import weakref
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim.kernels.apply_fused_ema_adam.kernel import apply_fused_ema_adam
from npusim.kernels.apply_fused_ema_adam.tiling import tiling
from npusim import GlobalMemory, KernelError, get_soc, run_kernel
from npusim.ascendc import TPipe, TPosition, TQue, float32
from npusim.ascendc.checker import CheckerConfig, GmLog, blocks_conflict
from npusim.ascendc.core import current_core
from npusim.ascendc.types import Pipe
from npusim.ascendc.vector import _bank_conflict

# records, timelines and cycle counts as they were before the scalar unit charged its
# issue work (tests/conftest.py scalar_issue_off)
pytestmark = pytest.mark.usefixtures("scalar_issue_off")

SOC = get_soc("Ascend910B1")


def run(n, cores, keep_spans, dtype=np.float32, mode=1):
    gm = GlobalMemory(SOC.memory_size)
    rng = np.random.default_rng(n)
    addrs = []
    for k in range(5):
        a = gm.malloc(n * np.dtype(dtype).itemsize)
        data = rng.standard_normal(n).astype(dtype)
        gm.write(a, np.abs(data) if k == 3 else data)
        addrs.append(a)
    step = gm.malloc(8)
    gm.write(step, np.array([4], np.int64))
    td = tiling(SOC, n, np.dtype(dtype), mode=mode, core_num=cores)
    prof = run_kernel(apply_fused_ema_adam, td.blockDim, (*addrs, step, 0, td, np.dtype(dtype)),
                      soc=SOC, gm=gm, reserve_ub=False, keep_spans=keep_spans)
    outs = [gm.read(a, n * np.dtype(dtype).itemsize) for a in addrs[1:]]
    return prof, outs


@pytest.mark.parametrize("n,cores,dtype,mode", [(6128 * 5 + 17, 4, np.float32, 1),
                                                (3000, 48, np.float16, 0)])
def test_merged_replay_equals_per_instruction_replay(n, cores, dtype, mode):
    fast, out_fast = run(n, cores, False, dtype, mode)
    slow, out_slow = run(n, cores, True, dtype, mode)
    assert out_fast == out_slow
    assert fast.timing.cycles == slow.timing.cycles
    assert np.array_equal(fast.timing.block_end, slow.timing.block_end)
    for pipe in fast.timing.pipe_busy:
        assert np.array_equal(fast.timing.pipe_busy[pipe], slow.timing.pipe_busy[pipe])
    assert fast.hbm_bytes == slow.hbm_bytes
    # and the spans of the slow replay add up to the merged busy times
    spans = slow.timing.spans[0]
    v = sum(e - s for p, s, e, *_ in spans if p.name == "PIPE_V")
    assert v == pytest.approx(fast.timing.pipe_busy[Pipe.PIPE_V][0])


def test_memoised_bank_conflict_matches_its_rule():
    # 48 banks of 32 B rows, 16 groups: two sources in the same group conflict
    assert _bank_conflict(48, 16, 16384 * 4, (0, 16384 * 2)) is True       # rows 0 and 1024
    assert _bank_conflict(48, 16, 16384 * 4, (0, 16384 * 2 - 256)) is False
    assert _bank_conflict(48, 16, 512, (512, 512)) is False                # one operand, in place


# -- the GM race check across blocks (bulk numpy) against a byte map ---------------------------
def _conflict_by_bytes(blocks_accesses):
    """Whether two blocks touch one GM byte in the same SyncAll phase, one of them writing
    and not both adding atomically, byte by byte (how: 0 read, 1 write, 2 atomic add)."""
    touches = {}
    for b, accesses in enumerate(blocks_accesses):
        for how, addr, row, pitch, rows, phase in accesses:
            for r in range(rows):
                for byte in range(addr + r * pitch, addr + r * pitch + row):
                    touches.setdefault((phase, byte), set()).add((b, how))
    return any(b1 != b2 and (h1, h2) != (0, 0) and (h1, h2) != (2, 2)
               for who in touches.values() for b1, h1 in who for b2, h2 in who)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 300), st.integers(1, 24),
                                   st.integers(0, 40), st.integers(1, 3), st.integers(0, 1)),
                         max_size=5),
                min_size=1, max_size=4))
def test_gm_races_between_blocks_match_a_byte_map(blocks_accesses):
    logs = []
    for accesses in blocks_accesses:
        logs.append(GmLog())
        for how, addr, row, pitch, rows, phase in accesses:
            logs[-1].add(how, ((addr, row, pitch, rows),), phase, "k.py:1", "DataCopy", 5)
    found = blocks_conflict(logs)
    assert (found is not None) == _conflict_by_bytes(blocks_accesses)


def test_a_launch_leaves_the_garbage_collector_as_it_found_it():
    def faulty():
        raise KernelError("Test", "the kernel fails")
    gm = GlobalMemory(1 << 20)
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            with pytest.raises(KernelError):
                run_kernel(faulty, 1, (), soc=SOC, gm=gm)
            assert gc.isenabled() == enabled
        finally:
            gc.enable()


def test_a_finished_block_keeps_only_its_records():
    """A block's TPipe (and the tensors its queues keep for reuse) and its checker state are
    freed as soon as the block's end checks are done, not at the end of the launch: a
    launch of many blocks then holds only their instruction records."""
    alive, previous = [], []

    def kernel():
        if previous:
            alive.append([ref() is not None for ref in previous[-1]])
        pipe = TPipe()
        que = TQue(TPosition.VECIN)
        pipe.InitBuffer(que, 1, 256)
        t = que.AllocTensor(float32)
        t[8]                                   # a kept sub-tensor: refers back to the queue
        que.FreeTensor(t)
        previous.append((weakref.ref(pipe), weakref.ref(que), weakref.ref(current_core().tracker)))

    # block after block (a lockstep launch would run the four blocks as one group)
    run_kernel(kernel, 4, (), soc=SOC, gm=GlobalMemory(1 << 20),
               checks=CheckerConfig(all_blocks=True), lockstep=False)
    assert alive == [[False, False, False]] * 3


# -- the timeline and results against the simulator before its speed-ups --------------------
#: Figures recorded by :func:`_figures` and :func:`_figures_ops` with the simulator as it was
#: before its speed-ups (commit e248529: no paused collector, sorted-list L2 index, per-call
#: views...), the timing fields recorded again when the timing model changed on purpose
#: (the memory system's shared bandwidth, docs/calibration.md), the checksums kept:
#: ``python -c "import sys, json; sys.path.insert(0, 'tests'); import test_optimisations as
#: t; print(json.dumps({'launches': t._figures(), 'operators': t._figures_ops()},
#: separators=(',', ':')))" > tests/data/timeline_before_speedups.json``, after checking
#: that no ``crc`` moved (the operators' figures with the small-dim embedding walk and
#: FusedSparseAdam's merge row by row, as the test below runs them).
BEFORE = Path(__file__).parent / "data" / "timeline_before_speedups.json"


def _figures() -> dict:
    """Timeline (cycles, per-block ends, per-pipe busy cycles, HBM and L2-hit bytes) and
    output checksums of small ApplyFusedEmaAdam launches and Add study cases 4-6."""
    out = {}
    for n, cores, dt, mode in [(6128 * 5 + 17, 4, np.float32, 1), (3000, 48, np.float16, 0),
                               (1 << 18, 48, np.float32, 1)]:
        prof, outs = run(n, cores, False, dt, mode)
        crc = [zlib.crc32(bytes(o)) for o in outs]
        t = prof.timing
        out[f"ema {n} {cores} {np.dtype(dt).name} {mode}"] = dict(
            cycles=t.cycles, block_end=[float(x) for x in t.block_end], hbm=t.hbm_bytes,
            l2hit=t.l2_hit_bytes, busy={str(int(p)): [float(x) for x in v]
                                        for p, v in t.pipe_busy.items()}, crc=crc)
    spec = importlib.util.spec_from_file_location(
        "add_study", Path(__file__).parents[1] / "examples" / "add_study.py")
    study = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(study)
    for case in (4, 5, 6):
        _, prof = study.run_case(case, rows=256, check=True)
        t = prof.timing
        out[f"add case {case}"] = dict(
            cycles=t.cycles, block_end=[float(x) for x in t.block_end], hbm=t.hbm_bytes,
            busy={str(int(p)): [float(x) for x in v] for p, v in t.pipe_busy.items()})
    return out


def test_timeline_and_results_equal_the_simulator_before_its_speed_ups(monkeypatch):
    before = json.loads(BEFORE.read_text())
    assert _figures() == before["launches"]
    # the small-dim embedding walk and FusedSparseAdam's merge as written, row by row: their
    # batched forms record other instructions, and are compared with these loops in
    # test_embedding_dense_backward_kernel.py and test_fused_sparse_adam.py
    from kernel_helpers import row_by_row
    row_by_row(monkeypatch)
    assert _figures_ops() == before["operators"]


def _figures_ops() -> dict:
    """Timelines and output checksums of small launches of every operator through aclnn,
    the scalar-heavy kernels included (small-dim and Atlas-training embedding kernels,
    FusedSparseAdam, ApplyAddSign), each kernel of each graph separately."""
    import aclnn
    from aclnn import acl, runtime
    from aclnn.ops.apply_add_sign import (aclnnApplyAddSign,
                                          aclnnApplyAddSignGetWorkspaceSize)
    from aclnn.ops.embedding_dense_backward import (
        aclnnEmbeddingDenseBackward, aclnnEmbeddingDenseBackwardGetWorkspaceSize)
    from aclnn.ops.fused_sparse_adam import (aclnnFusedSparseAdam,
                                             aclnnFusedSparseAdamGetWorkspaceSize)

    def put(arr):
        arr = np.ascontiguousarray(arr)
        ptr, ret = acl.rt.malloc(max(arr.nbytes, 1), aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0
        acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes,
                      aclnn.ACL_MEMCPY_HOST_TO_DEVICE)
        shape = list(arr.shape)
        return aclnn.aclCreateTensor(shape, aclnn.numpy_to_acl_dtype(arr.dtype),
                                     [s // arr.itemsize for s in arr.strides], 0,
                                     aclnn.ACL_FORMAT_ND, shape, ptr), arr.nbytes

    def run(first, second, *args):
        ws, ex, ret = first(*args)
        assert ret == 0, acl.get_recent_err_msg()
        wptr = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)[0] if ws else 0
        assert second(wptr, ws, ex, stream) == 0
        assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()

    def crc(t, nbytes):
        out = np.zeros(nbytes, np.uint8)
        acl.rt.memcpy(acl.util.numpy_to_ptr(out), nbytes, t.tensor_data, nbytes,
                      aclnn.ACL_MEMCPY_DEVICE_TO_HOST)
        return zlib.crc32(out.tobytes())

    def record(name, outputs):
        dev = runtime.current_device()
        out[name] = {"kernels": [dict(
            op=p.op_name, cycles=p.timing.cycles, block_end=[float(x) for x in p.timing.block_end],
            hbm=p.timing.hbm_bytes, busy={str(int(k)): [float(x) for x in v]
                                          for k, v in p.timing.pipe_busy.items()})
            for p in dev.profiles], "crc": [crc(t, n) for t, n in outputs]}
        dev.profiles.clear()

    out = {}
    rng = np.random.default_rng(7)
    for soc in ("Ascend910B1", "Ascend910A"):
        runtime.reset()
        cfg = Path(tempfile.mkdtemp()) / "acl.json"
        cfg.write_text(json.dumps({"npusim": {"soc": soc}}))
        assert acl.init(str(cfg)) == 0 and acl.rt.set_device(0) == 0
        stream, _ = acl.rt.create_stream()
        cases = [(512, 64, 300, np.float32, False), (512, 64, 300, np.float32, True),
                 (256, 1024, 200, np.float32, True)]
        if soc == "Ascend910B1":
            cases.append((256, 64, 100, np.float16, False))
        for rows, dim, weights, dt, freq in cases:
            g, _ = put(rng.standard_normal((rows, dim)).astype(dt))
            i, _ = put(rng.integers(0, weights, rows).astype(np.int64))
            o, nb = put(np.zeros((weights, dim), dt))
            run(aclnnEmbeddingDenseBackwardGetWorkspaceSize, aclnnEmbeddingDenseBackward,
                g, i, weights, 3, freq, o)
            record(f"{soc} embedding {rows}x{dim} over {weights} {np.dtype(dt).name} "
                   f"freq={freq}", [(o, nb)])
        if soc != "Ascend910B1":
            continue
        var, vb = put(rng.standard_normal((300, 40)).astype(np.float32))
        m, mb = put(rng.standard_normal((300, 40)).astype(np.float32))
        v, vvb = put(np.abs(rng.standard_normal((300, 40))).astype(np.float32))
        gr, _ = put(rng.standard_normal((120, 40)).astype(np.float32))
        ix, _ = put(rng.integers(0, 300, 120).astype(np.int32))
        fsa_scal = [put(np.array([x], np.float32))[0] for x in (0.5, 0.25, 0.01, 0.9, 0.999, 1e-8)]
        run(aclnnFusedSparseAdamGetWorkspaceSize, aclnnFusedSparseAdam, var, m, v, *fsa_scal,
            gr, ix, True)
        record("FusedSparseAdam 300x40, 120 indices, nesterov", [(var, vb), (m, mb), (v, vvb)])
        var, vb = put(rng.standard_normal(5000).astype(np.float32))
        m, mb = put(rng.standard_normal(5000).astype(np.float32))
        scal = [put(np.array([x], np.float32))[0] for x in (0.01, 1.0, 0.5, 0.9)]
        gr, _ = put(rng.standard_normal(5000).astype(np.float32))
        run(aclnnApplyAddSignGetWorkspaceSize, aclnnApplyAddSign, var, m, *scal, gr)
        record("ApplyAddSign 5000", [(var, vb), (m, mb)])
    runtime.reset()
    return out
