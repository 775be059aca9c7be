"""The MindSpore-style front end (aclnn.mindspore), without MindSpore installed: the MindSpore API documents'
examples print the documents' outputs; ApplyAddSign, FusedSparseAdam and AdamOffload against
formula goldens written from the documents; MindSpore's implicit type conversion rules
(mindspore.cn note/operator_list_implicit) on hand-computed cases; each documented exception
with nothing changed; Tensor and Parameter as MindSpore builds and prints them (MindSpore
2.10, measured). tests/test_mindspore_reference.py compares with MindSpore itself."""
import re

import numpy as np
import pytest

import aclnn.mindspore.common.dtype as mstype
from aclnn import acl, runtime
from aclnn.mindspore import Parameter, Tensor, nn, ops
from npusim.kernels.apply_add_sign.golden import apply_add_sign_golden
from npusim.kernels.fused_sparse_adam.golden import fused_sparse_adam_golden

from aclnn_helpers import init_runtime, load_example, run_example

F32 = np.float32


def squash(text: str) -> str:
    """Whitespace-normalised text: the captured documents lost their line breaks."""
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(autouse=True)
def fresh_runtime():
    """No device set: the front end initialises one (device 0, default SoC) on first use."""
    runtime.reset()
    yield
    runtime.reset()


# -- the documents' examples -----------------------------------------------------------------------
#: Printed by the example of the MindSpore API document mindspore.ops.ApplyAddSign (mindspore.cn).
APPLY_ADD_SIGN_PRINTED = (
    "(Tensor(shape=[2, 2], dtype=Float32, value= [[ 5.99403024e-01, 3.98607016e-01], "
    "[ 9.98010039e-02, 4.98407990e-01]]), Tensor(shape=[2, 2], dtype=Float32, value= "
    "[[ 5.70000052e-01, 5.19999981e-01], [ 1.89999998e-01, 6.20000064e-01]]))")
#: Printed by the example of the MindSpore API document mindspore.ops.FusedSparseAdam (mindspore.cn).
FUSED_SPARSE_ADAM_PRINTED = ("[[[0.9996963 0.9996977 ]] [[0.99970144 0.9996992 ]] "
                             "[[0.99971527 0.99971527]]]")
SEED_VAR = np.array([[0.6, 0.4], [0.1, 0.5]], F32)
SEED_M = np.array([[0.6, 0.5], [0.2, 0.6]], F32)
SEED_GRAD = np.array([[0.3, 0.7], [0.1, 0.8]], F32)


def test_apply_add_sign_example_prints_the_documents_output(capsys):
    net, output = run_example("mindspore_apply_add_sign")
    assert squash(capsys.readouterr().out) == APPLY_ADD_SIGN_PRINTED
    want_var, want_m = apply_add_sign_golden(SEED_VAR, SEED_M, *map(F32, (0.001, 1.0, 0.99, 0.9)),
                                             SEED_GRAD)
    # the Parameters were updated in place, and the outputs are their values
    np.testing.assert_allclose(net.var.asnumpy(), want_var, rtol=1e-6)
    np.testing.assert_allclose(net.m.asnumpy(), want_m, rtol=1e-6)
    np.testing.assert_array_equal(output[0].asnumpy(), net.var.asnumpy())
    np.testing.assert_array_equal(output[1].asnumpy(), net.m.asnumpy())


def test_fused_sparse_adam_example_runs_and_its_unindexed_row_prints_as_documented(capsys):
    net, gradient, output = run_example("mindspore_fused_sparse_adam")
    printed = squash(capsys.readouterr().out)
    assert printed.endswith("[[0.99971527 0.99971527]]]")
    ones = np.ones((3, 1, 2), F32)
    want = fused_sparse_adam_golden(ones, ones, ones, *map(F32, (0.9, 0.999, 0.001, 0.9, 0.999,
                                                                 1e-8)),
                                    gradient.asnumpy(), [0, 1])
    for p, w in zip((net.var, net.m, net.v), want):
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-6, atol=1e-7)
    # "Tuple of 3 Tensors ... the outputs are useless", each "A Tensor with shape (1,)"
    assert len(output) == 3 and all(o.shape == (1,) for o in output)


def _documented_var_row(g):
    """var of a row of ones after one step with one gradient value g (float32 array), in
    MindSpore's CPU order (docs/reference/operators.md §4), seed scalars."""
    f = F32
    lr_t = (f(0.001) * np.sqrt(f(1) - f(0.999))) / (f(1) - f(0.9))
    m = f(0.9) + g * (f(1) - f(0.9))
    v = f(0.999) + (g * (f(1) - f(0.999))) * g
    return f(1) - (lr_t * m) / (np.sqrt(v) + f(1e-8))


def test_fused_sparse_adam_example_prints_the_documents_values_for_some_rand_gradient(capsys):
    """The document's rows 0 and 1 come from np.random.rand: find gradients in [0, 1) that
    give each printed value, run the document's Net with them, and print the document."""
    printed = [float(x) for x in re.findall(r"[\d.]+", FUSED_SPARSE_ADAM_PRINTED)]
    grid = np.arange(0, 1, 2 ** -20, dtype=np.float64).astype(F32)
    rows = _documented_var_row(grid)
    grad = []
    for p in printed[:4]:
        hits = grid[rows == F32(p)]
        assert hits.size, f"no gradient in [0, 1) gives {p}"
        grad.append(hits[hits.size // 2])
    module = load_example("mindspore_fused_sparse_adam")
    net = module.Net()
    s = [Tensor(x, mstype.float32) for x in (0.9, 0.999, 0.001, 0.9, 0.999, 1e-8)]
    net(*s, Tensor(np.array(grad, F32).reshape(2, 1, 2), mstype.float32),
        Tensor([0, 1], mstype.int32))
    print(net.var.asnumpy())
    assert squash(capsys.readouterr().out) == FUSED_SPARSE_ADAM_PRINTED


def adam_golden(w, grads, lr, b1, b2, eps, wd=0.0, loss_scale=1.0, nesterov=False):
    """The seed's update formula (mindspore.nn.AdamOffload.txt) in float64, step after step,
    with L2 decay on the unscaled gradient (g/loss_scale + wd*w, docs/reference/operators.md §5)."""
    w, m, v = np.asarray(w, np.float64), 0.0, 0.0
    for t, g in enumerate(grads, start=1):
        g = np.asarray(g, np.float64) / loss_scale + wd * w
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - lr_t * (b1 * m + (1 - b1) * g if nesterov else m) / (np.sqrt(v) + eps)
    return w


def test_adam_offload_example_groups_take_their_learning_rate_and_decay(capsys):
    net, optim, before, gradients = run_example("mindspore_adam_offload")
    assert capsys.readouterr().out.startswith("True\n")
    assert [p.name for p in optim.parameters] == [p.name for p in net.trainable_params()]
    for p, w0, g in zip(optim.parameters, before, gradients):
        conv = "conv" in p.name
        want = adam_golden(w0, [g.asnumpy()], 0.1 if conv else 0.01, 0.9, 0.999, 1e-8,
                           wd=0.01 if conv else 0.0)
        np.testing.assert_allclose(p.asnumpy(), want, rtol=1e-5, atol=1e-6, err_msg=p.name)


# -- Tensor, Parameter, Cell --------------------------------------------------------------------
def test_tensor_dtypes_follow_mindspore():
    """MindSpore 2.10, measured: Tensor(0.9, float32).shape == (); Python int -> Int64,
    float -> Float32, a float64 array stays Float64."""
    assert Tensor(0.9, mstype.float32).shape == () and Tensor(0.9).dtype is mstype.float32
    assert Tensor(1).dtype is mstype.int64 and Tensor(True).dtype is mstype.bool_
    assert Tensor([1.0, 2.0]).dtype is mstype.float32
    assert Tensor(np.zeros(2)).dtype is mstype.float64
    assert Tensor([0, 1], mstype.int32).dtype is mstype.int32
    assert Tensor(np.random.rand(2, 1, 2), mstype.float32).asnumpy().dtype == F32
    with pytest.raises(TypeError, match="input_data"):
        Tensor("0.9")
    with pytest.raises(TypeError, match="dtype"):
        Tensor(0.9, np.float32)


@pytest.mark.parametrize("value,printed", [
    (np.float32(0.5), "Tensor(shape=[], dtype=Float32, value= 0.5)"),
    (np.array([1, 2], np.int32), "Tensor(shape=[2], dtype=Int32, value= [1, 2])"),
    (np.array([True, False]), "Tensor(shape=[2], dtype=Bool, value= [ True, False])"),
    (np.array([0.5996, 0.3984], np.float16),
     "Tensor(shape=[2], dtype=Float16, value= [ 5.9961e-01,  3.9844e-01])"),
    (np.array([np.nan, np.inf, 1.0], F32),
     "Tensor(shape=[3], dtype=Float32, value= [            nan,             inf,  1.00000000e+00])"),
    (np.array([[1.5, -2.25], [3.0, 4.0]], F32),
     "Tensor(shape=[2, 2], dtype=Float32, value=\n[[ 1.50000000e+00, -2.25000000e+00],\n"
     " [ 3.00000000e+00,  4.00000000e+00]])"),
])
def test_tensor_prints_as_mindspore_does(value, printed):
    """Strings printed by MindSpore 2.10 (CPU) for the same values."""
    assert repr(Tensor(value)) == printed


def test_parameter_and_cell():
    class Net(nn.Cell):
        def __init__(self):
            super(Net, self).__init__()
            self.w = Parameter(Tensor(np.ones((2, 2), F32)))            # named by the Cell
            self.frozen = Parameter(Tensor(np.zeros(2, F32)), name="f", requires_grad=False)
            self.b = Parameter(Tensor(np.zeros(2, F32)), name="bias")

        def construct(self, x):
            return x

    net = Net()
    assert [p.name for p in net.trainable_params()] == ["w", "bias"]
    assert net(3) == 3
    assert repr(net.w) == "Parameter (name=w, shape=(2, 2), dtype=Float32, requires_grad=True)"
    with pytest.raises(NotImplementedError):
        nn.Cell()()


# -- ApplyAddSign -------------------------------------------------------------------------------
def add_sign(var, m, lr=0.001, alpha=1.0, sign_decay=0.99, beta=0.9, grad=None):
    var = var if isinstance(var, Tensor) else Parameter(Tensor(var), name="var")
    m = m if isinstance(m, Tensor) else Parameter(Tensor(m), name="m")
    grad = Tensor(SEED_GRAD) if grad is None else grad
    return var, m, ops.ApplyAddSign()(var, m, lr, alpha, sign_decay, beta, grad)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-6), (np.float16, 2e-3)])
def test_apply_add_sign_matches_the_formula_and_runs_on_the_device(dtype, tol):
    rng = np.random.default_rng(0)
    var0, m0, g = (rng.standard_normal((5, 33)).astype(dtype) for _ in range(3))
    var, m, (out_var, out_m) = add_sign(var0, m0, 0.01, Tensor(np.array(0.5, dtype)), 0.25,
                                        Tensor(np.array([0.8], dtype)), Tensor(g))
    want = apply_add_sign_golden(var0, m0, *(float(dtype(x)) for x in (0.01, 0.5, 0.25, 0.8)), g)
    np.testing.assert_allclose(var.asnumpy(), want[0], rtol=tol, atol=tol)
    np.testing.assert_allclose(m.asnumpy(), want[1], rtol=tol, atol=tol)
    assert out_var.dtype is var.dtype is mstype.from_numpy(dtype)
    assert runtime.current_device().profiles[-1].op_name == "ApplyAddSign"


def _seed_golden(grad=SEED_GRAD, lr=0.001, alpha=1.0, sign_decay=0.99, beta=0.9):
    return apply_add_sign_golden(SEED_VAR, SEED_M, lr, alpha, sign_decay, beta, grad)


@pytest.mark.parametrize("case", ["grad float16", "grad int32", "lr float16 tensor",
                                  "sign_decay float16 with a number beta",
                                  "sign_decay float16 with a float32 beta"])
def test_apply_add_sign_implicit_conversion(case):
    """Hand-derived from the rules: the lower dtype converts to the group's highest; a
    number converts to its group's tensor dtype; lr is a group of its own. lr = 0.1 makes
    each conversion move var or m by far more than the tolerance."""
    h = np.float16
    kw = dict(lr=0.1)
    if case == "grad float16":
        kw["grad"] = Tensor(SEED_GRAD.astype(h))          # converted to float32
        want = _seed_golden(grad=SEED_GRAD.astype(h).astype(F32), lr=0.1)
    elif case == "grad int32":
        kw["grad"] = Tensor(np.array([[1, -2], [0, 3]], np.int32))
        want = _seed_golden(grad=np.array([[1, -2], [0, 3]], F32), lr=0.1)
    elif case == "lr float16 tensor":
        kw["lr"] = Tensor(0.1, mstype.float16)             # its own group: stays float16
        want = _seed_golden(lr=float(h(0.1)))
    elif case == "sign_decay float16 with a number beta":
        kw["sign_decay"] = Tensor(0.99, mstype.float16)    # beta converts to float16
        want = _seed_golden(sign_decay=float(h(0.99)), beta=float(h(0.9)), lr=0.1)
    else:
        kw.update(sign_decay=Tensor(0.99, mstype.float16), beta=Tensor(0.9, mstype.float32))
        want = _seed_golden(sign_decay=float(h(0.99)), beta=float(F32(0.9)), lr=0.1)
    var, m, _ = add_sign(SEED_VAR, SEED_M, **kw)
    assert var.dtype is mstype.float32
    np.testing.assert_allclose(var.asnumpy(), want[0], rtol=1e-6)
    np.testing.assert_allclose(m.asnumpy(), want[1], rtol=1e-6)
    base = _seed_golden(lr=0.1)               # the case is one the conversion changes
    assert not (np.allclose(want[0], base[0], rtol=1e-5, atol=0)
                and np.allclose(want[1], base[1], rtol=1e-5, atol=0))


def test_apply_add_sign_updates_a_tensor_var_in_place():
    """MindSpore 2.10 (measured) accepts a Tensor as var and updates it in place."""
    var = Tensor(SEED_VAR)
    add_sign(var, SEED_M)
    np.testing.assert_allclose(var.asnumpy(), _seed_golden()[0], rtol=1e-6)


def _h(a):
    return Tensor(a.astype(np.float16))


APPLY_ADD_SIGN_ERRORS = {   # case: (keyword arguments of add_sign, exception, words)
    "var float16, grad float32": (dict(var=Parameter(_h(SEED_VAR)), m=Parameter(_h(SEED_M))),
                                  RuntimeError, "conversion of Parameter"),
    "grad float64": (dict(grad=Tensor(SEED_GRAD.astype(np.float64))), RuntimeError, "'var'"),
    "m float16": (dict(m=Parameter(_h(SEED_M))), RuntimeError, "'m'"),
    "all float64": (dict(var=Parameter(Tensor(SEED_VAR.astype(np.float64))),
                         m=Parameter(Tensor(SEED_M.astype(np.float64))),
                         grad=Tensor(SEED_GRAD.astype(np.float64))), TypeError, "'var'"),
    "lr int": (dict(lr=1), TypeError, "'lr'"),
    "lr bool": (dict(lr=True), TypeError, "'lr'"),
    "lr int32 tensor": (dict(lr=Tensor(1, mstype.int32)), TypeError, "'lr'"),
    "alpha str": (dict(alpha="1.0"), TypeError, "'alpha'"),
    "sign_decay None": (dict(sign_decay=None), TypeError, "'sign_decay'"),
    "beta a list": (dict(beta=[0.9]), TypeError, "'beta'"),
    "grad numpy": (dict(grad=SEED_GRAD), TypeError, "'grad'"),
    "grad a list": (dict(grad=SEED_GRAD.tolist()), TypeError, "'grad'"),
    "var numpy": (dict(var=SEED_VAR), TypeError, "'var'"),
    "grad shape": (dict(grad=Tensor(np.ones((3, 2), F32))), ValueError, "'grad'"),
    "m shape": (dict(m=Parameter(Tensor(np.ones((2, 3), F32)))), ValueError, "'m'"),
    "lr of 2 elements": (dict(lr=Tensor([0.001, 0.002], mstype.float32)), ValueError, "'lr'"),
    "alpha of shape [1, 1]": (dict(alpha=Tensor([[1.0]], mstype.float32)), ValueError, "'alpha'"),
}


@pytest.mark.parametrize("case", list(APPLY_ADD_SIGN_ERRORS))
def test_apply_add_sign_errors_change_nothing(case):
    kw, exc, words = APPLY_ADD_SIGN_ERRORS[case]
    var = kw.pop("var", Parameter(Tensor(SEED_VAR), name="var"))
    m = kw.pop("m", Parameter(Tensor(SEED_M), name="m"))
    before = [t.asnumpy() if isinstance(t, Tensor) else t.copy() for t in (var, m)]
    args = dict(lr=0.001, alpha=1.0, sign_decay=0.99, beta=0.9, grad=Tensor(SEED_GRAD))
    args.update(kw)
    with pytest.raises(exc, match=re.escape(words)):
        ops.ApplyAddSign()(var, m, *args.values())
    for t, b in zip((var, m), before):
        np.testing.assert_array_equal(t.asnumpy() if isinstance(t, Tensor) else t, b)


def test_apply_add_sign_nine_dims_is_a_value_error():
    var = Parameter(Tensor(np.ones((1,) * 9, F32)), name="var")
    m = Parameter(Tensor(np.ones((1,) * 9, F32)), name="m")
    with pytest.raises(ValueError, match="at most 8"):
        ops.ApplyAddSign()(var, m, 0.1, 1.0, 0.5, 0.9, Tensor(np.ones((1,) * 9, F32)))


def test_front_end_runs_on_the_device_the_program_set(tmp_path):
    """A program that set a device first gets that device: ApplyAddSign is built for Atlas
    A2/A3, so on an Ascend910A the aclnn operator refuses it (RuntimeError with its text)."""
    init_runtime(tmp_path, "Ascend910A")
    assert acl.rt.set_device(0) == 0
    with pytest.raises(RuntimeError, match="161002.*Ascend910A"):
        add_sign(SEED_VAR, SEED_M)
    assert runtime.current_device().soc.soc_version == "Ascend910A"


# -- FusedSparseAdam ----------------------------------------------------------------------------
SCALARS = (0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999, 1e-8)


def fsa_state(shape=(12, 3), n=9, seed=0):
    rng = np.random.default_rng(seed)
    var, m = (rng.standard_normal(shape).astype(F32) for _ in range(2))
    v = np.abs(rng.standard_normal(shape)).astype(F32)
    grad = rng.standard_normal((n,) + shape[1:]).astype(F32)
    idx = rng.integers(-2, shape[0] + 2, n).astype(np.int32)      # duplicates, out of range
    return var, m, v, grad, idx


def run_fsa(var, m, v, grad, idx, scalars=SCALARS, as_tensors=True, nesterov=False):
    p = [Parameter(Tensor(a), name=n) for a, n in zip((var, m, v), ("var", "m", "v"))]
    s = [Tensor(x, mstype.float32) for x in scalars] if as_tensors else list(scalars)
    out = ops.FusedSparseAdam(use_nesterov=nesterov)(*p, *s, Tensor(grad), Tensor(idx))
    return [x.asnumpy() for x in p], out


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("as_tensors", [True, False])
def test_fused_sparse_adam_matches_the_golden(nesterov, as_tensors):
    """Scalars as float32 Tensors or as Python numbers (converted to float32 by the rules)."""
    var, m, v, grad, idx = fsa_state()
    got, out = run_fsa(var, m, v, grad, idx, as_tensors=as_tensors, nesterov=nesterov)
    want = fused_sparse_adam_golden(var, m, v, *map(F32, SCALARS), grad, idx,
                                    use_nesterov=nesterov)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
    if nesterov:                              # rows no index names keep var (measured)
        hit = np.zeros(12, bool)
        hit[idx[(idx >= 0) & (idx < 12)]] = True
        np.testing.assert_array_equal(got[0][~hit], var[~hit])
        np.testing.assert_array_equal(got[1][~hit], m[~hit] * F32(0.9))
    assert [o.shape for o in out] == [(1,)] * 3
    assert runtime.current_device().profiles[-1].op_name == "FusedSparseAdam"


def test_fused_sparse_adam_implicit_conversion():
    """float16 gradient and an int32 lr Tensor convert to float32 (group T's highest)."""
    var, m, v, grad, idx = fsa_state(seed=1)
    p = [Parameter(Tensor(a)) for a in (var, m, v)]
    s = [Tensor(x, mstype.float32) for x in SCALARS]
    s[2] = Tensor(1, mstype.int32)
    ops.FusedSparseAdam()(*p, *s, Tensor(grad.astype(np.float16)), Tensor(idx))
    want = fused_sparse_adam_golden(var, m, v, *map(F32, SCALARS[:2]), 1.0, *map(F32, SCALARS[3:]),
                                    grad.astype(np.float16).astype(F32), idx)
    for q, w in zip(p, want):
        np.testing.assert_allclose(q.asnumpy(), w, rtol=2e-6, atol=2e-6)


def _fsa_call(**over):
    var, m, v, grad, idx = fsa_state(seed=2)
    args = dict(var=Parameter(Tensor(var)), m=Parameter(Tensor(m)), v=Parameter(Tensor(v)),
                beta1_power=Tensor(0.9, mstype.float32), beta2_power=0.999, lr=0.001,
                beta1=0.9, beta2=0.999, epsilon=1e-8, gradient=Tensor(grad), indices=Tensor(idx))
    args.update(over)
    return args


FSA_ERRORS = {   # case: (overrides, exception, words)
    "gradient float64": (dict(gradient=Tensor(np.ones((9, 3)))), RuntimeError,
                         "conversion of Parameter"),
    "v float16": (dict(v=Parameter(Tensor(np.ones((12, 3), np.float16)))), RuntimeError, "'v'"),
    "beta1_power 1": (dict(beta1_power=1.0), RuntimeError, "'beta1_power' can not be 1"),
    "all float16": (dict(var=Parameter(Tensor(np.ones((12, 3), np.float16))),
                         m=Parameter(Tensor(np.ones((12, 3), np.float16))),
                         v=Parameter(Tensor(np.ones((12, 3), np.float16))),
                         beta1_power=Tensor(0.9, mstype.float16),
                         gradient=Tensor(np.ones((9, 3), np.float16))), TypeError, "float32"),
    "indices int64": (dict(indices=Tensor(np.zeros(9, np.int64))), TypeError, "int32"),
    "indices float": (dict(indices=Tensor(np.zeros(9, F32))), TypeError, "int32"),
    "indices a list": (dict(indices=[0] * 9), TypeError, "'indices'"),
    "gradient numpy": (dict(gradient=np.ones((9, 3), F32)), TypeError, "'gradient'"),
    "lr str": (dict(lr="0.001"), TypeError, "'lr'"),
    "var numpy": (dict(var=np.ones((12, 3), F32)), TypeError, "'var'"),
    "indices 2-D": (dict(indices=Tensor(np.zeros((9, 1), np.int32))), ValueError, "rank"),
    "gradient rows": (dict(gradient=Tensor(np.ones((8, 3), F32))), ValueError, "'gradient'"),
    "gradient columns": (dict(gradient=Tensor(np.ones((9, 4), F32))), ValueError, "'gradient'"),
    "m shape": (dict(m=Parameter(Tensor(np.ones((3, 12), F32)))), ValueError, "'m'"),
    "lr of 2 elements": (dict(lr=Tensor([0.1, 0.2], mstype.float32)), ValueError, "'lr'"),
}


@pytest.mark.parametrize("case", list(FSA_ERRORS))
def test_fused_sparse_adam_errors_change_nothing(case):
    over, exc, words = FSA_ERRORS[case]
    args = _fsa_call(**over)
    state = [args[k] for k in ("var", "m", "v")]
    before = [np.array(s.asnumpy() if isinstance(s, Tensor) else s) for s in state]
    with pytest.raises(exc, match=re.escape(words)):
        ops.FusedSparseAdam()(*args.values())
    for s, b in zip(state, before):
        np.testing.assert_array_equal(s.asnumpy() if isinstance(s, Tensor) else s, b)


def test_fused_sparse_adam_zero_dim_var_is_a_value_error():
    p = [Parameter(Tensor(F32(1))) for _ in range(3)]
    with pytest.raises(ValueError, match="at least 1 dimension"):
        ops.FusedSparseAdam()(*p, *SCALARS, Tensor(np.ones(1, F32)), Tensor([0], mstype.int32))


@pytest.mark.parametrize("kw", [dict(use_locking=1), dict(use_nesterov="yes"),
                                dict(use_nesterov=None)])
def test_fused_sparse_adam_attributes_must_be_bool(kw):
    with pytest.raises(TypeError, match="should be 'bool'"):
        ops.FusedSparseAdam(**kw)


# -- AdamOffload --------------------------------------------------------------------------------
def params(seed=0):
    rng = np.random.default_rng(seed)
    return [Parameter(Tensor(rng.standard_normal(s).astype(F32)), name=n)
            for n, s in (("w", (4, 5)), ("beta_b", (5,)))]


@pytest.mark.parametrize("nesterov", [False, True])
def test_adam_offload_matches_the_seed_formula_over_steps(nesterov):
    ps = params()
    w0 = [p.asnumpy() for p in ps]
    optim = nn.AdamOffload(ps, learning_rate=0.01, weight_decay=0.1, loss_scale=4.0,
                           use_nesterov=nesterov)
    rng = np.random.default_rng(3)
    grads = [[rng.standard_normal(p.shape).astype(F32) for p in ps] for _ in range(3)]
    for step in grads:
        out = optim(tuple(Tensor(g) for g in step))
        assert out.dtype is mstype.bool_ and bool(out.asnumpy()) is True
    for i, p in enumerate(ps):
        wd = 0.0 if "beta" in p.name else 0.1        # the seed: no decay for names with "beta"
        want = adam_golden(w0[i], [s[i] for s in grads], 0.01, 0.9, 0.999, 1e-8, wd=wd,
                           loss_scale=4.0, nesterov=nesterov)
        np.testing.assert_allclose(p.asnumpy(), want, rtol=1e-5, atol=1e-6, err_msg=p.name)


def test_adam_offload_tensor_learning_rate_is_one_value_per_step():
    ps = params(1)[:1]
    w0 = ps[0].asnumpy()
    optim = nn.AdamOffload(ps, learning_rate=Tensor(np.array([0.1, 0.001], F32)))
    g = np.ones((4, 5), F32)
    optim((Tensor(g),))
    after_one = ps[0].asnumpy()
    np.testing.assert_allclose(after_one, adam_golden(w0, [g], 0.1, 0.9, 0.999, 1e-8), rtol=1e-5)
    optim((Tensor(g),))
    w1 = np.asarray(after_one, np.float64)
    # second step: lr 0.001, with the moments of the first
    m, v = 0.19 * g, (0.001 + 0.999 * 0.001) * g * g
    want = w1 - 0.001 * np.sqrt(1 - 0.999 ** 2) / (1 - 0.9 ** 2) * m / (np.sqrt(v) + 1e-8)
    np.testing.assert_allclose(ps[0].asnumpy(), want, rtol=1e-5)


ADAM_OFFLOAD_ERRORS = {   # case: (keyword arguments, exception, words) -- the seed's list
    "learning_rate str": (dict(learning_rate="0.1"), TypeError, "learning_rate"),
    "element not Parameter": (dict(params=[1, 2]), TypeError, "Parameter"),
    "beta1 int": (dict(beta1=1), TypeError, "beta1"),
    "eps str": (dict(eps="1e-8"), TypeError, "eps"),
    "weight_decay str": (dict(weight_decay="0"), TypeError, "weight_decay"),
    "use_nesterov int": (dict(use_nesterov=1), TypeError, "use_nesterov"),
    "use_locking None": (dict(use_locking=None), TypeError, "use_locking"),
    "loss_scale 0": (dict(loss_scale=0.0), ValueError, "loss_scale"),
    "eps 0": (dict(eps=0.0), ValueError, "eps"),
    "beta2 1.0": (dict(beta2=1.0), ValueError, "beta2"),
    "weight_decay < 0": (dict(weight_decay=-0.1), ValueError, "weight_decay"),
    "float16 parameter": (dict(params=[Parameter(Tensor(np.ones(3, np.float16)), name="h")]),
                          TypeError, "float32"),
}


@pytest.mark.parametrize("case", list(ADAM_OFFLOAD_ERRORS))
def test_adam_offload_argument_errors(case):
    kw, exc, words = ADAM_OFFLOAD_ERRORS[case]
    kw = dict(kw)
    with pytest.raises(exc, match=words):
        nn.AdamOffload(kw.pop("params", params()), **kw)


@pytest.mark.parametrize("grads,exc", [
    (lambda ps: [Tensor(np.ones(p.shape, F32)) for p in ps][0], TypeError),     # not a tuple
    (lambda ps: (np.ones((4, 5), F32), Tensor(np.ones(5, F32))), TypeError),     # numpy
    (lambda ps: (Tensor(np.ones((5, 4), F32)), Tensor(np.ones(5, F32))), ValueError),
    (lambda ps: (Tensor(np.ones((4, 5), F32)),), ValueError),                    # one missing
])
def test_adam_offload_bad_gradients_change_nothing(grads, exc):
    ps = params()
    before = [p.asnumpy() for p in ps]
    optim = nn.AdamOffload(ps)
    with pytest.raises(exc):
        optim(grads(ps))
    for p, b in zip(ps, before):
        np.testing.assert_array_equal(p.asnumpy(), b)
