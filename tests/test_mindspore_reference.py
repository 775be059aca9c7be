"""The front end against MindSpore itself, where ``mindspore`` is importable (``pip install
mindspore``, 2.10 measured; CPU, its own kernels): FusedSparseAdam (sparse_apply_adam CPU
kernel, with and without Nesterov), AdamOffload (graph mode, the AdamNoUpdateParam CPU
kernel), ApplyAddSign with its implicit type conversions, and MindSpore's own Tensor and
Parameter passed to this front end.

MindSpore runs in a subprocess (this file run as a script): its import and context stay out
of the test process, and each Nesterov case is the first launch of a fresh process, where
the CPU kernel's Nesterov workspace is still zero (aclnn/ops/fused_sparse_adam.py: a later
launch in the same process reuses it with stale values, which follow no formula)."""
import importlib.util
import pickle
import subprocess
import sys

import numpy as np
import pytest

F32 = np.float32
HAVE_MINDSPORE = importlib.util.find_spec("mindspore") is not None
pytestmark = pytest.mark.skipif(
    not HAVE_MINDSPORE, reason="mindspore is not installed; these tests compare with its CPU "
    "kernels (pip install mindspore: an ~800 MB wheel, not in the test extra)")


def oracle(tmp_path, task: str, cases: list) -> list:
    """Run ``task`` over ``cases`` in a fresh Python with MindSpore; return its results."""
    src, dst = tmp_path / "in.pkl", tmp_path / "out.pkl"
    src.write_bytes(pickle.dumps(cases))
    proc = subprocess.run([sys.executable, __file__, task, str(src), str(dst)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pickle.loads(dst.read_bytes())


def fsa_case(shape, n, seed, nesterov):
    rng = np.random.default_rng(seed)
    var, m = (rng.standard_normal(shape).astype(F32) for _ in range(2))
    v = np.abs(rng.standard_normal(shape)).astype(F32)
    return dict(var=var, m=m, v=v, scalars=(0.9 ** 5, 0.999 ** 5, 0.01, 0.9, 0.999, 1e-8),
                grad=rng.standard_normal((n,) + shape[1:]).astype(F32),
                indices=rng.integers(-3, shape[0] + 3, n).astype(np.int32), nesterov=nesterov)


def run_front_end_fsa(c):
    from aclnn.mindspore import Parameter, Tensor, ops
    p = [Parameter(Tensor(c[k])) for k in ("var", "m", "v")]
    ops.FusedSparseAdam(use_nesterov=c["nesterov"])(*p, *c["scalars"], Tensor(c["grad"]),
                                                     Tensor(c["indices"]))
    return [x.asnumpy() for x in p]


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("shape,n", [((40, 3, 4), 60), ((300, 16), 450)])
def test_fused_sparse_adam_equals_mindspore(tmp_path, nesterov, shape, n):
    c = fsa_case(shape, n, seed=n, nesterov=nesterov)
    (want,) = oracle(tmp_path, "fsa", [c])
    got = run_front_end_fsa(c)
    for name, g, w in zip(("var", "m", "v"), got, want):    # bit for bit: the kernel keeps
        np.testing.assert_array_equal(g, w, err_msg=name)   # the CPU kernel's fp32 order
    hit = np.zeros(shape[0], bool)
    hit[c["indices"][(c["indices"] >= 0) & (c["indices"] < shape[0])]] = True
    assert not hit.all()                      # some rows are named by no index
    if nesterov:                              # the measured rule: their var stays
        np.testing.assert_array_equal(want[0][~hit], c["var"][~hit])


@pytest.mark.parametrize("opts", [dict(), dict(use_nesterov=True, weight_decay=0.1,
                                                loss_scale=8.0, learning_rate=0.05)])
def test_adam_offload_equals_mindspore(tmp_path, opts):
    from aclnn.mindspore import Parameter, Tensor, nn
    rng = np.random.default_rng(4)
    init = {"w": rng.standard_normal((6, 5)).astype(F32),
            "beta_b": rng.standard_normal(5).astype(F32)}
    grads = [[rng.standard_normal(a.shape).astype(F32) for a in init.values()]
             for _ in range(3)]
    (want,) = oracle(tmp_path, "adam_offload", [dict(init=init, grads=grads, opts=opts)])
    ps = [Parameter(Tensor(a), name=k) for k, a in init.items()]
    optim = nn.AdamOffload(ps, **opts)
    for step in grads:
        optim(tuple(Tensor(g) for g in step))
    for p, w in zip(ps, want):          # equal but for a last-bit difference or two
        np.testing.assert_allclose(p.asnumpy(), w, rtol=1e-6, atol=1e-7, err_msg=p.name)
        assert not np.allclose(w, init[p.name])


SEED = dict(var=np.array([[0.6, 0.4], [0.1, 0.5]], F32), m=np.array([[0.6, 0.5], [0.2, 0.6]], F32),
            grad=np.array([[0.3, 0.7], [0.1, 0.8]], F32))
#: ApplyAddSign cases: (name, var/m dtype, grad, lr, alpha, sign_decay, beta); a scalar
#: given as ("T", value, dtype) is a Tensor of that dtype, else a Python number.
ADD_SIGN_CASES = [
    ("seed", "float32", ("float32",), 0.001, 1.0, 0.99, 0.9),
    ("float16", "float16", ("float16",), 0.1, 1.0, 0.99, 0.9),
    ("grad float16", "float32", ("float16",), 0.1, 1.0, 0.99, 0.9),
    ("grad int32", "float32", ("int32",), 0.1, 1.0, 0.99, 0.9),
    ("lr float16 tensor", "float32", ("float32",), ("T", 0.1, "float16"), 1.0, 0.99, 0.9),
    ("sign_decay float16, beta number", "float32", ("float32",), 0.1, 1.0,
     ("T", 0.99, "float16"), 0.9),
    ("sign_decay float16, beta float32", "float32", ("float32",), 0.1, 1.0,
     ("T", 0.99, "float16"), ("T", 0.9, "float32")),
]


def add_sign_inputs(case, tensor, parameter, dtypes):
    name, vdt, (gdt,), *scalars = case
    var = parameter(tensor(SEED["var"].astype(vdt)), "var")
    m = parameter(tensor(SEED["m"].astype(vdt)), "m")
    grad = tensor((SEED["grad"] * (10 if gdt == "int32" else 1)).astype(gdt))
    s = [tensor(np.array(x[1], x[2])) if isinstance(x, tuple) else x for x in scalars]
    return var, m, s, grad


def test_apply_add_sign_and_its_conversions_equal_mindspore(tmp_path):
    from aclnn.mindspore import Parameter, Tensor, ops
    want = oracle(tmp_path, "apply_add_sign", ADD_SIGN_CASES)
    for case, (w_var, w_m) in zip(ADD_SIGN_CASES, want):
        var, m, s, grad = add_sign_inputs(case, Tensor, lambda t, n: Parameter(t, name=n), None)
        ops.ApplyAddSign()(var, m, *s, grad)
        tol = 2e-3 if case[1] == "float16" else 1e-6
        np.testing.assert_allclose(var.asnumpy(), w_var, rtol=tol, atol=tol, err_msg=case[0])
        np.testing.assert_allclose(m.asnumpy(), w_m, rtol=tol, atol=tol, err_msg=case[0])


def test_mindspore_tensors_and_parameters_are_accepted(tmp_path):
    """In a process with MindSpore: the front end takes ms.Parameter / ms.Tensor inputs and
    updates the ms.Parameters in place, to MindSpore's own results."""
    (res,) = oracle(tmp_path, "mindspore_objects", [fsa_case((20, 4), 12, 1, False)])
    for name in ("var", "m", "v", "add_sign_var", "add_sign_m"):
        np.testing.assert_allclose(res["ours"][name], res["mindspore"][name], rtol=1e-6,
                                   atol=1e-7, err_msg=name)
    assert res["returned_type"] == "Tensor"


# -- the MindSpore side (run as a script) -------------------------------------------------------
def _ms_fsa(ms, P, c):
    var, m, v = (ms.Parameter(ms.Tensor(c[k].copy()), name=k) for k in ("var", "m", "v"))
    s = [ms.Tensor(x, ms.float32) for x in c["scalars"]]
    P.FusedSparseAdam(use_nesterov=c["nesterov"])(var, m, v, *s, ms.Tensor(c["grad"]),
                                                  ms.Tensor(c["indices"]))
    return [x.asnumpy() for x in (var, m, v)]


def _ms_adam_offload(ms, c):
    ms.set_context(mode=ms.GRAPH_MODE)
    ps = [ms.Parameter(ms.Tensor(a.copy()), name=k) for k, a in c["init"].items()]
    optim = ms.nn.AdamOffload(ps, **c["opts"])
    for step in c["grads"]:
        optim(tuple(ms.Tensor(g) for g in step))
    ms.set_context(mode=ms.PYNATIVE_MODE)
    return [p.asnumpy() for p in ps]


def _ms_add_sign(ms, case):
    var, m, s, grad = add_sign_inputs(case, ms.Tensor, lambda t, n: ms.Parameter(t, name=n),
                                      None)
    ms.ops.ApplyAddSign()(var, m, *s, grad)
    return var.asnumpy(), m.asnumpy()


def _mindspore_objects(ms, P, c):
    """The front end on MindSpore's objects, beside MindSpore on copies of them."""
    from aclnn.mindspore import ops as fe_ops
    mine = {k: ms.Parameter(ms.Tensor(c[k].copy()), name=k) for k in ("var", "m", "v")}
    s = [ms.Tensor(x, ms.float32) for x in c["scalars"]]
    fe_ops.FusedSparseAdam()(mine["var"], mine["m"], mine["v"], *s, ms.Tensor(c["grad"]),
                             ms.Tensor(c["indices"]))
    theirs = dict(zip(("var", "m", "v"), _ms_fsa(ms, P, dict(c, nesterov=False))))
    ours = {k: p.asnumpy() for k, p in mine.items()}
    var, m, s, grad = add_sign_inputs(ADD_SIGN_CASES[0], ms.Tensor,
                                      lambda t, n: ms.Parameter(t, name=n), None)
    out = fe_ops.ApplyAddSign()(var, m, *s, grad)
    ours.update(add_sign_var=var.asnumpy(), add_sign_m=m.asnumpy())
    w_var, w_m = _ms_add_sign(ms, ADD_SIGN_CASES[0])
    theirs.update(add_sign_var=w_var, add_sign_m=w_m)
    return dict(ours=ours, mindspore=theirs, returned_type=type(out[0]).__name__)


def _main(task, src, dst):
    import mindspore as ms
    from mindspore.ops import operations as P
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    cases = pickle.loads(open(src, "rb").read())
    run = {"fsa": lambda c: _ms_fsa(ms, P, c), "adam_offload": lambda c: _ms_adam_offload(ms, c),
           "apply_add_sign": lambda c: _ms_add_sign(ms, c),
           "mindspore_objects": lambda c: _mindspore_objects(ms, P, c)}[task]
    with open(dst, "wb") as f:
        pickle.dump([run(c) for c in cases], f)


if __name__ == "__main__":
    _main(*sys.argv[1:4])
