"""Tests for npusim.soc: presets must match docs/reference/hardware.md §1."""

import dataclasses

import pytest

from npusim.soc import (
    DEFAULT_SOC,
    SOC_PRESETS,
    SocSpec,
    UnknownSocError,
    get_soc,
    list_socs,
)

REQUIRED = [
    "Ascend910B1", "Ascend910B2", "Ascend910B3", "Ascend910B4",
    "Ascend910_9391", "Ascend910_9392", "Ascend910_9381", "Ascend910_9382",
    "Ascend910_9372", "Ascend910_9362",
    "Ascend910A", "Ascend910ProA", "Ascend910ProB", "Ascend910PremiumA",
    "Ascend310P1", "Ascend310P3",
]

GIB64 = 68719476736
GIB32 = 34359738368
MIB192 = 201326592

# name: (short, ai, cube, vector, ai_cpu, cube_freq, memory_size, l2_size,
#        ub_size, ddr_rate, l2_write_rate)  -- hardware.md §1.1-§1.4
EXPECTED = {
    "Ascend910B1": ("Ascend910B", 24, 24, 48, 4, 1850, GIB64, MIB192,
                    196608, 32, 86),
    "Ascend910B2": ("Ascend910B", 24, 24, 48, 4, 1800, GIB64, MIB192,
                    196608, 32, 86),
    "Ascend910B3": ("Ascend910B", 20, 20, 40, 4, 1800, GIB64, MIB192,
                    196608, 32, 86),
    "Ascend910B4": ("Ascend910B", 20, 20, 40, 4, 1500, GIB32, 100663296,
                    196608, 32, 86),
    "Ascend910_9391": ("Ascend910_93", 24, 24, 48, 4, 1850, GIB64, MIB192,
                       196608, 32, 86),
    "Ascend910_9392": ("Ascend910_93", 24, 24, 48, 4, 1850, GIB64, MIB192,
                       196608, 32, 86),
    "Ascend910_9381": ("Ascend910_93", 24, 24, 48, 4, 1800, GIB64, MIB192,
                       196608, 32, 86),
    "Ascend910_9382": ("Ascend910_93", 24, 24, 48, 4, 1800, GIB64, MIB192,
                       196608, 32, 86),
    "Ascend910_9372": ("Ascend910_93", 20, 20, 40, 4, 1800, GIB64, MIB192,
                       196608, 32, 86),
    "Ascend910_9362": ("Ascend910_93", 20, 20, 40, 4, 1500, GIB32, 176160768,
                       196608, 32, 86),
    # 910A family: memory_size empty in the ini, 32 GiB substituted.
    "Ascend910A": ("Ascend910", 32, 0, 0, 4, 1000, GIB32, 33554432,
                   262144, 32, 86),
    "Ascend910ProA": ("Ascend910", 32, 0, 0, 4, 1100, GIB32, 33554432,
                      262144, 32, 86),
    "Ascend910ProB": ("Ascend910", 30, 0, 0, 4, 1150, GIB32, 33554432,
                      262144, 32, 86),
    "Ascend910PremiumA": ("Ascend910", 32, 0, 0, 4, 1220, GIB32, 33554432,
                          262144, 32, 86),
    "Ascend310P1": ("Ascend310P", 10, 0, 8, 8, 1060, 24000000000, 16777216,
                    262144, 17, 114),
    "Ascend310P3": ("Ascend310P", 8, 0, 7, 16, 1060, 24000000000, 16777216,
                    262144, 17, 114),
}


def test_exactly_the_required_presets():
    assert sorted(SOC_PRESETS) == sorted(REQUIRED)
    assert list_socs() == sorted(REQUIRED)


@pytest.mark.parametrize("name", REQUIRED)
def test_preset_name_matches_key(name):
    assert SOC_PRESETS[name].soc_version == name
    assert get_soc(name) is SOC_PRESETS[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ini_values(name):
    (short, ai, cube, vec, cpu, freq, mem, l2, ub, ddr,
     l2w) = EXPECTED[name]
    s = get_soc(name)
    assert s.short_soc_version == short
    assert (s.ai_core_cnt, s.cube_core_cnt, s.vector_core_cnt) == (
        ai, cube, vec)
    assert s.ai_cpu_cnt == cpu
    assert s.cube_freq == freq
    assert s.memory_size == mem
    assert s.l2_size == l2
    assert s.ub_size == ub
    assert s.ddr_rate == ddr
    assert s.l2_write_rate == l2w


@pytest.mark.parametrize("name", REQUIRED[:10])
def test_a2_a3_common_fields(name):
    s = get_soc(name)
    assert s.aic_version == "AIC-C-220"
    assert s.arch_type == 4
    assert s.npu_arch == "2201"
    assert s.is_split and s.cube_vector_combine == "split"
    assert s.core_type_list == ("CubeCore", "VectorCore")
    assert (s.l0_a_size, s.l0_b_size, s.l0_c_size, s.l1_size) == (
        65536, 65536, 131072, 524288)
    assert (s.ubblock_size, s.ubbank_size, s.ubbank_num,
            s.ubbank_group_num) == (32, 4096, 64, 16)
    assert (s.ddr_read_rate, s.ddr_write_rate) == (32, 32)
    assert (s.l2_rate, s.l2_read_rate) == (110, 110)
    assert (s.ub_to_l2_rate, s.ub_to_ddr_rate) == (64, 64)
    assert (s.l1_to_ub_rate, s.ub_to_l1_rate) == (128, 128)
    assert s.vec_freq is None
    assert s.vc_ddr_rate is None and s.vc_ub_size is None
    assert s.memory_size_from_ini
    assert s.ub_usable == 196352
    assert s.max_event_id == 8
    assert s.max_tque_buffers_per_position == 8
    assert s.lib_api_workspace_size == 16 * 1024 * 1024


@pytest.mark.parametrize(
    "name", ["Ascend910A", "Ascend910ProA", "Ascend910ProB",
             "Ascend910PremiumA"])
def test_first_gen_910(name):
    s = get_soc(name)
    assert s.aic_version == "AIC-C-100"
    assert s.arch_type == 3
    assert s.npu_arch == "1001"
    assert not s.memory_size_from_ini
    assert not s.is_split
    assert s.core_type_list == ("AICore",)
    assert (s.l0_c_size, s.l1_size) == (262144, 1048576)
    assert s.ub_usable == 262144
    assert s.vector_block_num == s.ai_core_cnt
    assert s.max_event_id == 4
    assert s.max_tque_buffers_per_position == 4
    assert s.lib_api_workspace_size == 2 * 1024 * 1024


def test_310p3_values():
    s = get_soc("Ascend310P3")
    assert s.aic_version == "AIC-M-200"
    assert s.arch_type == 1
    assert s.npu_arch == "2002"
    assert s.vec_freq == 1000
    assert s.ub_to_ddr_rate == 17
    assert s.ub_to_l2_rate == 114
    assert s.ub_to_l1_rate == 256
    assert s.vc_ddr_rate == 9
    assert s.vc_ub_size == 262144
    assert s.core_type_list == ("AICore", "VectorCore")
    assert s.memory_size_from_ini
    assert not s.is_split
    assert s.ub_usable == 262144
    assert s.vector_block_num == 8


def test_310p1_differs_only_in_counts():
    p1, p3 = get_soc("Ascend310P1"), get_soc("Ascend310P3")
    diff = {f.name for f in dataclasses.fields(SocSpec)
            if getattr(p1, f.name) != getattr(p3, f.name)}
    assert diff == {"soc_version", "ai_core_cnt", "vector_core_cnt",
                    "ai_cpu_cnt"}


@pytest.mark.parametrize("name, blocks", [
    ("Ascend910B1", 48), ("Ascend910B3", 40), ("Ascend910B4", 40),
    ("Ascend910_9391", 48), ("Ascend910_9362", 40),
    ("Ascend910A", 32), ("Ascend910ProB", 30),
    ("Ascend310P3", 8), ("Ascend310P1", 10),
])
def test_vector_block_num(name, blocks):
    assert get_soc(name).vector_block_num == blocks


def test_ub_usable_and_reservations():
    assert get_soc("Ascend910B1").ub_usable == 196352
    assert get_soc("Ascend910_9391").ub_usable == 196352
    assert get_soc("Ascend910A").ub_usable == 262144
    assert get_soc("Ascend910B1").ascendc_reserved_ub == 8192


def test_derived_constants():
    s = get_soc("Ascend910B1")
    assert s.freq_hz == 1.85e9
    assert s.max_total_buffers == 64
    assert s.max_block_dim == 65535
    assert not any(p.supports_bf16_vector for p in SOC_PRESETS.values())


def test_timing_parameters():
    for name in ["Ascend910B1", "Ascend910B2", "Ascend910B3",
                 "Ascend910_9391", "Ascend910_9372"]:
        assert get_soc(name).hbm_bandwidth == 1.6e12
    assert get_soc("Ascend910B4").hbm_bandwidth == 0.8e12
    assert get_soc("Ascend910_9362").hbm_bandwidth == 0.8e12
    assert get_soc("Ascend910A").hbm_bandwidth == 1.2e12
    assert get_soc("Ascend310P3").hbm_bandwidth == 204.8e9
    for s in SOC_PRESETS.values():
        assert s.dma_latency_cycles == 164       # benchmarks/calibration_fit.json
        assert s.vec_head_cycles == 22
        assert s.scalar_cycles == 11              # docs/calibration.md "Scalar unit"
        assert s.host_link_bandwidth == 25e9
        assert s.host_link_latency_us == 10.0
        assert s.launch_overhead_us == 3.0


def test_default_soc():
    assert DEFAULT_SOC == "Ascend910B1"
    assert get_soc() is SOC_PRESETS["Ascend910B1"]
    assert get_soc(None).soc_version == "Ascend910B1"


def test_get_soc_passes_spec_through():
    custom = dataclasses.replace(get_soc(), ai_core_cnt=1)
    assert get_soc(custom) is custom


def test_unknown_soc_error_lists_names():
    with pytest.raises(UnknownSocError) as info:
        get_soc("Ascend999")
    msg = str(info.value)
    assert "Ascend999" in msg
    assert ", ".join(sorted(REQUIRED)) in msg
    assert isinstance(info.value, ValueError)


def test_spec_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        get_soc().ai_core_cnt = 1
