"""examples/matmul_tuned.py: the tuned basic-API half matmul (static L1/L0 ping-pong,
EVENT_ID flags, large-packet Nd2Nz copies, one LoadData3DParamsV2 per base slice,
unitFlag) is right against numpy, issues what it says it issues, and prints its profile
per pipe."""
import numpy as np

from aclnn_helpers import load_example

TUNED = load_example("matmul_tuned")


def test_tuned_matmul_against_numpy_and_its_instruction_stream(capsys):
    # 4 C tiles on one core: both L0C tiles used twice (the unitFlag hand-back), 2 L1 chunks
    # of K per tile (the L1 ping-pong), 8 k steps (the L0 ping-pong)
    c, exact, err, prof = TUNED.main(M=256, N=256, K=512, blockDim=1)
    # fp32 accumulation, one rounding to half at the end (Fixpipe F322F16)
    np.testing.assert_allclose(c.astype(np.float64), exact, rtol=2e-3, atol=2e-2)
    assert err < 1e-3
    out = capsys.readouterr().out
    for pipe in ("aic_mte2_time", "aic_mte1_time", "aic_mac_time", "aic_fixpipe_time"):
        assert pipe in out
    assert "largest error" in out
    c_flags, _, _, prof_flags = TUNED.main(M=256, N=256, K=512, blockDim=1, unitFlag=False)
    np.testing.assert_array_equal(c_flags, c)           # the flag-synchronised form


def test_tuned_matmul_issues_one_load_per_slice_and_one_copy_per_chunk():
    from npusim import GlobalMemory, get_soc, run_kernel
    from npusim.ascendc import KernelMetaType
    t = TUNED.TunedTiling(128, 128, 512)                  # 1 tile, 2 chunks, 8 k steps
    gm = GlobalMemory(1 << 24)
    a, b, c = gm.malloc(128 * 512 * 2), gm.malloc(512 * 128 * 2), gm.malloc(128 * 128 * 2)
    prof = run_kernel(TUNED.matmul_tuned, 1, (a, b, c, t), soc=get_soc("Ascend910B1"), gm=gm,
                      kernel_type=KernelMetaType.KERNEL_TYPE_AIC_ONLY, keep_spans=True)
    names = [r[5] for r in prof.records[0]]
    assert names.count("LoadData") == 2 * 8               # A and B, one each per base slice
    assert names.count("DataCopy") == 2 * 2               # A and B, one each per L1 chunk
    assert names.count("Mmad") == 8 and names.count("Fixpipe") == 1
    spans = prof.timing.spans[0]
    last_mmad_end = max(s[2] for s in spans if s[3].startswith("Mmad"))
    assert min(s[1] for s in spans if s[3] == "Fixpipe") < last_mmad_end   # unitFlag overlap


def test_the_matmul_api_with_mdl_and_constant_tiling_beside_it(capsys):
    """main_matmul_api: the Matmul API (MDL, constant tiling registered with a null tiling)
    computes the same bytes as the tuned kernel, and its MTE1 time is the tuned kernel's:
    the same one Load3Dv2 per A and per B slice (load_to_l0_utils.h GetLoadInstrType)."""
    c, _, _, prof = TUNED.main(M=256, N=256, K=512, blockDim=2)
    c_api, prof_api = TUNED.main_matmul_api(M=256, N=256, K=512, blockDim=2)
    np.testing.assert_array_equal(c_api, c)
    assert prof_api.pipe_time_us["aic_mte1_time"] == prof.pipe_time_us["aic_mte1_time"]
    assert "MDL + constant tiling" in capsys.readouterr().out
