"""Bad input at the host API: every entry point answers every bad argument
with its documented status code, a message that names the argument and the rule, no
Python exception, and not one changed byte of device memory.

The tables below are the test: each row calls one entry point with one bad value and
:func:`expect_failure` asserts that the call returns normally, that its status (the last
value returned) is the expected non-zero code, that ``acl.get_recent_err_msg()`` names the
argument (as a word) and holds a word of the rule, and that the CRC-32 of every live
device allocation is the same before the call, after it, and after ``synchronize_device``.

Expected codes are typed in from ``docs/reference/api.md``: §1 (161001 null tensor/scalar,
161002 parameter check error, 361001 runtime failure inside the API), §4 (executor and
second-phase rules: 561103 / 561000 for the executor APIs), §6 (100000 NULL or invalid
parameter, 100001 before acl.init, 107000 bad handle/range/count > destMax, 107001 device
id, 107002 no context, 107006 unrecorded event, 207000 inter-device copy, 207001 out of
device memory, 207002 bad free). Python-only mistakes (a string where a tensor goes, a
destroyed object, a descriptor whose fields were overwritten) take the closest documented
code, as the modules' docstrings say [R].

``acl.util`` functions have no status in pyACL (api.md §5: "ptr only, no ret"); their bad
arguments raise TypeError or ValueError naming the argument, and nothing else escapes.
"""
from __future__ import annotations

import importlib.util
import inspect
import json
import re
import zlib

import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from aclnn.ops.add import (aclnnAdd, aclnnAddGetWorkspaceSize, aclnnInplaceAdd,
                           aclnnInplaceAddGetWorkspaceSize)
from aclnn.ops.apply_add_sign import aclnnApplyAddSign, aclnnApplyAddSignGetWorkspaceSize
from aclnn.ops.apply_fused_ema_adam import (aclnnApplyFusedEmaAdam,
                                            aclnnApplyFusedEmaAdamGetWorkspaceSize)

F32, F16, I64 = aclnn.ACL_FLOAT, aclnn.ACL_FLOAT16, aclnn.ACL_INT64
ND = aclnn.ACL_FORMAT_ND
HAS_EDB = importlib.util.find_spec("aclnn.ops.embedding_dense_backward") is not None
HAS_FSA = importlib.util.find_spec("aclnn.ops.fused_sparse_adam") is not None


# -- the machine -----------------------------------------------------------------------------
class Env:
    """A fresh runtime on Ascend910B1 with two devices; device 0 is current."""

    def __init__(self, tmp_path):
        runtime.reset()
        cfg = tmp_path / "acl.json"
        cfg.write_text(json.dumps({"npusim": {"soc": "Ascend910B1", "device_count": 2}}))
        assert acl.init(str(cfg)) == 0
        assert acl.rt.set_device(1) == 0
        self.other_device_stream, ret = acl.rt.create_stream()
        assert ret == 0
        assert acl.rt.set_device(0) == 0
        self.stream, ret = acl.rt.create_stream()
        assert ret == 0
        self.keep = []                                  # host arrays that must stay alive

    @property
    def gm(self):
        return runtime.current_device().gm

    def malloc(self, nbytes: int) -> int:
        ptr, ret = acl.rt.malloc(max(int(nbytes), 1), aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        assert ret == 0
        return ptr

    def freed_ptr(self, nbytes: int = 64) -> int:
        ptr = self.malloc(nbytes)
        assert acl.rt.free(ptr) == 0
        return ptr

    def host_ptr(self, nbytes: int = 256) -> int:
        arr = np.zeros(nbytes, np.uint8)
        self.keep.append(arr)
        return acl.util.numpy_to_ptr(arr)

    def tensor(self, values, acl_dtype=None):
        arr = np.ascontiguousarray(values)
        dt = acl_dtype if acl_dtype is not None else aclnn.numpy_to_acl_dtype(arr.dtype)
        ptr = self.malloc(arr.nbytes)
        if arr.nbytes:
            assert acl.rt.memcpy(ptr, arr.nbytes, acl.util.numpy_to_ptr(arr), arr.nbytes,
                                 aclnn.ACL_MEMCPY_HOST_TO_DEVICE) == 0
        shape = list(arr.shape)
        return aclnn.aclCreateTensor(shape, dt, None, 0, ND, shape, ptr)

    def rand(self, shape, dtype=np.float32, seed=0):
        return self.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))

    @staticmethod
    def variant(t, *, dims=None, dtype=None, strides="same", offset=None, fmt=None,
                storage=None, data=None):
        """A new descriptor like ``t`` with some fields changed (aclCreateTensor)."""
        dims = list(t.view_dims) if dims is None else list(dims)
        if strides == "same":
            strides = list(t.strides) if dims == list(t.view_dims) else None
        v = aclnn.aclCreateTensor(dims, t.data_type if dtype is None else dtype, strides,
                                  t.offset if offset is None else offset,
                                  t.format if fmt is None else fmt,
                                  list(t.storage_dims) if storage is None else list(storage),
                                  t.tensor_data if data is None else data)
        assert v is not None, acl.get_recent_err_msg()
        return v


@pytest.fixture
def env(tmp_path):
    e = Env(tmp_path)
    yield e
    runtime.reset()


def snapshot(gm) -> dict:
    """{base: (reserved bytes, CRC-32 of the bytes)} of every live allocation."""
    return {a.base: (a.alloc_size, zlib.crc32(a.buf)) for a in gm.allocations()}


def status_of(result):
    return result[-1] if isinstance(result, tuple) else result


def expect_failure(fn, args, code, arg, keywords, api=None):
    """Call ``fn(*args)``; assert the documented failure and no change to device memory.

    ``code`` None means a Create function that returns None (C nullptr) with a message.
    ``arg`` None skips the argument check (state errors name no argument).
    """
    gm = runtime.current_device().gm if runtime.current_device() is not None else None
    before = snapshot(gm) if gm is not None else None
    acl.get_recent_err_msg()                              # start with no pending message
    result = fn(*args)                                    # an exception here fails the test
    if code is None:
        assert result is None
    else:
        assert code != 0 and status_of(result) == code, (result, acl.get_recent_err_msg())
        if isinstance(result, tuple) and getattr(fn, "__name__", "").endswith(
                "GetWorkspaceSize"):
            assert result[:2] == (0, None)                # no workspace size, no executor
    msg = acl.get_recent_err_msg()
    assert msg, "no message for aclGetRecentErrMsg"
    if arg is not None:
        assert re.search(rf"(?<![\w]){re.escape(arg)}(?![\w])", msg), (arg, msg)
    assert any(k.lower() in msg.lower() for k in keywords), (keywords, msg)
    if api is not None:
        assert api in msg, (api, msg)
    if gm is not None:
        assert snapshot(gm) == before, "a failed call changed device memory"
        assert acl.rt.synchronize_device() == 0, acl.get_recent_err_msg()
        assert snapshot(gm) == before, "a failed call left work that changed device memory"
    return msg


# -- the operators' first phases: one row per (operator, argument, bad value) ---------------
def _shape2(t):
    n = t.numel()
    return Env.variant(t, dims=[2 * n], storage=[2 * n])


def _nine_dims(t):
    dims = [1] * (9 - t.ndim) + list(t.view_dims) if t.ndim < 9 else [1] + list(t.view_dims)
    return Env.variant(t, dims=dims, storage=[t.numel()])


def _negative_dim(t):
    v = Env.variant(t)
    v.view_dims = (-max(t.view_dims[0], 1),) + tuple(t.view_dims[1:])   # overwritten field
    return v


def _destroyed(t):
    v = Env.variant(t)
    assert aclnn.aclDestroyTensor(v) == 0
    return v


def _strides_out(t):
    return Env.variant(t, strides=[2 * s for s in t.strides], storage=[t.numel()])


def _offset_out(t):
    return Env.variant(t, offset=t.numel(), storage=[t.numel()])


def _past_end(env, t):
    base = env.malloc(64)                                 # reserves 96 B (ceil32 + 32)
    return Env.variant(t, data=base + 96 - t.view_nbytes() + t.itemsize)


TYPE = ("must be an aclTensor",)
ALLOC = ("device allocation",)
STORAGE = ("storage",)
#: Bad values of a tensor argument: name -> (make(env, valid tensor), code, rule words).
TENSOR_BAD = {
    "None": (lambda e, t: None, 161001, ("null",)),
    "str": (lambda e, t: "x", 161002, TYPE),
    "float": (lambda e, t: 1.5, 161002, TYPE),
    "int": (lambda e, t: 7, 161002, TYPE),
    "object": (lambda e, t: object(), 161002, TYPE),
    "list": (lambda e, t: [4, 8], 161002, TYPE),
    "ndarray": (lambda e, t: np.ones(4, np.float32), 161002, TYPE),
    "aclScalar": (lambda e, t: aclnn.aclCreateScalar(1.0, F32), 161002, TYPE),
    "destroyed": (lambda e, t: _destroyed(t), 161002, ("destroyed",)),
    "dtype UINT64": (lambda e, t: Env.variant(t, dtype=aclnn.ACL_UINT64), 161002, ("dtype",)),
    "dtype STRING": (lambda e, t: Env.variant(t, dtype=aclnn.ACL_STRING), 161002,
                     ("dtype",)),
    "format FRACTAL_NZ": (lambda e, t: Env.variant(t, fmt=aclnn.ACL_FORMAT_FRACTAL_NZ),
                          161002, ("format",)),
    "other shape": (lambda e, t: _shape2(t), 161002, ("shape", "dimension", "element")),
    "9 dims": (lambda e, t: _nine_dims(t), 161002, ("dimension", "shape", "element")),
    "negative dim": (lambda e, t: _negative_dim(t), 161002, ("view dims",)),
    "strides past storage": (lambda e, t: _strides_out(t), 161002, STORAGE),
    "offset past storage": (lambda e, t: _offset_out(t), 161002, STORAGE),
    "freed pointer": (lambda e, t: Env.variant(t, data=e.freed_ptr()), 161002, ALLOC),
    "foreign pointer": (lambda e, t: Env.variant(t, data=0x1000), 161002, ALLOC),
    "host pointer": (lambda e, t: Env.variant(t, data=e.host_ptr()), 161002, ALLOC),
    "null data": (lambda e, t: Env.variant(t, data=0), 161002, ALLOC),
    "past its allocation": (_past_end, 161002, ALLOC),
}
#: Bad values that do not apply to every tensor: a one-element view has no stride to abuse.
NOT_FOR_ONE_ELEMENT = ("strides past storage",)

NUMBER = ("must be a number", "does not fit a double")
DOUBLE_BAD = {"None": None, "str": "0.1", "list": [0.1], "object": object(), "bool": True,
              "complex": 1 + 2j, "2**2000": 2 ** 2000}
MODE_BAD = {"None": None, "2": 2, "-1": -1, "1.0": 1.0, "str": "1", "bool": True}
BOOL_BAD = {"None": None, "str": "yes", "2": 2, "1.5": 1.5, "list": [True]}
UINT64_BAD = {"None": None, "str": "4", "1.5": 1.5, "2**64": 2 ** 64, "bool": True}
SCALAR_BAD = {
    "None": (lambda e: None, 161001, ("null",)),
    "float": (lambda e: 1.2, 161002, ("must be an aclScalar",)),
    "str": (lambda e: "1.2", 161002, ("must be an aclScalar",)),
    "aclTensor": (lambda e: e.rand([1]), 161002, ("must be an aclScalar",)),
    "destroyed": (lambda e: _destroyed_scalar(), 161002, ("destroyed",)),
}


def _destroyed_scalar():
    s = aclnn.aclCreateScalar(1.0, F32)
    assert aclnn.aclDestroyScalar(s) == 0
    return s


def _ema_args(e):
    t = [e.rand([4, 8], seed=i) for i in range(5)]
    t[3] = e.tensor(np.abs(np.random.default_rng(3).standard_normal([4, 8])).astype(np.float32))
    return t + [e.tensor(np.array([3], np.int64)), 1e-3, 0.5, 0.9, 0.999, 1e-8, 1, True, 0.5]


def _add_args(e):
    # other broadcasts, so the executor has a workspace (BroadcastTo) for the second phase
    return [e.rand([4, 8], seed=1), e.rand([8], seed=2), aclnn.aclCreateScalar(1.2, F32),
            e.rand([4, 8], seed=3)]


def _inplace_add_args(e):
    return [e.rand([4, 8], seed=1), e.rand([8], seed=2), aclnn.aclCreateScalar(1.2, F32)]


def _add_sign_args(e):
    scalars = [e.tensor(np.array([v], np.float32)) for v in (0.1, 0.5, 0.9, 0.3)]
    return [e.rand([4, 8], seed=1), e.rand([4, 8], seed=2)] + scalars + [e.rand([4, 8], seed=3)]


def _edb_args(e):
    grad = e.tensor(np.arange(1, 7, dtype=np.float32).reshape(2, 3))
    return [grad, e.tensor(np.array([1, 2], np.int64)), 4, 0, False,
            e.tensor(np.zeros((4, 3), np.float32))]


def _edb_api():
    from aclnn.ops import embedding_dense_backward as m
    return m.aclnnEmbeddingDenseBackwardGetWorkspaceSize, m.aclnnEmbeddingDenseBackward


#: Operator -> (phases(), valid args(env), [(argument, kind)]); kinds: T tensor, S aclScalar,
#: D double, MODE, BOOL, U64 (uint64).
OPS = {
    "aclnnApplyFusedEmaAdam": (
        lambda: (aclnnApplyFusedEmaAdamGetWorkspaceSize, aclnnApplyFusedEmaAdam), _ema_args,
        [("grad", "T"), ("varRef", "T"), ("mRef", "T"), ("vRef", "T"), ("sRef", "T"),
         ("step", "T"), ("lr", "D"), ("emaDecay", "D"), ("beta1", "D"), ("beta2", "D"),
         ("eps", "D"), ("mode", "MODE"), ("biasCorrection", "BOOL"), ("weightDecay", "D")]),
    "aclnnAdd": (lambda: (aclnnAddGetWorkspaceSize, aclnnAdd), _add_args,
                 [("self", "T"), ("other", "T"), ("alpha", "S"), ("out", "T")]),
    "aclnnInplaceAdd": (lambda: (aclnnInplaceAddGetWorkspaceSize, aclnnInplaceAdd),
                        _inplace_add_args, [("selfRef", "T"), ("other", "T"), ("alpha", "S")]),
    "aclnnApplyAddSign": (lambda: (aclnnApplyAddSignGetWorkspaceSize, aclnnApplyAddSign),
                          _add_sign_args,
                          [("varRef", "T"), ("mRef", "T"), ("lr", "T"), ("alpha", "T"),
                           ("signDecay", "T"), ("beta", "T"), ("grad", "T")]),
}
def _fsa_args(e):
    rng = np.random.default_rng(5)
    var, m = (e.tensor(rng.standard_normal((6, 8)).astype(np.float32)) for _ in range(2))
    v = e.tensor(np.abs(rng.standard_normal((6, 8))).astype(np.float32))
    scalars = [e.tensor(np.array([x], np.float32)) for x in (0.9 ** 3, 0.999 ** 3, 0.01, 0.9,
                                                              0.999, 1e-8)]
    return [var, m, v, *scalars,
            e.tensor(rng.standard_normal((4, 8)).astype(np.float32)),
            e.tensor(np.array([0, 2, 2, 5], np.int32)), False]


def _fsa_api():
    from aclnn.ops import fused_sparse_adam as m
    return m.aclnnFusedSparseAdamGetWorkspaceSize, m.aclnnFusedSparseAdam


if HAS_FSA:
    OPS["aclnnFusedSparseAdam"] = (
        _fsa_api, _fsa_args,
        [("varRef", "T"), ("mRef", "T"), ("vRef", "T"), ("beta1Power", "T"),
         ("beta2Power", "T"), ("lr", "T"), ("beta1", "T"), ("beta2", "T"), ("epsilon", "T"),
         ("grad", "T"), ("indices", "T"), ("useNesterov", "BOOL")])
if HAS_EDB:
    OPS["aclnnEmbeddingDenseBackward"] = (
        _edb_api, _edb_args,
        [("grad", "T"), ("indices", "T"), ("numWeights", "U64"), ("paddingIdx", "U64"),
         ("scaleGradByFreq", "BOOL"), ("out", "T")])


def _softmax_args(e):
    return [e.rand([4, 8], seed=1), -1, e.rand([4, 8], seed=2)]


def _softmax_api():
    from aclnn.ops import softmax as m
    return m.aclnnSoftmaxGetWorkspaceSize, m.aclnnSoftmax


def _rms_norm_args(e):
    return [e.rand([4, 8], seed=1), e.rand([8], seed=2), 1e-6, e.rand([4, 8], seed=3),
            e.tensor(np.zeros((4, 1), np.float32))]


def _rms_norm_api():
    from aclnn.ops import rms_norm as m
    return m.aclnnRmsNormGetWorkspaceSize, m.aclnnRmsNorm


OPS["aclnnSoftmax"] = (_softmax_api, _softmax_args, [("self", "T"), ("dim", "DIM"), ("out", "T")])
OPS["aclnnRmsNorm"] = (_rms_norm_api, _rms_norm_args,
                       [("x", "T"), ("gamma", "T"), ("epsilon", "D"), ("yOut", "T"),
                        ("rstdOut", "T")])


def _mm_args(dims_self, dims_mat2, dims_out):
    def make(e):
        return [e.rand(dims_self, seed=1), e.rand(dims_mat2, seed=2), e.rand(dims_out, seed=3), 0]
    return make


def _mm_api(name):
    def phases():
        from aclnn.ops import matmul as m
        return getattr(m, f"{name}GetWorkspaceSize"), getattr(m, name)
    return phases


for _name, _dims in (("aclnnMatmul", ([4, 8], [8, 6], [4, 6])),
                     ("aclnnMm", ([4, 8], [8, 6], [4, 6])),
                     ("aclnnBatchMatMul", ([2, 4, 8], [2, 8, 6], [2, 4, 6]))):
    OPS[_name] = (_mm_api(_name), _mm_args(*_dims),
                  [("self", "T"), ("mat2", "T"), ("out", "T"), ("cubeMathType", "CMT")])
#: cubeMathType (int8_t): not an int, or not one of the documented values.
CMT_BAD = {"None": None, "str": "0", "1.5": 1.5, "bool": True, "5": 5, "-1": -1, "128": 128}
#: An int64 dim (aclnnSoftmax): not an int, or outside [-n, n).
DIM_BAD = {"None": None, "str": "0", "1.5": 1.5, "bool": True, "out of range": 2,
           "2**63": 2 ** 63}
#: Operators whose documents give another code than 161002 to the shape rules:
#: aclnnRmsNorm.md lists them under 561002 (ACLNN_ERR_INNER_TILING_ERROR).
SHAPE_RULE_CODE = {"aclnnRmsNorm": 561002}


def _first_phase_rows():
    rows = []
    for op, (_, _, params) in OPS.items():
        for i, (arg, kind) in enumerate(params):
            bad = {"T": TENSOR_BAD, "S": SCALAR_BAD, "D": DOUBLE_BAD, "MODE": MODE_BAD,
                   "BOOL": BOOL_BAD, "U64": UINT64_BAD, "DIM": DIM_BAD, "CMT": CMT_BAD}[kind]
            for label in bad:
                if op == "aclnnEmbeddingDenseBackward" and arg == "paddingIdx" and label == "2**64":
                    continue      # paddingIdx takes int64 values too (negative = no padding)
                rows.append(pytest.param(op, i, kind, label, id=f"{op}-{arg}-{label}"))
    return rows


@pytest.mark.parametrize("op,index,kind,label", _first_phase_rows())
def test_first_phase_rejects_bad_argument(env, op, index, kind, label):
    phases, valid, params = OPS[op]
    first, _ = phases()
    arg = params[index][0]
    args = valid(env)
    if kind == "T":
        make, code, words = TENSOR_BAD[label]
        if label in NOT_FOR_ONE_ELEMENT and args[index].numel() == 1:
            pytest.skip("a one-element view has no stride that reaches outside its storage")
        args[index] = make(env, args[index])
        if label in ("other shape", "9 dims"):
            code = SHAPE_RULE_CODE.get(op, code)
    elif kind == "S":
        make, code, words = SCALAR_BAD[label]
        args[index] = make(env)
    else:
        args[index] = {"D": DOUBLE_BAD, "MODE": MODE_BAD, "BOOL": BOOL_BAD,
                       "U64": UINT64_BAD, "DIM": DIM_BAD, "CMT": CMT_BAD}[kind][label]
        code = 161002          # a C double/int64/bool cannot be null: a bad value
        words = {"D": NUMBER, "MODE": ("0 (L2) or 1",), "BOOL": ("must be a bool",),
                 "U64": ("uint64",), "DIM": ("int", "range"),
                 "CMT": ("int8_t", "only support")}[kind]
    expect_failure(first, args, code, arg, words, api=first.__name__)


@pytest.mark.parametrize("op", list(OPS))
def test_valid_arguments_run_and_write_the_outputs(env, op):
    """The baseline of the tables: the valid arguments succeed and change device memory,
    so a row that fails does so because of its one bad value."""
    phases, valid, _ = OPS[op]
    first, second = phases()
    ws, ex, ret = first(*valid(env))
    assert ret == 0, acl.get_recent_err_msg()
    wptr = env.malloc(ws) if ws else 0
    before = snapshot(env.gm)
    assert second(wptr, ws, ex, env.stream) == 0, acl.get_recent_err_msg()
    assert acl.rt.synchronize_stream(env.stream) == 0, acl.get_recent_err_msg()
    after = snapshot(env.gm)
    changed = [b for b in before if after[b] != before[b]]
    assert changed, "the operator wrote nothing"


@pytest.mark.parametrize("op", list(OPS))
def test_every_tensor_with_nine_dims(env, op):
    """More than 8 dims on every tensor at once (so no shape mismatch hides the rule)."""
    phases, valid, params = OPS[op]
    first, _ = phases()
    args = valid(env)
    if op == "aclnnEmbeddingDenseBackward":
        args[0] = _nine_dims(args[0])                     # grad; indices follow its rows
        args[1] = Env.variant(args[1], dims=[1] * 8 + [2], storage=[2])
        expect_failure(first, args, 161002, "grad", ("dimension",), api=first.__name__)
        return
    names = [name for name, kind in params if kind == "T"]
    same = [i for i, (name, kind) in enumerate(params) if kind == "T"
            and args[i].view_dims == args[0].view_dims]
    for i in same:
        args[i] = _nine_dims(args[i])
    expect_failure(first, args, SHAPE_RULE_CODE.get(op, 161002), names[0], ("dimension", "8"),
                   api=first.__name__)


def test_create_tensor_with_negative_dims_is_nullptr_then_161001(env):
    expect_failure(aclnn.aclCreateTensor, ([-4, 8], F32, None, 0, ND, [32], env.malloc(128)),
                   None, "viewDims", ("negative",))
    args = _ema_args(env)
    args[0] = aclnn.aclCreateTensor([-4, 8], F32, None, 0, ND, [32], 0)
    expect_failure(aclnnApplyFusedEmaAdamGetWorkspaceSize, args, 161001, "grad", ("null",))


# -- the second phases ---------------------------------------------------------------------
def _prepared(env, op):
    """(second phase, valid args after a successful first phase, first-phase args)."""
    phases, valid, _ = OPS[op]
    first, second = phases()
    fargs = valid(env)
    ws, ex, ret = first(*fargs)
    assert ret == 0 and ws > 0, acl.get_recent_err_msg()
    return second, [env.malloc(ws), ws, ex, env.stream], fargs


def _used(env, args, second):
    assert second(*args) == 0
    assert acl.rt.synchronize_stream(env.stream) == 0
    return args[2]


def _destroyed_executor(env, args, second):
    assert aclnn.aclSetAclOpExecutorRepeatable(args[2]) == 0
    assert aclnn.aclDestroyAclOpExecutor(args[2]) == 0
    return args[2]


def _small_workspace(env, args, second):
    return env.malloc(args[1] - 64)                       # reserves ws - 32 B


def _destroyed_stream(env, args, second):
    s, ret = acl.rt.create_stream()
    assert ret == 0 and acl.rt.destroy_stream(s) == 0
    return s


#: Bad values of the second phase: (argument index, make(env, args, second), code, words).
SECOND_BAD = {
    "workspace None": (0, lambda e, a, s: None, 161001, "workspace", ("nullptr",)),
    "workspace 0": (0, lambda e, a, s: 0, 161001, "workspace", ("nullptr",)),
    "workspace str": (0, lambda e, a, s: "x", 161002, "workspace", ("must be an int",)),
    "workspace float": (0, lambda e, a, s: 1.5, 161002, "workspace", ("must be an int",)),
    "workspace negative": (0, lambda e, a, s: -64, 161002, "workspace", ("must be an int",)),
    "workspace freed": (0, lambda e, a, s: e.freed_ptr(a[1]), 161002, "workspace", ALLOC),
    "workspace foreign": (0, lambda e, a, s: 0x1000, 161002, "workspace", ALLOC),
    "workspace host": (0, lambda e, a, s: e.host_ptr(), 161002, "workspace", ALLOC),
    "workspace too small": (0, _small_workspace, 161002, "workspace", ALLOC),
    "workspaceSize None": (1, lambda e, a, s: None, 161002, "workspaceSize", ("non-negative",)),
    "workspaceSize str": (1, lambda e, a, s: "16", 161002, "workspaceSize", ("non-negative",)),
    "workspaceSize -1": (1, lambda e, a, s: -1, 161002, "workspaceSize", ("non-negative",)),
    "workspaceSize float": (1, lambda e, a, s: float(a[1]), 161002, "workspaceSize",
                            ("non-negative",)),
    "workspaceSize bool": (1, lambda e, a, s: True, 161002, "workspaceSize", ("non-negative",)),
    "workspaceSize too small": (1, lambda e, a, s: a[1] - 1, 161002, "workspace",
                                ("minimum workspace size",)),
    "executor None": (2, lambda e, a, s: None, 161001, "executor", ("nullptr",)),
    "executor str": (2, lambda e, a, s: "x", 161002, "executor", ("aclOpExecutor",)),
    "executor tensor": (2, lambda e, a, s: e.rand([2]), 161002, "executor", ("aclOpExecutor",)),
    "executor used twice": (2, _used, 161002, "executor", ("released",)),
    "executor destroyed": (2, _destroyed_executor, 161002, "executor", ("released",)),
    "stream destroyed": (3, _destroyed_stream, 361001, "stream", ("not a live stream",)),
    "stream str": (3, lambda e, a, s: "x", 361001, "stream", ("not a live stream",)),
    "stream unknown": (3, lambda e, a, s: 12345, 361001, "stream", ("not a live stream",)),
    "stream of device 1": (3, lambda e, a, s: e.other_device_stream, 361001, "stream",
                           ("not a live stream",)),
}


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("label", list(SECOND_BAD))
def test_second_phase_rejects_bad_argument(env, op, label):
    second, args, _ = _prepared(env, op)
    index, make, code, arg, words = SECOND_BAD[label]
    args[index] = make(env, args, second)
    expect_failure(second, args, code, arg, words, api=second.__name__)
    if label not in ("executor used twice", "executor destroyed") and index != 2:
        # a failed second phase leaves the executor runnable (docs/reference/api.md §4 [R])
        _, good, _ = _prepared(env, op)
        assert second(*good) == 0 and acl.rt.synchronize_device() == 0


@pytest.mark.parametrize("op", list(OPS))
def test_tensor_freed_between_the_phases(env, op):
    second, args, fargs = _prepared(env, op)
    first_tensor = next(t for t in fargs if isinstance(t, aclnn.aclTensor))
    assert acl.rt.free(first_tensor.tensor_data) == 0
    # the executor names its tensors as the first phase did ("input[i]" / "output[i]"
    # when the operator gave no names)
    ex = args[2]
    tensors, names = ex.inputs + ex.outputs, ex.input_names + ex.output_names
    name = names[next(i for i, t in enumerate(tensors) if t is first_tensor)]
    assert name == OPS[op][2][0][0] or re.fullmatch(r"(input|output)\[\d+\]", name)
    expect_failure(second, args, 161002, name, ALLOC, api=second.__name__)


@pytest.mark.parametrize("op", list(OPS))
def test_input_address_set_to_freed_memory(env, op):
    second, args, fargs = _prepared(env, op)
    ex = args[2]
    assert aclnn.aclSetAclOpExecutorRepeatable(ex) == 0
    t = ex.inputs[0]
    assert aclnn.aclSetInputTensorAddr(ex, 0, t, env.freed_ptr(t.storage_nbytes())) == 0
    expect_failure(second, args, 161002, ex.input_names[0], ALLOC, api=second.__name__)
    assert aclnn.aclDestroyAclOpExecutor(ex) == 0


# -- the executor API ------------------------------------------------------------------------
def _live_executor(env):
    _, ex, ret = aclnnAddGetWorkspaceSize(*_add_args(env))
    assert ret == 0
    return ex


def _released_executor(env):
    ex = _live_executor(env)
    assert aclnn.aclSetAclOpExecutorRepeatable(ex) == 0 and aclnn.aclDestroyAclOpExecutor(ex) == 0
    return ex


EXECUTOR_ROWS = {   # name: (build(env) -> (fn, args), code, argument, rule words)
    "repeatable None": (lambda e: (aclnn.aclSetAclOpExecutorRepeatable, [None]), 561103,
                        "executor", ("nullptr",)),
    "repeatable str": (lambda e: (aclnn.aclSetAclOpExecutorRepeatable, ["x"]), 561000,
                       "executor", ("not an aclOpExecutor",)),
    "repeatable released": (lambda e: (aclnn.aclSetAclOpExecutorRepeatable,
                                       [_released_executor(e)]), 561000, "executor",
                            ("not a live executor",)),
    "destroy None": (lambda e: (aclnn.aclDestroyAclOpExecutor, [None]), 561103, "executor",
                     ("nullptr",)),
    "destroy tensor": (lambda e: (aclnn.aclDestroyAclOpExecutor, [e.rand([2])]), 561000,
                       "executor", ("not an aclOpExecutor",)),
    "destroy twice": (lambda e: (aclnn.aclDestroyAclOpExecutor, [_released_executor(e)]),
                      561000, "executor", ("not a live executor",)),
}
for _fn in (aclnn.aclSetInputTensorAddr, aclnn.aclSetOutputTensorAddr):
    _n = _fn.__name__
    EXECUTOR_ROWS.update({
        f"{_n} executor None": (lambda e, f=_fn: (f, [None, 0, e.rand([2]), 0]), 161001,
                                "executor", ("nullptr",)),
        f"{_n} executor str": (lambda e, f=_fn: (f, ["x", 0, e.rand([2]), 0]), 161002,
                               "executor", ("aclOpExecutor",)),
        f"{_n} released": (lambda e, f=_fn: (f, [_released_executor(e), 0, e.rand([2]), 0]),
                           161002, "executor", ("released",)),
        f"{_n} index -1": (lambda e, f=_fn: (f, [_live_executor(e), -1, e.rand([2]), 0]),
                           161002, "index", ("index",)),
        f"{_n} index 99": (lambda e, f=_fn: (f, [_live_executor(e), 99, e.rand([2]), 0]),
                           161002, "index", ("index",)),
        f"{_n} index str": (lambda e, f=_fn: (f, [_live_executor(e), "0", e.rand([2]), 0]),
                            161002, "index", ("index",)),
        f"{_n} index bool": (lambda e, f=_fn: (f, [_live_executor(e), True, e.rand([2]), 0]),
                             161002, "index", ("index",)),
        f"{_n} tensor None": (lambda e, f=_fn: (f, [_live_executor(e), 0, None, 0]), 161001,
                              "tensor", ("nullptr",)),
        f"{_n} tensor str": (lambda e, f=_fn: (f, [_live_executor(e), 0, "x", 0]), 161002,
                             "tensor", ("must be an aclTensor",)),
        f"{_n} addr str": (lambda e, f=_fn: (f, [_live_executor(e), 0, e.rand([2]), "x"]),
                           161002, "addr", ("must be an int",)),
        f"{_n} addr negative": (lambda e, f=_fn: (f, [_live_executor(e), 0, e.rand([2]), -1]),
                                161002, "addr", ("must be an int",)),
        f"{_n} addr float": (lambda e, f=_fn: (f, [_live_executor(e), 0, e.rand([2]), 1.5]),
                             161002, "addr", ("must be an int",)),
    })


@pytest.mark.parametrize("row", list(EXECUTOR_ROWS))
def test_executor_api_rejects_bad_argument(env, row):
    build, code, arg, words = EXECUTOR_ROWS[row]
    fn, args = build(env)
    expect_failure(fn, args, code, arg, words, api=fn.__name__)


# -- the object API (aclCreateTensor & co, aclnn/tensor.py) -----------------------------------
def _dead(kind):
    obj = {"tensor": lambda: aclnn.aclCreateTensor([2], F32, None, 0, ND, [2], 0),
           "scalar": lambda: aclnn.aclCreateScalar(1.0, F32),
           "intarray": lambda: aclnn.aclCreateIntArray([1])}[kind]()
    destroy = {"tensor": aclnn.aclDestroyTensor, "scalar": aclnn.aclDestroyScalar,
               "intarray": aclnn.aclDestroyIntArray}[kind]
    assert destroy(obj) == 0
    return obj


def _t():
    return aclnn.aclCreateTensor([2, 2], F32, None, 0, ND, [4], 0)


CT = aclnn.aclCreateTensor
CT_OK = ([4, 8], F32, None, 0, ND, [32], 0)


def _ct(i, value):
    args = list(CT_OK)
    args[i] = value
    return args


OBJECT_ROWS = {   # name: (fn, args(), code or None for a nullptr result, argument, words)
    "CreateTensor viewDims None": (CT, lambda: _ct(0, None), None, "viewDims", ("nullptr",)),
    "CreateTensor viewDims negative": (CT, lambda: _ct(0, [4, -8]), None, "viewDims",
                                       ("negative",)),
    "CreateTensor viewDims str": (CT, lambda: _ct(0, "48"), None, "viewDims", ("sequence",)),
    "CreateTensor viewDims float": (CT, lambda: _ct(0, [4.0, 8]), None, "viewDims",
                                    ("must be an int",)),
    "CreateTensor viewDims int64 overflow": (CT, lambda: _ct(0, [2 ** 63]), None, "viewDims",
                                             ("int64",)),
    "CreateTensor viewDims 2-D array": (CT, lambda: _ct(0, np.ones((2, 2), int)), None,
                                        "viewDims", ("1-D",)),
    "CreateTensor dataType gap": (CT, lambda: _ct(1, 5), None, "dataType", ("not a valid",)),
    "CreateTensor dataType str": (CT, lambda: _ct(1, "float"), None, "dataType",
                                  ("must be an int",)),
    "CreateTensor dataType None": (CT, lambda: _ct(1, None), None, "dataType",
                                   ("must be an int",)),
    "CreateTensor stride length": (CT, lambda: _ct(2, [1]), None, "stride", ("entries",)),
    "CreateTensor stride str": (CT, lambda: _ct(2, ["a", 1]), None, "stride",
                                ("must be an int",)),
    "CreateTensor offset negative": (CT, lambda: _ct(3, -1), None, "offset", (">= 0",)),
    "CreateTensor offset float": (CT, lambda: _ct(3, 1.5), None, "offset", ("must be an int",)),
    "CreateTensor format 99": (CT, lambda: _ct(4, 99), None, "format", ("not a valid",)),
    "CreateTensor format None": (CT, lambda: _ct(4, None), None, "format", ("must be an int",)),
    "CreateTensor storageDims None": (CT, lambda: _ct(5, None), None, "storageDims",
                                      ("nullptr",)),
    "CreateTensor storageDims negative": (CT, lambda: _ct(5, [-32]), None, "storageDims",
                                          ("negative",)),
    "CreateTensor tensorData negative": (CT, lambda: _ct(6, -64), None, "tensorData",
                                         ("address",)),
    "CreateTensor tensorData str": (CT, lambda: _ct(6, "0x1000"), None, "tensorData",
                                    ("address",)),
    "InitTensor tensor None": (aclnn.aclInitTensor, lambda: [None, *CT_OK], 161001, "tensor",
                               ("nullptr",)),
    "InitTensor tensor str": (aclnn.aclInitTensor, lambda: ["x", *CT_OK], 161002, "tensor",
                              ("must be an aclTensor",)),
    "InitTensor destroyed": (aclnn.aclInitTensor, lambda: [_dead("tensor"), *CT_OK], 161002,
                             "tensor", ("destroyed",)),
    "InitTensor viewDims negative": (aclnn.aclInitTensor, lambda: [_t(), *_ct(0, [-1])], 161002,
                                     "viewDims", ("negative",)),
    "InitTensor viewDims None": (aclnn.aclInitTensor, lambda: [_t(), *_ct(0, None)], 161001,
                                 "viewDims", ("nullptr",)),
    "CreateScalar value None": (aclnn.aclCreateScalar, lambda: [None, F32], None, "value",
                                ("nullptr",)),
    "CreateScalar value str": (aclnn.aclCreateScalar, lambda: ["1.0", F32], None, "value",
                               ("number",)),
    "CreateScalar value list": (aclnn.aclCreateScalar, lambda: [[1.0, 2.0], F32], None, "value",
                                ("single number",)),
    "CreateScalar value object": (aclnn.aclCreateScalar, lambda: [object(), F32], None,
                                  "value", ("cannot convert",)),
    "CreateScalar int overflow": (aclnn.aclCreateScalar, lambda: [300, aclnn.ACL_INT8], None,
                                  "value", ("cannot convert",)),
    "CreateScalar dataType STRING": (aclnn.aclCreateScalar, lambda: [1, aclnn.ACL_STRING], None,
                                     "ACL_STRING", ("no numpy dtype",)),
    "CreateScalar dataType gap": (aclnn.aclCreateScalar, lambda: [1, 5], None, "dataType",
                                  ("not a valid",)),
    "CreateIntArray None": (aclnn.aclCreateIntArray, lambda: [None], None, "value",
                            ("nullptr",)),
    "CreateIntArray float": (aclnn.aclCreateIntArray, lambda: [[1.5]], None, "value",
                             ("int64",)),
    "CreateIntArray overflow": (aclnn.aclCreateIntArray, lambda: [[2 ** 63]], None, "value",
                                ("int64",)),
    "CreateIntArray not a sequence": (aclnn.aclCreateIntArray, lambda: [5], None, "value",
                                      ("sequence",)),
    "CreateFloatArray str": (aclnn.aclCreateFloatArray, lambda: [["a"]], None, "value",
                             ("real number",)),
    "CreateFloatArray bool": (aclnn.aclCreateFloatArray, lambda: [[True]], None, "value",
                              ("real number",)),
    "CreateBoolArray 2": (aclnn.aclCreateBoolArray, lambda: [[2]], None, "value", ("bool",)),
    "CreateTensorList str": (aclnn.aclCreateTensorList, lambda: [["x"]], None, "value",
                             ("aclTensor",)),
    "CreateTensorList destroyed": (aclnn.aclCreateTensorList, lambda: [[_dead("tensor")]], None,
                                   "value", ("destroyed",)),
    "CreateTensorList repeated": (aclnn.aclCreateTensorList, lambda: [[_t()] * 2], None,
                                  "value", ("repeats",)),
    "CreateScalarList scalar twice": (aclnn.aclCreateScalarList,
                                      lambda: [[aclnn.aclCreateScalar(1, F32)] * 2], None,
                                      "value", ("repeats",)),
    "CreateScalarList tensor": (aclnn.aclCreateScalarList, lambda: [[_t()]], None, "value",
                                ("aclScalar",)),
}
for _name, _kind, _arg in (("Tensor", "tensor", "tensor"), ("Scalar", "scalar", "scalar"),
                           ("IntArray", "intarray", "array")):
    _fn = getattr(aclnn, f"aclDestroy{_name}")
    OBJECT_ROWS[f"Destroy{_name} twice"] = (_fn, lambda k=_kind: [_dead(k)], 161002, _arg,
                                            ("already destroyed",))
    OBJECT_ROWS[f"Destroy{_name} str"] = (_fn, lambda: ["x"], 161002, _arg, ("expected",))
for _getter in ("aclGetViewShape", "aclGetStorageShape", "aclGetViewStrides",
                "aclGetViewOffset", "aclGetFormat", "aclGetDataType", "aclGetRawTensorAddr"):
    _fn = getattr(aclnn, _getter)
    OBJECT_ROWS[f"{_getter} None"] = (_fn, lambda: [None], 161001, "tensor", ("nullptr",))
    OBJECT_ROWS[f"{_getter} str"] = (_fn, lambda: ["x"], 161002, "tensor",
                                     ("must be an aclTensor",))
    OBJECT_ROWS[f"{_getter} destroyed"] = (_fn, lambda: [_dead("tensor")], 161002, "tensor",
                                           ("destroyed",))
for _getter, _arg in (("aclGetIntArraySize", "array"), ("aclGetFloatArraySize", "array"),
                      ("aclGetBoolArraySize", "array"), ("aclGetTensorListSize", "tensorList"),
                      ("aclGetScalarListSize", "scalarList")):
    _fn = getattr(aclnn, _getter)
    OBJECT_ROWS[f"{_getter} None"] = (_fn, lambda: [None], 161001, _arg, ("nullptr",))
    OBJECT_ROWS[f"{_getter} tensor"] = (_fn, lambda: [_t()], 161002, _arg, ("must be an acl",))
OBJECT_ROWS.update({
    "SetRawTensorAddr tensor None": (aclnn.aclSetRawTensorAddr, lambda: [None, 0], 161001,
                                     "tensor", ("nullptr",)),
    "SetRawTensorAddr destroyed": (aclnn.aclSetRawTensorAddr, lambda: [_dead("tensor"), 0],
                                   161002, "tensor", ("destroyed",)),
    "SetRawTensorAddr addr str": (aclnn.aclSetRawTensorAddr, lambda: [_t(), "x"], 161002,
                                  "addr", ("address",)),
    "SetRawTensorAddr addr negative": (aclnn.aclSetRawTensorAddr, lambda: [_t(), -1], 161002,
                                       "addr", ("address",)),
})


@pytest.mark.parametrize("row", list(OBJECT_ROWS))
def test_object_api_rejects_bad_argument(env, row):
    fn, args, code, arg, words = OBJECT_ROWS[row]
    expect_failure(fn, args(), code, arg, words, api=fn.__name__)


# -- acl.rt: every function, every argument, wrong Python types --------------------------------
RT_DEFAULTS = {   # valid values, built per test (env) -> value
    "size": lambda e: 64, "policy": lambda e: 0, "dev_ptr": lambda e: e.malloc(64),
    "dst": lambda e: e.malloc(64), "dest_max": lambda e: 64, "src": lambda e: e.host_ptr(64),
    "count": lambda e: 16, "kind": lambda e: aclnn.ACL_MEMCPY_HOST_TO_DEVICE,
    "stream": lambda e: e.stream, "event": lambda e: acl.rt.create_event()[0],
    "start": lambda e: acl.rt.create_event()[0], "end": lambda e: acl.rt.create_event()[0],
    "attr": lambda e: 1, "flag": lambda e: 0, "opt": lambda e: 0, "value": lambda e: 0,
    "max_count": lambda e: 64, "device_id": lambda e: 0, "host_ptr": lambda e: 0,
    "context": lambda e: acl.rt.create_context(0)[0],
}
WRONG_TYPES = {"None": None, "str": "x", "float": 1.5, "object": object(), "list": [1],
               "complex": 1j}
#: (function, argument) where None is a valid value: NULL is the default stream (api.md §6).
NONE_IS_VALID = {("synchronize_stream", "stream"), ("memcpy_async", "stream"),
                 ("memset_async", "stream"), ("record_event", "stream"),
                 ("stream_wait_event", "stream")}


def _rt_rows():
    rows = []
    for name in acl.rt.__all__:
        params = list(inspect.signature(getattr(acl.rt, name)).parameters)
        for arg in params:
            for label in WRONG_TYPES:
                if label == "None" and (name, arg) in NONE_IS_VALID:
                    continue
                rows.append(pytest.param(name, arg, label, id=f"{name}-{arg}-{label}"))
    return rows


@pytest.mark.parametrize("name,arg,label", _rt_rows())
def test_rt_rejects_wrong_python_types(env, name, arg, label):
    fn = getattr(acl.rt, name)
    params = list(inspect.signature(fn).parameters)
    args = [RT_DEFAULTS[p](env) if p != "host_ptr" else acl.rt.malloc_host(64)[0]
            for p in params]
    args[params.index(arg)] = WRONG_TYPES[label]
    expect_failure(fn, args, 100000, arg, ("must", "null"), api=f"acl.rt.{name}")


def test_every_rt_function_is_in_the_sweep():
    covered = {p.values[0] for p in _rt_rows()}
    with_args = {n for n in acl.rt.__all__ if inspect.signature(getattr(acl.rt, n)).parameters}
    assert covered == with_args and len(with_args) >= 22


# -- acl.rt: bad values ------------------------------------------------------------------------
def _dead_stream(e):
    s, _ = acl.rt.create_stream()
    assert acl.rt.destroy_stream(s) == 0
    return s


def _dead_event(e):
    ev, _ = acl.rt.create_event()
    assert acl.rt.destroy_event(ev) == 0
    return ev


H2D, D2H, D2D = (aclnn.ACL_MEMCPY_HOST_TO_DEVICE, aclnn.ACL_MEMCPY_DEVICE_TO_HOST,
                 aclnn.ACL_MEMCPY_DEVICE_TO_DEVICE)
RT_VALUE_ROWS = {   # name: (fn, args(env), code, argument, rule words)
    "set_device 2": ("set_device", lambda e: [2], 107001, "device_id", ("out of range",)),
    "set_device -1": ("set_device", lambda e: [-1], 107001, "device_id", ("out of range",)),
    "reset_device 7": ("reset_device", lambda e: [7], 107001, "device_id", ("out of range",)),
    "destroy_stream NULL": ("destroy_stream", lambda e: [0], 100000, "stream", ("null",)),
    "destroy_stream destroyed": ("destroy_stream", lambda e: [_dead_stream(e)], 107000,
                                 "stream", ("not a live stream",)),
    "destroy_stream other device": ("destroy_stream", lambda e: [e.other_device_stream], 107003,
                                    "stream", ("belongs to device",)),
    "synchronize_stream destroyed": ("synchronize_stream", lambda e: [_dead_stream(e)], 107000,
                                     "stream", ("not a live stream",)),
    "synchronize_stream unknown": ("synchronize_stream", lambda e: [424242], 107000, "stream",
                                   ("not a live stream",)),
    "malloc 0": ("malloc", lambda e: [0, 0], 100000, "size", ("must not be 0",)),
    "malloc -1": ("malloc", lambda e: [-1, 0], 100000, "size", ("must not be 0",)),
    "malloc policy 8": ("malloc", lambda e: [64, 8], 100000, "policy", ("aclrtMemMallocPolicy",)),
    "malloc out of memory": ("malloc", lambda e: [e.gm.free_bytes, 0], 207001, "size",
                             ("out of device memory",)),
    "malloc 2**70": ("malloc", lambda e: [2 ** 70, 0], 207001, "size",
                     ("out of device memory",)),
    "free NULL": ("free", lambda e: [0], 100000, "dev_ptr", ("non-null",)),
    "free freed": ("free", lambda e: [e.freed_ptr()], 207002, "dev_ptr",
                   ("not the start of a live",)),
    "free foreign": ("free", lambda e: [0x1000], 207002, "dev_ptr", ("not the start of a live",)),
    "free interior": ("free", lambda e: [e.malloc(256) + 64], 207002, "dev_ptr",
                      ("not the start of a live",)),
    "malloc_host 0": ("malloc_host", lambda e: [0], 100000, "size", ("positive",)),
    "free_host NULL": ("free_host", lambda e: [0], 100000, "host_ptr", ("non-null",)),
    "free_host numpy": ("free_host", lambda e: [e.host_ptr()], 207002, "host_ptr",
                        ("malloc_host",)),
    "memcpy count > destMax": ("memcpy", lambda e: [e.malloc(64), 32, e.host_ptr(), 64, H2D],
                               107000, "count", ("exceeds dest_max",)),
    "memcpy NULL dst": ("memcpy", lambda e: [0, 64, e.host_ptr(), 64, H2D], 100000, "dst",
                        ("null",)),
    "memcpy NULL src": ("memcpy", lambda e: [e.malloc(64), 64, 0, 64, H2D], 100000, "src",
                        ("null",)),
    "memcpy kind 9": ("memcpy", lambda e: [e.malloc(64), 64, e.host_ptr(), 64, 9], 100000,
                      "kind", ("aclrtMemcpyKind",)),
    "memcpy inter-device": ("memcpy", lambda e: [e.malloc(64), 64, e.malloc(64), 64, 7],
                            207000, "kind", ("not simulated",)),
    "memcpy freed dst": ("memcpy", lambda e: [e.freed_ptr(), 64, e.host_ptr(), 64, H2D],
                         107000, "dst", ("not inside a live allocation",)),
    "memcpy foreign dst": ("memcpy", lambda e: [0x1000, 64, e.host_ptr(), 64, H2D], 107000,
                           "dst", ("not inside a live allocation",)),
    "memcpy past the allocation": ("memcpy", lambda e: [e.malloc(64), 4096, e.host_ptr(4096),
                                                        4096, H2D], 107000, "dst", ("past",)),
    "memcpy unmapped host src": ("memcpy", lambda e: [e.malloc(64), 64, 0x1000, 64, H2D], 107000,
                                 "src", ("not readable host memory",)),
    "memcpy device as host dst": ("memcpy", lambda e: [e.malloc(64), 64, e.malloc(64), 64, D2H],
                                  107000, "dst", ("is device memory",)),
    "memcpy host range past its buffer": ("memcpy", lambda e: [e.malloc(256), 256,
                                                               e.host_ptr(64), 256, H2D],
                                          107000, "src", ("past the end",)),
    "memcpy D2D freed src": ("memcpy", lambda e: [e.malloc(64), 64, e.freed_ptr(), 64, D2D],
                             107000, "src", ("not inside a live allocation",)),
    "memcpy_async destroyed stream": ("memcpy_async", lambda e: [e.malloc(64), 64, e.host_ptr(),
                                                                 64, H2D, _dead_stream(e)],
                                      107000, "stream", ("not a live stream",)),
    "memcpy_async count > destMax": ("memcpy_async", lambda e: [e.malloc(64), 16, e.host_ptr(),
                                                                64, H2D, e.stream], 107000,
                                     "count", ("exceeds dest_max",)),
    "memset count > max": ("memset", lambda e: [e.malloc(64), 16, 1, 64], 107000, "count",
                           ("exceeds max_count",)),
    "memset NULL": ("memset", lambda e: [0, 64, 1, 64], 100000, "dev_ptr", ("null",)),
    "memset freed": ("memset", lambda e: [e.freed_ptr(), 64, 1, 64], 107000, "dev_ptr",
                     ("not inside a live allocation",)),
    "memset past the allocation": ("memset", lambda e: [e.malloc(64), 4096, 1, 4096], 107000,
                                   "dev_ptr", ("past",)),
    "memset_async destroyed stream": ("memset_async", lambda e: [e.malloc(64), 64, 1, 64,
                                                                 _dead_stream(e)], 107000,
                                      "stream", ("not a live stream",)),
    "get_mem_info attr 99": ("get_mem_info", lambda e: [99], 100000, "attr", ("aclrtMemAttr",)),
    "create_event_with_flag 0x4": ("create_event_with_flag", lambda e: [0x4], 100000, "flag",
                                   ("ACL_EVENT_",)),
    "destroy_event NULL": ("destroy_event", lambda e: [0], 100000, "event", ("null",)),
    "destroy_event destroyed": ("destroy_event", lambda e: [_dead_event(e)], 107000, "event",
                                ("not a live event",)),
    "record_event destroyed event": ("record_event", lambda e: [_dead_event(e), e.stream],
                                     107000, "event", ("not a live event",)),
    "record_event destroyed stream": ("record_event", lambda e: [acl.rt.create_event()[0],
                                                                 _dead_stream(e)], 107000,
                                      "stream", ("not a live stream",)),
    "stream_wait_event destroyed event": ("stream_wait_event", lambda e: [e.stream,
                                                                          _dead_event(e)],
                                          107000, "event", ("not a live event",)),
    "stream_wait_event destroyed stream": ("stream_wait_event",
                                           lambda e: [_dead_stream(e), acl.rt.create_event()[0]],
                                           107000, "stream", ("not a live stream",)),
    "synchronize_event destroyed": ("synchronize_event", lambda e: [_dead_event(e)], 107000,
                                    "event", ("not a live event",)),
    "query_event_status destroyed": ("query_event_status", lambda e: [_dead_event(e)], 107000,
                                     "event", ("not a live event",)),
    "event_elapsed_time destroyed": ("event_elapsed_time",
                                     lambda e: [_dead_event(e), acl.rt.create_event()[0]],
                                     107000, "start", ("not a live event",)),
    "event_elapsed_time never recorded": ("event_elapsed_time",
                                          lambda e: [acl.rt.create_event()[0],
                                                     acl.rt.create_event()[0]],
                                          107006, "start", ("never been recorded",)),
    "ctx_set_sys_param_opt opt 7": ("ctx_set_sys_param_opt", lambda e: [7, 1], 100000, "opt",
                                    ("ACL_OPT_DETERMINISTIC",)),
    "ctx_set_sys_param_opt value 2": ("ctx_set_sys_param_opt", lambda e: [0, 2], 100000,
                                      "value", ("0 or 1",)),
    "ctx_get_sys_param_opt opt 3": ("ctx_get_sys_param_opt", lambda e: [3], 100000, "opt",
                                    ("ACL_OPT_DETERMINISTIC",)),
}


@pytest.mark.parametrize("row", list(RT_VALUE_ROWS))
def test_rt_rejects_bad_value(env, row):
    name, args, code, arg, words = RT_VALUE_ROWS[row]
    expect_failure(getattr(acl.rt, name), args(env), code, arg, words, api=f"acl.rt.{name}")


def test_failed_malloc_and_free_keep_the_memory_accounting(env):
    keep = env.malloc(1000)
    free0, total, ret = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
    assert ret == 0
    assert acl.rt.malloc(free0 + 1, 0) == (0, 207001)
    assert acl.rt.free(keep + 32) == 207002
    assert acl.rt.get_mem_info(aclnn.ACL_HBM_MEM) == (free0, total, 0)
    assert acl.rt.free(keep) == 0
    assert acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)[0] == free0 + 1024 + 32   # ceil32(1000) + 32


# -- no context, no init --------------------------------------------------------------------
NO_DEVICE_ARGS = {
    "synchronize_device": [], "create_stream": [], "get_device": [],
    "destroy_stream": [0x5A0000], "synchronize_stream": [0], "malloc": [64, 0],
    "free": [0x12C040000000], "memcpy": [0x12C040000000, 8, 0x12C040000400, 8, 3],
    "memset": [0x12C040000000, 8, 0, 8], "get_mem_info": [1], "create_event": [],
    "memcpy_async": [0x12C040000000, 8, 0x12C040000400, 8, 3, 0],
    "memset_async": [0x12C040000000, 8, 0, 8, 0],
    "create_event_with_flag": [8], "destroy_event": [0x5E0000],
    "record_event": [0x5E0000, 0], "stream_wait_event": [0, 0x5E0000],
    "synchronize_event": [0x5E0000], "query_event_status": [0x5E0000],
    "event_elapsed_time": [0x5E0000, 0x5E0001], "ctx_set_sys_param_opt": [0, 1],
    "ctx_get_sys_param_opt": [0], "get_context": [],
}


@pytest.mark.parametrize("name", sorted(NO_DEVICE_ARGS))
def test_rt_without_a_current_device(tmp_path, name):
    runtime.reset()
    try:
        assert acl.init() == 0
        expect_failure(getattr(acl.rt, name), NO_DEVICE_ARGS[name], 107002, None,
                       ("set_device",), api=f"acl.rt.{name}")
    finally:
        runtime.reset()


def test_state_tables_cover_every_rt_function():
    no_state = {"set_device", "reset_device", "get_device_count", "malloc_host", "free_host",
                "create_context", "destroy_context", "set_context", "set_current_context",
                "get_run_mode"}
    assert set(NO_DEVICE_ARGS) | no_state == set(acl.rt.__all__)


@pytest.mark.parametrize("name,args", [("set_device", [0]), ("reset_device", [0]),
                                       ("get_device_count", [])])
def test_rt_before_acl_init(name, args):
    runtime.reset()
    try:
        expect_failure(getattr(acl.rt, name), args, 100001, None, ("acl.init",),
                       api=f"acl.rt.{name}")
    finally:
        runtime.reset()


def test_acl_init_and_finalize_bad_calls(tmp_path):
    runtime.reset()
    try:
        bad_json = tmp_path / "bad.json"
        bad_json.write_text("{")
        unknown_soc = tmp_path / "soc.json"
        unknown_soc.write_text(json.dumps({"npusim": {"soc": "Ascend999"}}))
        assert expect_failure(acl.finalize, [], 100001, None, ("acl.init",))
        expect_failure(acl.init, [123], 100000, "config_path", ("must be a file path",))
        expect_failure(acl.init, [object()], 100000, "config_path", ("must be a file path",))
        expect_failure(acl.init, ["acl\0.json"], 100003, "config", ("null byte",))
        expect_failure(acl.init, [str(tmp_path / "none.json")], 100003, "config",
                       ("cannot read",))
        expect_failure(acl.init, [str(bad_json)], 100006, "config", ("not valid JSON",))
        expect_failure(acl.init, [str(unknown_soc)], 100006, "soc", ("Ascend999",))
        assert acl.init() == 0
        expect_failure(acl.init, [], 100002, None, ("already initialised",))
        assert acl.finalize() == 0
        expect_failure(acl.finalize, [], 100037, None, ("already finalised",))
    finally:
        runtime.reset()


# -- acl.util: no status in pyACL, so TypeError / ValueError naming the argument -------------
def _util_rows(e):
    hp = e.host_ptr(64)
    dev = e.malloc(64)
    strided = np.zeros((4, 4))[:, 1]
    return {
        "numpy_to_ptr list": (acl.util.numpy_to_ptr, [[1, 2]], TypeError, "arr"),
        "numpy_to_ptr strided": (acl.util.numpy_to_ptr, [strided], ValueError, "arr"),
        "bytes_to_ptr int": (acl.util.bytes_to_ptr, [5], TypeError, "b"),
        "ptr_to_numpy ptr None": (acl.util.ptr_to_numpy, [None, 4, np.float32], TypeError, "ptr"),
        "ptr_to_numpy ptr 0": (acl.util.ptr_to_numpy, [0, 4, np.float32], ValueError, "ptr"),
        "ptr_to_numpy unmapped": (acl.util.ptr_to_numpy, [0x1000, 4, np.float32], ValueError,
                                  "ptr"),
        "ptr_to_numpy device": (acl.util.ptr_to_numpy, [dev, 4, np.float32], ValueError, "ptr"),
        "ptr_to_numpy past the buffer": (acl.util.ptr_to_numpy, [hp, 100, np.float32],
                                         ValueError, "ptr"),
        "ptr_to_numpy shape str": (acl.util.ptr_to_numpy, [hp, "4", np.float32], TypeError,
                                   "shape"),
        "ptr_to_numpy shape negative": (acl.util.ptr_to_numpy, [hp, (-1,), np.float32],
                                        ValueError, "shape"),
        "ptr_to_numpy npy_type str": (acl.util.ptr_to_numpy, [hp, 4, "nope"], TypeError,
                                      "npy_type"),
        "ptr_to_numpy npy_type number": (acl.util.ptr_to_numpy, [hp, 4, 9999], ValueError,
                                         "npy_type"),
        "ptr_to_numpy npy_type object": (acl.util.ptr_to_numpy, [hp, 4, object], ValueError,
                                         "npy_type"),
        "ptr_to_bytes size -1": (acl.util.ptr_to_bytes, [hp, -1], ValueError, "size"),
        "ptr_to_bytes size str": (acl.util.ptr_to_bytes, [hp, "8"], TypeError, "size"),
        "ptr_to_bytes unmapped": (acl.util.ptr_to_bytes, [0x1000, 8], ValueError, "ptr"),
        "ptr_to_bytes stale device pointer": (acl.util.ptr_to_bytes, [e.freed_ptr(), 8],
                                              ValueError, "ptr"),
    }


def test_util_raises_only_type_or_value_errors_naming_the_argument(env):
    rows = _util_rows(env)
    for label, (fn, args, exc_type, arg) in rows.items():
        before = snapshot(env.gm)
        with pytest.raises(exc_type) as info:
            fn(*args)
        assert type(info.value) is exc_type, label
        assert re.search(rf"\b{arg}\b", str(info.value)), (label, str(info.value))
        assert snapshot(env.gm) == before, label
    assert acl.get_recent_err_msg() is None


def test_host_range_check_accepts_real_memory_and_refuses_holes():
    from aclnn.acl.util import host_range_mapped
    arr = np.zeros(4096, np.uint8)
    assert host_range_mapped(arr.ctypes.data, arr.nbytes, writable=True)
    assert not host_range_mapped(0x1000, 8)
    assert not host_range_mapped(0, 8)
    assert not host_range_mapped((1 << 64) - 4, 8)
    assert host_range_mapped(0x1000, 0)                  # nothing to touch


def test_every_operator_is_in_the_tables():
    """Every aclnn operator module has its row set (a new one must be added to OPS)."""
    import pkgutil
    import aclnn.ops
    modules = {m.name for m in pkgutil.iter_modules(aclnn.ops.__path__)
               if not m.name.startswith("_")}
    spelled = {"add": "aclnnAdd", "apply_add_sign": "aclnnApplyAddSign",
               "apply_fused_ema_adam": "aclnnApplyFusedEmaAdam",
               "embedding_dense_backward": "aclnnEmbeddingDenseBackward",
               "fused_sparse_adam": "aclnnFusedSparseAdam", "softmax": "aclnnSoftmax",
               "rms_norm": "aclnnRmsNorm", "matmul": "aclnnMatmul"}
    assert modules <= set(spelled), f"operator modules without rows: {modules - set(spelled)}"
    assert {spelled[m] for m in modules} <= set(OPS)


# -- acl.rt: a read-only host destination ------------------------------------------------------
@pytest.mark.parametrize("api", ["memcpy", "memcpy_async"])
@pytest.mark.parametrize("kind", [D2H, aclnn.ACL_MEMCPY_HOST_TO_HOST, aclnn.ACL_MEMCPY_DEFAULT])
def test_copy_into_a_read_only_numpy_array_is_refused(env, api, kind):
    """A numpy array whose flags.writeable is False is no copy destination: 107000 naming
    dst, and the array keeps its bytes (before and after the stream runs)."""
    src_host = np.arange(16, dtype=np.float32)
    ptr = env.malloc(src_host.nbytes)
    assert acl.rt.memcpy(ptr, 64, acl.util.numpy_to_ptr(src_host), 64, H2D) == 0
    src = ptr if kind != aclnn.ACL_MEMCPY_HOST_TO_HOST else acl.util.numpy_to_ptr(src_host)
    target = np.full(16, -1.0, np.float32)
    target.flags.writeable = False
    args = [acl.util.numpy_to_ptr(target), 64, src, 64, kind]
    if api == "memcpy_async":
        args.append(env.stream)
    expect_failure(getattr(acl.rt, api), args, 107000, "dst", ("read-only",),
                   api=f"acl.rt.{api}")
    assert acl.rt.synchronize_stream(env.stream) == 0
    assert (target == -1.0).all()


def test_async_copy_into_an_array_made_read_only_before_it_runs_fails_at_sync(env):
    ptr = env.malloc(64)
    target = np.full(16, -1.0, np.float32)
    assert acl.rt.memcpy_async(acl.util.numpy_to_ptr(target), 64, ptr, 64, D2H,
                               env.stream) == 0
    target.flags.writeable = False
    # a host-side failure of a task: ACL_ERROR_RT_INTERNAL_ERROR, as for unmapped memory
    assert acl.rt.synchronize_stream(env.stream) == 507000
    assert "read-only" in acl.get_recent_err_msg()
    assert (target == -1.0).all()
