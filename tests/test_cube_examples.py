"""The cube examples of docs/tutorial.md §14: examples/matmul_custom.py (a
double-buffered AIC_ONLY matmul from the basic instructions) and examples/matmul_leakyrelu.py
(MIX_AIC_1_2: the AIC's Matmul API into the workspace, the AIVs' LeakyRelu behind a
cross-core flag). Each main is run on small shapes and checked against a numpy rendering of
the cube's documented order written here (k in fractal steps of 16 for half, each step's
products summed exactly and rounded once to fp32, added in k order onto the start value:
0, or the bias), and its profile and timeline against the pipes it should use."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from npusim import KernelError, SyncError, get_soc

from aclnn_helpers import load_example

CUSTOM = load_example("matmul_custom")
LEAKY = load_example("matmul_leakyrelu")
CUBE_PIPES = ("aic_mte2_time", "aic_mte1_time", "aic_mac_time", "aic_fixpipe_time")
VECTOR_PIPES = ("aiv_mte2_time", "aiv_vec_time", "aiv_mte3_time")


def inputs(M, N, K, bias=False):
    """The operands each main draws (its documented seed 0, in its order)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return (a, b, rng.standard_normal(N).astype(np.float32)) if bias else (a, b)


def cube_order(a, b, start):
    """fp32 accumulation over k in steps of 16, each step summed exactly (float64 holds a
    sum of 16 half products) and rounded once."""
    acc = np.broadcast_to(np.float32(start), (a.shape[0], b.shape[1])).astype(np.float32)
    for s in range(0, a.shape[1], 16):
        step = a[:, s:s + 16].astype(np.float64) @ b[s:s + 16].astype(np.float64)
        acc = (acc + step.astype(np.float32)).astype(np.float32)
    return acc


def spans(profile, core, pipe):
    return [(s, e) for p, s, e, _, _ in profile.timing.spans[core] if p.name == pipe]


# -- examples/matmul_custom.py ---------------------------------------------------------------

def test_matmul_custom_main_prints_its_error_and_cube_profile(capsys):
    c, err, prof = CUSTOM.main()
    a, b = inputs(128, 128, 256)
    np.testing.assert_array_equal(c, cube_order(a, b, 0))
    assert err < 1e-4
    out = capsys.readouterr().out
    assert "largest error against float64" in out and "aic_mac_time" in out
    assert all(prof.pipe_time_us[p] > 0 for p in CUBE_PIPES)
    assert not any(p.startswith("aiv_") for p in prof.pipe_time_us)      # no vector core ran
    assert prof.core_kinds == ["AIC"] * 4


@settings(max_examples=25, deadline=None)
@given(mBlocks=st.integers(1, 2), nBlocks=st.integers(1, 2), m1=st.integers(1, 3),
       n1=st.integers(1, 3), k1=st.integers(1, 3), kSteps=st.integers(1, 3))
def test_matmul_custom_on_drawn_splits(mBlocks, nBlocks, m1, n1, k1, kSteps):
    """Any split of M and N over blocks and of K into baseK steps: the exact cube order."""
    singleM, singleN, baseK = 16 * m1, 16 * n1, 16 * k1
    M, N, K = mBlocks * singleM, nBlocks * singleN, kSteps * baseK
    c, _, prof = CUSTOM.main(M, N, K, singleM, singleN, baseK)
    a, b = inputs(M, N, K)
    np.testing.assert_array_equal(c, cube_order(a, b, 0))
    assert len(prof.core_kinds) == mBlocks * nBlocks


def test_double_buffering_overlaps_mte2_with_mmad(monkeypatch):
    """With two buffers MTE2 fetches step k + 1 while M still multiplies step k; with one it
    must wait for the Mmad to free the buffer, and the kernel takes longer."""
    shape = dict(M=64, N=64, K=512, singleM=64, singleN=64, baseK=64)
    _, _, double = CUSTOM.main(**shape, keep_spans=True)
    mte2, mmad = spans(double, 0, "PIPE_MTE2"), spans(double, 0, "PIPE_M")
    assert len(mmad) == 8
    assert any(s < mmad[0][1] for s, _ in mte2[2:])    # step 1's copies start before Mmad 0 ends
    monkeypatch.setattr(CUSTOM, "BUFFER_NUM", 1)
    c, _, single = CUSTOM.main(**shape)
    np.testing.assert_array_equal(c, cube_order(*inputs(64, 64, 512), 0))
    assert single.duration_us > double.duration_us


def test_matmul_custom_l0a_overflow_is_caught():
    """Two 128 x 256 half buffers (128 KiB) do not fit the 64 KiB of L0A."""
    with pytest.raises(KernelError, match="A2|L0A"):
        CUSTOM.main(M=128, N=16, K=256, singleM=128, singleN=16, baseK=256)


@pytest.mark.parametrize("shape, name", [
    (dict(M=96, N=80, K=160, singleM=48, singleN=48, baseK=32), "N = 80"),    # a tail block
    (dict(M=64, N=64, K=96, singleM=64, singleN=64, baseK=64), "K = 96"),     # a tail k step
    (dict(M=40, N=64, K=64, singleM=40, singleN=64, baseK=64), "singleM = 40"),  # part fractal
])
def test_matmul_custom_host_refuses_shapes_its_kernel_cannot_tile(shape, name):
    with pytest.raises(ValueError, match=name):
        CUSTOM.main(**shape)


def leaky_reference(M, N, K, alpha):
    a, b, bias = inputs(M, N, K, bias=True)
    x = cube_order(a, b, bias)                       # the bias starts L0C (the bias table)
    return np.where(x < 0, (x * np.float32(alpha)).astype(np.float32), x)   # one rounding


def test_matmul_leakyrelu_main_runs_both_halves_in_flag_order(capsys):
    out, err, prof = LEAKY.main(M=128, N=64, K=64, blocks=2, alpha=0.1, keep_spans=True)
    np.testing.assert_array_equal(out, leaky_reference(128, 64, 64, 0.1))
    assert err < 1e-4
    assert "largest error against float64" in capsys.readouterr().out
    assert all(prof.pipe_time_us[p] > 0 for p in CUBE_PIPES + VECTOR_PIPES)
    blocks = prof.core_kinds.count("AIC")
    assert prof.core_kinds == ["AIC"] * blocks + ["AIV"] * (2 * blocks) and blocks == 2
    for g in range(blocks):             # each AIV reads the workspace after its AIC's Fixpipe
        fix_end = max(e for _, e in spans(prof, g, "PIPE_FIX"))
        for sub in range(2):
            assert spans(prof, blocks + 2 * g + sub, "PIPE_MTE2")[0][0] >= fix_end


@settings(max_examples=25, deadline=None)
@given(half_rows=st.sampled_from([4, 8, 12, 16]), n=st.integers(1, 8), K=st.integers(1, 80),
       blocks=st.integers(1, 3), alpha=st.floats(-2, 2, width=32))
def test_matmul_leakyrelu_on_drawn_shapes(half_rows, n, K, blocks, alpha):
    """Blocks of rows that need not fill a fractal, N any multiple of 8, any K."""
    M, N = 2 * blocks * half_rows, 8 * n
    out, _, prof = LEAKY.main(M, N, K, blocks, alpha)
    np.testing.assert_array_equal(out, leaky_reference(M, N, K, alpha))
    assert prof.core_kinds.count("AIC") == blocks


@pytest.mark.parametrize("M,N,blocks", [(42, 16, 2), (64, 20, 2), (64, 16, 64)])
def test_leakyrelu_host_tiling_refuses_tail_blocks(M, N, blocks):
    """Odd halves, a row that is not whole 32 B blocks of float, more blocks than rows."""
    with pytest.raises(ValueError):
        LEAKY.host_tiling(get_soc("Ascend910B1"), M, N, 32, blocks, 0.1)


def test_without_the_aivs_wait_the_checker_reports_the_race(monkeypatch):
    monkeypatch.setattr(LEAKY, "CrossCoreWaitFlag", lambda flagId: None)
    with pytest.raises(SyncError, match="reads GM .* while AIC 0 writes"):
        LEAKY.main(M=64, N=32, K=32, blocks=1)
