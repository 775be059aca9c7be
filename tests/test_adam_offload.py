"""AdamOffload (MindSpore nn.AdamOffload on the pyACL runtime; the device update is
aclnnInplaceAdd of aclnn/ops/add.py): the host AdamNoUpdateParam against a float64 golden and against
the CPU kernel's float32 order; weight decay with its name filter, loss scale, groups,
order_params and dynamic learning rates; the seed's TypeError/ValueError cases; gradients
refused with nothing changed; device memory (m and v stay on the host) and the step's
timeline (copies of one parameter overlap the host work of the next).
Sources: the MindSpore API document mindspore.nn.AdamOffload (mindspore.cn), docs/reference/operators.md §5."""
import math

import numpy as np
import pytest

import aclnn
from aclnn import acl, runtime
from aclnn.optim import AdamOffload, Parameter, adam_no_update_param
from npusim import get_soc
from npusim.gm import malloc_size

from aclnn_helpers import from_device, init_runtime, run_example, to_device


@pytest.fixture
def device(tmp_path):
    init_runtime(tmp_path)
    assert acl.rt.set_device(0) == 0
    yield runtime.current_device()
    runtime.reset()


SHAPES = {"dense.weight": (48, 40), "dense.bias": (40,), "norm.gamma": (40,),
          "norm.beta": (40,), "head.weight": (40, 7)}


def make_params(seed=0, shapes=SHAPES):
    rng = np.random.default_rng(seed)
    hosts = {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}
    return hosts, [Parameter(to_device(v), k) for k, v in hosts.items()]


def make_grads(seed, shapes=SHAPES):
    rng = np.random.default_rng(1000 + seed)
    hosts = [rng.standard_normal(s).astype(np.float32) for s in shapes.values()]
    return hosts, [to_device(h) for h in hosts]


# -- references ----------------------------------------------------------------------------
class Golden:
    """Float64 Adam-offload from the seed's formula and operators.md §5:
    g = (grad + wd*loss_scale*w)/loss_scale where decayed; m, v moments; beta^t by pow;
    w -= lr*sqrt(1-beta2^t)/(1-beta1^t) * m/(sqrt(v)+eps) (eps added to sqrt(v))."""

    def __init__(self, weights, beta1=0.9, beta2=0.999, eps=1e-8, nesterov=False):
        self.w = [np.asarray(w, np.float64) for w in weights]
        self.m = [np.zeros_like(w) for w in self.w]
        self.v = [np.zeros_like(w) for w in self.w]
        self.b1, self.b2, self.eps, self.nesterov, self.t = beta1, beta2, eps, nesterov, 0

    def step(self, grads, lrs, wds, loss_scale=1.0):
        self.t += 1
        for i, g in enumerate(grads):
            g = np.asarray(g, np.float64)
            if wds[i]:
                g = g + wds[i] * loss_scale * self.w[i]
            g = g / loss_scale
            self.m[i] = self.b1 * self.m[i] + (1 - self.b1) * g
            self.v[i] = self.b2 * self.v[i] + (1 - self.b2) * g * g
            num = self.b1 * self.m[i] + (1 - self.b1) * g if self.nesterov else self.m[i]
            lr_t = lrs[i] * math.sqrt(1 - self.b2 ** self.t) / (1 - self.b1 ** self.t)
            self.w[i] = self.w[i] - lr_t * num / (np.sqrt(self.v[i]) + self.eps)


def assert_close(got, want, rtol=2e-5, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


# -- the host kernel -----------------------------------------------------------------------
def test_adam_no_update_param_first_step_hand_computed():
    # step 1: m = 0.1 g, v = 0.001 g^2, lr_t = lr*sqrt(0.001)/0.1, delta = -lr_t*m/(sqrt(v)+eps)
    g = np.array([2.0, -0.5, 0.0], np.float32)
    m, v = np.zeros(3, np.float32), np.zeros(3, np.float32)
    delta = adam_no_update_param(m, v, 0.9, 0.999, 0.01, 0.9, 0.999, 1e-8, g)
    np.testing.assert_allclose(m, 0.1 * g, rtol=1e-6)
    # 1 - float32(0.999) = 0.00099998713: 1.3e-5 below 0.001
    np.testing.assert_allclose(v, 0.001 * g * g, rtol=2e-5)
    # m/sqrt(v) = 0.1 g/(sqrt(0.001)|g|): delta = -lr*sign(g) up to eps
    np.testing.assert_allclose(delta, [-0.01, 0.01, 0.0], rtol=1e-5, atol=1e-12)
    # Nesterov: numerator beta1*m + (1-beta1)*g = 0.19 g
    m, v = np.zeros(3, np.float32), np.zeros(3, np.float32)
    d = adam_no_update_param(m, v, 0.9, 0.999, 0.01, 0.9, 0.999, 1e-8, g, use_nesterov=True)
    np.testing.assert_allclose(d, [-0.019, 0.019, 0.0], rtol=1e-5, atol=1e-12)


def test_adam_no_update_param_float32_order_of_the_cpu_kernel():
    rng = np.random.default_rng(3)
    g, m0, v0 = (rng.standard_normal(1000).astype(np.float32) for _ in range(3))
    v0 = np.abs(v0)
    f = np.float32
    b1p, b2p, lr, b1, b2, eps = f(0.9 ** 3), f(0.999 ** 3), f(0.003), f(0.9), f(0.999), f(1e-8)
    # AdamDeltaCpuKernelMod::Launch + nnacl AdamDeltaFp32, written out here
    lr_t = (lr * np.sqrt(f(1) - b2p)) / (f(1) - b1p)
    m_exp = m0 * b1 + (f(1) - b1) * g
    v_exp = v0 * b2 + ((f(1) - b2) * g) * g
    d_exp = (-lr_t * m_exp) / (np.sqrt(v_exp) + eps)
    m, v = m0.copy(), v0.copy()
    d = adam_no_update_param(m, v, b1p, b2p, lr, b1, b2, eps, g)
    np.testing.assert_array_equal(m, m_exp)
    np.testing.assert_array_equal(v, v_exp)
    np.testing.assert_array_equal(d, d_exp)
    with pytest.raises(RuntimeError, match="beta1_power"):
        adam_no_update_param(m, v, 1.0, b2p, lr, b1, b2, eps, g)


# -- steps against the golden --------------------------------------------------------------
def test_three_steps_decay_filter_and_loss_scale(device):
    hosts, params = make_params()
    opt = AdamOffload(params, learning_rate=0.01, weight_decay=0.05, loss_scale=8.0)
    # no groups: decay skips names with "beta" or "gamma"
    assert opt.decay_flags == (True, True, False, False, True)
    gold = Golden(hosts.values())
    wds = [0.05 * f for f in opt.decay_flags]
    for k in range(3):
        gh, gd = make_grads(k)
        scaled = [8.0 * g for g in gh]                       # gradients of the scaled loss
        for t, g in zip(gd, scaled):
            assert acl.rt.memcpy(t.tensor_data, g.nbytes, acl.util.numpy_to_ptr(g.astype(np.float32)),
                                 g.nbytes, aclnn.ACL_MEMCPY_HOST_TO_DEVICE) == 0
        assert opt.step(gd) is True
        gold.step(scaled, [0.01] * 5, wds, loss_scale=8.0)
    for p, w in zip(params, gold.w):
        assert_close(from_device(p.tensor), w)
    for m, v, gm, gv in zip(opt.moment1, opt.moment2, gold.m, gold.v):
        assert_close(m, gm)
        assert_close(v, gv, atol=1e-9)
    assert opt.global_step == 3 and opt.beta1_power == np.float32(np.float32(0.9) ** 3)
    # the filter matters: "norm.gamma" without decay differs from a decayed golden
    decayed = Golden([hosts["norm.gamma"]])
    for k in range(3):
        decayed.step([8.0 * make_grads(k)[0][2]], [0.01], [0.05], loss_scale=8.0)
    assert np.abs(from_device(params[2].tensor) - decayed.w[0]).max() > 1e-4


def test_step_is_bit_exact_with_the_cpu_kernel_order_without_decay(device):
    hosts, params = make_params(1)
    opt = AdamOffload(params, learning_rate=0.02, loss_scale=2.0, use_nesterov=True)
    f = np.float32
    w = [h.copy() for h in hosts.values()]
    m = [np.zeros_like(x) for x in w]
    v = [np.zeros_like(x) for x in w]
    b1p = b2p = f(1)
    for k in range(2):
        gh, gd = make_grads(k)
        opt.step(gd)
        b1p, b2p = f(b1p * f(0.9)), f(b2p * f(0.999))
        lr_t = (f(0.02) * np.sqrt(f(1) - b2p)) / (f(1) - b1p)
        for i, g in enumerate(gh):
            g = g * f(1 / 2.0)                                  # scale_grad: g * (1/loss_scale)
            m[i] = m[i] * f(0.9) + (f(1) - f(0.9)) * g
            v[i] = v[i] * f(0.999) + ((f(1) - f(0.999)) * g) * g
            num = m[i] * f(0.9) + (f(1) - f(0.9)) * g           # Nesterov
            w[i] = w[i] + (-lr_t * num) / (np.sqrt(v[i]) + f(1e-8))   # param += delta (fp32)
    for p, x in zip(params, w):
        np.testing.assert_array_equal(from_device(p.tensor), x)


def test_groups_lr_weight_decay_and_order_params(device):
    hosts, params = make_params(2)
    by = {p.name: p for p in params}
    dense = [by["dense.weight"], by["dense.bias"], by["norm.gamma"]]
    rest = [by["norm.beta"], by["head.weight"]]
    order = [by[n] for n in ("head.weight", "norm.gamma", "dense.bias", "norm.beta", "dense.weight")]
    opt = AdamOffload([{"params": dense, "weight_decay": 0.1},
                       {"params": rest, "lr": 0.05},
                       {"order_params": order}], learning_rate=0.01, weight_decay=0.0)
    assert [p.name for p in opt.parameters] == [p.name for p in order]
    # groups: decay wherever the group's weight decay is positive, whatever the name
    flags = dict(zip((p.name for p in opt.parameters), opt.decay_flags))
    assert flags == {"head.weight": False, "norm.gamma": True, "dense.bias": True,
                     "norm.beta": False, "dense.weight": True}
    lrs = {p.name: float(lr) for p, lr in zip(opt.parameters, opt.get_lr())}
    assert lrs == pytest.approx({"head.weight": 0.05, "norm.gamma": 0.01, "dense.bias": 0.01,
                                 "norm.beta": 0.05, "dense.weight": 0.01})
    names = [p.name for p in opt.parameters]
    gold = Golden([hosts[n] for n in names])
    for k in range(2):
        gh, gd = make_grads(k)
        g_by = dict(zip(SHAPES, zip(gh, gd)))
        opt.step([g_by[n][1] for n in names])                  # gradients in update order
        gold.step([g_by[n][0] for n in names], [lrs[n] for n in names],
                  [0.1 if flags[n] else 0.0 for n in names])
    for n, w in zip(names, gold.w):
        assert_close(from_device(by[n].tensor), w)


@pytest.mark.parametrize("kind", ["list", "array", "callable"])
def test_dynamic_learning_rate_by_step(device, kind):
    values = [0.1, 0.01, 0.001]
    lr = {"list": values, "array": np.array(values), "callable": lambda s: values[s]}[kind]
    hosts, params = make_params(3, {"w": (5, 6)})
    opt = AdamOffload(params, learning_rate=lr)
    assert opt.dynamic_lr
    gold = Golden(hosts.values())
    for k in range(3):
        assert float(opt.get_lr()[0]) == pytest.approx(values[k])
        gh, gd = make_grads(k, {"w": (5, 6)})
        opt.step(gd)
        gold.step(gh, [values[k]], [0.0])
    assert_close(from_device(params[0].tensor), gold.w[0])
    if kind != "callable":           # a list runs out after its last value
        before = from_device(params[0].tensor)
        with pytest.raises(IndexError, match="step 3"):
            opt.step(make_grads(3, {"w": (5, 6)})[1])
        np.testing.assert_array_equal(from_device(params[0].tensor), before)
        assert opt.global_step == 3


def test_fixed_learning_rate_forms(device):
    _, params = make_params(4, {"w": (3,)})
    for lr, want in ((2, 2.0), (np.array(0.5), 0.5), (np.float32(0.25), 0.25)):
        opt = AdamOffload(params, learning_rate=lr)
        assert not opt.dynamic_lr and opt.get_lr()[0] == np.float32(want)
        opt.release()


# -- validation ----------------------------------------------------------------------------
def _ctor_cases(p, q):
    return {   # name: (args, kwargs, exception, text in the message)
        "lr str": ((), dict(learning_rate="0.1"), TypeError, "learning_rate"),
        "lr None": ((), dict(learning_rate=None), TypeError, "learning_rate"),
        "lr negative": ((), dict(learning_rate=-0.1), ValueError, "learning_rate"),
        "lr 2-d": ((), dict(learning_rate=np.ones((2, 2))), ValueError, "dimension"),
        "param not Parameter": (([p, 3],), {}, TypeError, "Parameter"),
        "params mixed": (([p, {"params": [q]}],), {}, TypeError, "Parameter"),
        "params None": ((None,), {}, ValueError, "None"),
        "params empty": (([],), {}, ValueError, "empty"),
        "params not iterable": ((5,), {}, TypeError, "Iterable"),
        "beta1 int": ((), dict(beta1=1), TypeError, "beta1"),
        "beta2 str": ((), dict(beta2="0.9"), TypeError, "beta2"),
        "eps int": ((), dict(eps=1), TypeError, "eps"),
        "loss_scale str": ((), dict(loss_scale="1"), TypeError, "loss_scale"),
        "weight_decay str": ((), dict(weight_decay="0"), TypeError, "weight_decay"),
        "use_locking int": ((), dict(use_locking=1), TypeError, "use_locking"),
        "use_nesterov None": ((), dict(use_nesterov=None), TypeError, "use_nesterov"),
        "loss_scale 0": ((), dict(loss_scale=0.0), ValueError, "loss_scale"),
        "eps 0": ((), dict(eps=0.0), ValueError, "eps"),
        "beta1 1.0": ((), dict(beta1=1.0), ValueError, "beta1"),
        "beta2 0.0": ((), dict(beta2=0.0), ValueError, "beta2"),
        "weight_decay negative": ((), dict(weight_decay=-1e-4), ValueError, "weight_decay"),
        "group bad key": (([{"params": [p], "momentum": 0.9}],), {}, KeyError, "momentum"),
        "group params not Parameter": (([{"params": [p, 1.0]}],), {}, TypeError, "Parameter"),
        "group params empty": (([{"params": []}],), {}, ValueError, "empty"),
        "order_params with other keys": (([{"params": [p]}, {"order_params": [p], "lr": 0.1}],),
                                         {}, ValueError, "order_params"),
        "order_params not iterable": (([{"params": [p]}, {"order_params": 3}],), {}, TypeError,
                                      "Iterable"),
        "order_params incomplete": (([{"params": [p]}, {"params": [q]}, {"order_params": [p]}],),
                                    {}, ValueError, "order_params"),
        "group duplicate": (([{"params": [p]}, {"params": [p]}],), {}, RuntimeError, "already"),
        "group dynamic lr lengths": (([{"params": [p], "lr": [0.1, 0.2]}, {"params": [q], "lr": [0.1]}],),
                                     {}, ValueError, "same size"),
        "group weight_decay negative": (([{"params": [p], "weight_decay": -1.0}],), {}, ValueError,
                                        "weight_decay"),
    }


@pytest.mark.parametrize("case", list(_ctor_cases(None, None)))
def test_constructor_errors_allocate_nothing(device, case):
    _, (p, q) = make_params(5, {"a.weight": (4,), "b.weight": (2, 2)})
    args, kwargs, exc, text = _ctor_cases(p, q)[case]
    if not args:
        args = ([p, q],)
    free0 = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)[0]
    with pytest.raises(exc, match=text):
        AdamOffload(*args, **kwargs)
    assert acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)[0] == free0


def test_parameter_and_device_rules(device):
    half = Parameter(to_device(np.zeros(4, np.float16)), "h")
    with pytest.raises(TypeError, match="float32"):
        AdamOffload([half])
    _, (p,) = make_params(6, {"w": (4,)})
    with pytest.raises(ValueError, match="unique"):
        AdamOffload([p, Parameter(p.tensor, "w")])
    runtime.reset()
    with pytest.raises(RuntimeError, match="set_device"):
        AdamOffload([p])


def test_bad_gradients_change_nothing(device):
    hosts, params = make_params(7)
    opt = AdamOffload(params, learning_rate=0.01, weight_decay=0.1)
    gh, gd = make_grads(0)
    opt.step(gd)
    state = ([from_device(p.tensor) for p in params], [m.copy() for m in opt.moment1],
             [v.copy() for v in opt.moment2], opt.global_step, opt.beta1_power)
    _, good = make_grads(1)
    wrong_shape = to_device(np.zeros((40, 48), np.float32))
    half = to_device(np.zeros(SHAPES["dense.bias"], np.float16))
    cases = [(good[:-1], ValueError, "5 parameters"),
             (good[:1] + [wrong_shape] + good[2:], ValueError, "dense.bias"),
             (good[:1] + [half] + good[2:], TypeError, "FLOAT"),
             (good[:4] + [None], TypeError, "head.weight"),
             ("grads", TypeError, "tuple")]
    for grads, exc, text in cases:
        with pytest.raises(exc, match=text):
            opt.step(grads)
    for p, w in zip(params, state[0]):
        np.testing.assert_array_equal(from_device(p.tensor), w)
    for a, b in zip(opt.moment1 + opt.moment2, state[1] + state[2]):
        np.testing.assert_array_equal(a, b)
    assert (opt.global_step, opt.beta1_power) == state[3:]
    # the gradients given to the failed calls were not decayed either
    np.testing.assert_array_equal(from_device(good[0]), make_grads(1)[0][0])


def test_beta1_power_of_one_is_refused(device):
    _, params = make_params(8, {"w": (4,)})
    opt = AdamOffload(params, beta1=1.0 - 1e-9)          # rounds to 1.0 in float32
    before = from_device(params[0].tensor)
    with pytest.raises(RuntimeError, match="beta1_power"):
        opt.step(make_grads(0, {"w": (4,)})[1])
    np.testing.assert_array_equal(from_device(params[0].tensor), before)
    assert opt.global_step == 0 and opt.beta1_power == 1


# -- device memory and timeline ------------------------------------------------------------
def test_moments_take_no_device_memory(device):
    shapes = {f"layer{i}.weight": (64, 64) for i in range(6)}
    one = malloc_size(64 * 64 * 4)                      # aclrtMalloc reservation of 16 KiB
    _, params = make_params(9, shapes)
    free0, total, ret = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)
    assert ret == 0
    opt = AdamOffload(params, weight_decay=0.01)
    free1 = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)[0]
    # construction: one staging buffer of the largest parameter, nothing per parameter
    assert free0 - free1 == opt.device_bytes == one
    _, gd = make_grads(0, shapes)
    free_g = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)[0]
    opt.step(gd)
    free2 = acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)[0]
    # the first step adds the add kernels' workspaces (one per stream), nothing else
    ws = [size for _, size in opt._workspaces.values() if size]
    assert free_g - free2 == sum(malloc_size(s) for s in ws)
    assert opt.device_bytes == one + sum(malloc_size(s) for s in ws)
    # later steps allocate nothing: only the 6 new gradient tensors of the caller
    _, gd = make_grads(1, shapes)
    opt.step(gd)
    assert acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)[0] == free2 - 6 * one
    # m and v are host arrays: 2 x 6 parameters' worth, against one parameter on the device
    assert [m.shape for m in opt.moment1] == [m.shape for m in opt.moment2] == [(64, 64)] * 6
    assert sum(m.nbytes + v.nbytes for m, v in zip(opt.moment1, opt.moment2)) == 12 * 16384
    opt.release()
    assert acl.rt.get_mem_info(aclnn.ACL_HBM_MEM)[0] == free0 - 12 * one


def _spans(opt):
    out = {}
    for s in opt.last_timeline:
        out[(s.kind, s.param)] = s
    return out


def test_timeline_copies_overlap_the_host_work_of_the_next_parameter(device):
    shapes = {f"p{i}.weight": (256, 256) for i in range(3)}
    _, params = make_params(10, shapes)
    opt = AdamOffload(params, host_bandwidth=20e9)
    opt.step(make_grads(0, shapes)[1])
    sp = _spans(opt)
    names = list(shapes)
    soc = get_soc("Ascend910B1")
    nbytes = 256 * 256 * 4
    for i, n in enumerate(names):
        d2h, host, h2d, k = (sp[(kind, n)] for kind in ("D2H", "host", "H2D", "kernel"))
        # costs: the host link and the documented host model
        assert d2h.duration_us == pytest.approx(soc.host_link_latency_us + nbytes / soc.host_link_bandwidth * 1e6)
        assert host.duration_us == pytest.approx(24 * 65536 / 20e9 * 1e6)
        # data dependencies: gradient on the host -> host work -> delta on device -> add
        assert d2h.end_us <= host.start_us and host.end_us <= h2d.start_us <= h2d.end_us <= k.start_us
        if i + 1 < len(names):
            nxt = names[i + 1]
            # the next gradient's D2H runs while the host computes this parameter
            assert sp[("D2H", nxt)].start_us < host.end_us
            # this parameter's H2D and kernel run while the host computes the next one
            assert h2d.start_us < sp[("host", nxt)].end_us and k.start_us < sp[("host", nxt)].end_us
    first = min(s.start_us for s in opt.last_timeline)
    last = max(s.end_us for s in opt.last_timeline)
    serial = sum(s.duration_us for s in opt.last_timeline)
    assert last - first < 0.8 * serial
    assert "host" in opt.timeline_text() and "H2D" in opt.timeline_text()


def test_timeline_without_host_cost_overlaps_copies_and_kernels(device):
    shapes = {f"p{i}.weight": (128, 128) for i in range(3)}
    _, params = make_params(11, shapes)
    opt = AdamOffload(params, host_bandwidth=None, weight_decay=0.01)
    opt.step(make_grads(0, shapes)[1])
    sp = _spans(opt)
    assert all(sp[("host", n)].duration_us == 0 for n in shapes)
    # parameter 0's H2D (compute stream) overlaps parameter 1's D2H (copy stream)
    h2d0, d2h1 = sp[("H2D", "p0.weight")], sp[("D2H", "p1.weight")]
    assert h2d0.start_us < d2h1.end_us and d2h1.start_us < h2d0.end_us
    # decay kernels precede their D2H copy
    for n in shapes:
        assert sp[("decay", n)].end_us <= sp[("D2H", n)].start_us


# -- the sample ----------------------------------------------------------------------------
def test_sample_runs_and_learns(capsys):
    result = run_example("adam_offload_sample", ["--steps", "30"])
    assert result["loss"][-1] < 0.5 * result["loss"][0]
    assert result["staging_bytes"] < result["moments_host_bytes"]
    out = capsys.readouterr().out
    assert "get_mem_info" in out and "H2D" in out
