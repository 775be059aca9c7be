"""torch's device "npu" on the simulated NPU (aclnn.torch_npu): tensors in device memory,
views and copies, the aclnn-backed operators against torch on the CPU, the host fallback's
warning, ``torch.npu``. Skipped where torch is not installed (CI does not install it)."""
import gc
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[torch]')")

import aclnn.torch_npu as torch_npu  # noqa: E402
from aclnn import runtime  # noqa: E402
from aclnn.torch_npu import _ops  # noqa: E402
from aclnn.torch_npu._ops import NpuFallbackWarning  # noqa: E402


@pytest.fixture
def npu():
    """A fresh runtime under device "npu" (registered once per process)."""
    runtime.reset()
    torch_npu.enable("Ascend910B1")
    torch.manual_seed(0)
    _ops.reset_warnings()
    yield
    gc.collect()
    runtime.reset()


def test_round_trip_lives_in_device_memory(npu):
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    y = x.npu()
    assert y.device == torch.device("npu", 0) and y.is_npu and not x.is_npu
    alloc = runtime.current_device().gm.find(y.data_ptr())
    assert alloc is not None and alloc.size >= x.numel() * 4
    assert torch.equal(y.cpu(), x)
    assert np.array_equal(y.to("cpu").numpy(), x.numpy())
    z = torch.empty(3, dtype=torch.int32, device="npu")
    assert z.dtype == torch.int32 and z.shape == (3,)
    assert torch.equal(torch.zeros(2, 3, device="npu").cpu(), torch.zeros(2, 3))
    assert torch.equal(torch.full((2,), 7, device="npu").cpu(), torch.full((2,), 7))
    assert torch.equal(torch.arange(2, 11, 3, device="npu").cpu(), torch.arange(2, 11, 3))


def test_views_share_the_device_memory(npu):
    x = torch.arange(30, dtype=torch.float32).reshape(5, 6)
    y = x.npu()
    v = y[1:, ::2].t()
    assert v.data_ptr() == y.data_ptr() + (1 * 6) * 4      # same allocation, offset view
    assert torch.equal(v.cpu(), x[1:, ::2].t())
    assert torch.equal(y.view(6, 5).cpu(), x.view(6, 5))
    y[0].fill_(-1.0)                                        # a write through a view
    y[:, 5].copy_(torch.tensor([9.0, 8, 7, 6, 5]))          # a strided one, from the host
    x[0] = -1.0
    x[:, 5] = torch.tensor([9.0, 8, 7, 6, 5])
    assert torch.equal(y.cpu(), x)


def test_dtype_conversions_and_device_copies(npu):
    x = torch.randn(5, 7)
    y = x.npu()
    assert torch.equal(y.half().cpu(), x.half())
    assert torch.equal(y.to(torch.bfloat16).cpu(), x.to(torch.bfloat16))
    assert torch.equal(y.to(torch.int32).cpu(), x.to(torch.int32))
    z = torch.empty_like(y)
    z.copy_(y)                                              # device to device
    assert torch.equal(z.cpu(), x)
    assert z.data_ptr() != y.data_ptr()


def test_matmul_and_softmax_run_aclnn_operators(npu):
    a, b = torch.randn(48, 40), torch.randn(40, 24)
    before = len(_ops.ran)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NpuFallbackWarning)
        c = a.npu() @ b.npu()
        s = torch.softmax(c, dim=-1)
        t = torch.randn(3, 8, 16).npu() @ torch.randn(3, 16, 4).npu()
        u = c + c
    assert _ops.ran[before:] == ["aclnnMm", "aclnnSoftmax", "aclnnBatchMatMul", "aclnnAdd"]
    torch.testing.assert_close(c.cpu(), a @ b, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(s.cpu(), torch.softmax(a @ b, dim=-1), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(u.cpu(), 2 * (a @ b), rtol=1e-5, atol=1e-4)
    assert t.shape == (3, 8, 4)
    assert "MatMul" in torch_npu.op_summary() and "SoftmaxV2" in torch_npu.op_summary()


def test_rms_norm_and_embedding_backward_run_aclnn_operators(npu):
    x, g = torch.randn(6, 32), torch.rand(32) + 0.5
    before = len(_ops.ran)
    y = torch.nn.functional.rms_norm(x.npu(), (32,), g.npu(), 1e-6)
    grad = torch.randn(10, 8)
    idx = torch.tensor([0, 3, 3, 9, 1, 0, 2, 3, 5, 9], dtype=torch.int64)
    w = torch.ops.aten.embedding_dense_backward(grad.npu(), idx.npu(), 12, -1, False)
    assert _ops.ran[before:] == ["aclnnRmsNorm", "aclnnEmbeddingDenseBackward"]
    ref = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-4, atol=1e-5)
    expect = torch.zeros(12, 8).index_add_(0, idx, grad)
    torch.testing.assert_close(w.cpu(), expect, rtol=1e-5, atol=1e-5)


def test_other_operators_fall_back_with_one_warning_per_name(npu):
    x = torch.randn(4, 4)
    y = x.npu()
    with pytest.warns(NpuFallbackWarning, match=r"aten\.mul on device 'npu' runs on the host"):
        z = y * 3
    assert z.is_npu and torch.equal(z.cpu(), x * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NpuFallbackWarning)
        z = y * 2                                           # the same name: no second warning
        assert torch.allclose(z.cpu(), x * 2)
    with pytest.warns(NpuFallbackWarning, match=r"aten\.add_"):
        y.add_(1.0)                                         # in place: written back
    assert torch.allclose(y.cpu(), x + 1)
    with pytest.warns(NpuFallbackWarning, match=r"aten\.allclose"):
        assert torch.allclose(y, x.npu() + 1)


def test_aclnn_refusal_falls_back_and_says_why(npu):
    a = torch.randint(-5, 5, (4, 4), dtype=torch.int32)
    with pytest.warns(NpuFallbackWarning, match=r"aclnnMm refused it"):
        c = a.npu() @ a.npu()
    assert torch.equal(c.cpu(), a @ a)


def test_torch_npu_module(npu):
    assert torch.npu.is_available() and torch.npu.device_count() == 1
    torch.npu.set_device(0)
    assert torch.npu.current_device() == 0
    stream = torch.npu.current_stream()
    assert stream.device == torch.device("npu", 0)
    y = torch.ones(8, device="npu")
    torch.npu.synchronize()
    stream.synchronize()
    assert y.sum().item() == 8.0


def test_memory_is_cached_as_torch_npu_caches_it(npu):
    y = torch.ones(1000, device="npu")                      # 4000 B -> a 4096 B block
    dev = runtime.current_device()
    seg = dev.gm.find(y.data_ptr())
    assert seg is not None and seg.size >= 2 << 20           # in a 2 MiB segment
    z = torch.ones(10, device="npu")
    assert z.data_ptr() == y.data_ptr() + 4096              # the next 512 B-rounded block
    assert torch.npu.memory_allocated() == 4096 + 512
    ptr, v = y.data_ptr(), y[10:]
    del y
    gc.collect()
    assert torch.npu.memory_allocated() == 4096 + 512       # the view keeps it
    del v
    gc.collect()
    assert torch.npu.memory_allocated() == 512
    w = torch.ones(1000, device="npu")
    assert w.data_ptr() == ptr                              # the freed block is reused
    big = torch.empty(3 << 20, dtype=torch.uint8, device="npu")
    assert dev.gm.find(big.data_ptr()).size >= 3 << 20      # a large segment of its own
    del w, z, big
    gc.collect()
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved() == 0 and dev.gm.find(ptr) is None


def test_the_example_runs_matmul_and_softmax_on_the_device(npu, capsys):
    import runpy
    from pathlib import Path
    example = Path(__file__).resolve().parents[1] / "examples" / "torch_npu_matmul.py"
    before = len(_ops.ran)
    runpy.run_path(str(example), run_name="__main__")
    assert _ops.ran[before:] == ["aclnnMm", "aclnnSoftmax"]
    out = capsys.readouterr().out
    assert "MatMulV3" in out and "SoftmaxV2" in out
    assert float(out.split("max |npu - cpu|:")[1].split()[0]) < 1e-2


def test_linear_backward_and_sgd_step_against_the_cpu(npu):
    torch.manual_seed(1)
    cpu = torch.nn.Linear(16, 8)
    dev = torch.nn.Linear(16, 8)
    dev.load_state_dict(cpu.state_dict())
    dev = dev.npu()
    x = torch.randn(4, 16)
    before = len(_ops.ran)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NpuFallbackWarning)    # sum, softmax backward
        for model, inp in ((cpu, x), (dev, x.npu())):
            torch.softmax(model(inp), -1).pow(2).sum().backward()
            torch.optim.SGD(model.parameters(), lr=0.5).step()
    ran = _ops.ran[before:]
    assert ran[:3] == ["aclnnMm", "aclnnAdd", "aclnnSoftmax"]          # addmm, softmax
    assert ran.count("aclnnInplaceAdd") == 2                           # SGD's add_ per param
    torch.testing.assert_close(dev.weight.detach().cpu(), cpu.weight.detach(), rtol=1e-5,
                               atol=1e-6)
    torch.testing.assert_close(dev.bias.detach().cpu(), cpu.bias.detach(), rtol=1e-5,
                               atol=1e-6)
