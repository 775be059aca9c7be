"""SoC presets for the simulated Ascend NPU.

Each preset is a frozen :class:`SocSpec` record. Its fields fall into two
groups:

* **Platform-config values** copied exactly from the CANN 8.1.RC1
  ``platform_config/<SoC>.ini`` files, as quoted in
  ``docs/reference/hardware.md §1`` (the only source used here). Field names follow
  the ini keys. Units:

  - core counts, ``arch_type``: plain integers
    (``[version]`` / ``[SoCInfo]``, §1.1, §1.3, §1.4);
  - ``memory_size``, ``l2_size``: bytes (``[SoCInfo]``);
  - ``cube_freq``, ``vec_freq``: MHz
    (``[AICoreSpec]`` / ``[VectorCoreSpec]``);
  - ``l0_*_size``, ``l1_size``, ``ub*_size``: bytes (``[AICoreSpec]``);
  - ``*_rate``: bytes per cycle (``[AICoreMemoryRates]``; the unit is
    documented for ``GetCoreMemBw``, §1.6);
  - ``vc_ddr_rate`` (B/cycle) and ``vc_ub_size`` (bytes): the separate
    Vector Core of the 310P (``[VectorCoreMemoryRates]`` /
    ``[VectorCoreSpec]``, §1.4); ``None`` where the ini has no such section.

  Per-SoC differences follow the §1.2 diff table (A2/A3), the §1.3 variant
  list (first-generation 910) and the §1.4 note (310P1).

* **Timing parameters of our own** (not in any ini): ``hbm_bandwidth`` (B/s),
  ``dma_latency_cycles``, ``vec_head_cycles`` and ``scalar_cycles``
  (cycles), ``host_link_bandwidth`` (B/s), ``host_link_latency_us`` and
  ``launch_overhead_us`` (µs). Their basis is given next to the base records
  below; values marked [R] are unverified guesses.

Use :func:`get_soc` to look a preset up by name.
"""

import functools
from dataclasses import dataclass, replace

import numpy as np

GIB = 1024 ** 3
MIB = 1024 ** 2


class UnknownSocError(ValueError):
    """Raised by :func:`get_soc` for a SoC name that has no preset."""


@functools.lru_cache(maxsize=None)
def _cube_rates(table: tuple) -> dict:
    """``cube_k_per_cycle`` as a dict by numpy dtype (built once per table: Mmad asks twice
    per instruction)."""
    import ml_dtypes  # noqa: F401  (registers the "bfloat16" dtype name)
    return {np.dtype(name): rate for name, rate in table}


@dataclass(frozen=True)
class SocSpec:
    """One SoC preset (platform-config values plus our timing parameters).

    ``[version]`` (docs/reference/hardware.md §1.1, §1.3, §1.4):
        soc_version, short_soc_version, aic_version (str); arch_type (int).
        npu_arch (str) is not in the 8.1.RC1 inis (later toolkits add
        ``NpuArch=2201``, §5): "2201" for A2/A3, "1001" [R] for the
        first-generation 910, "2002" [R] for the 310P.

    ``[SoCInfo]``:
        ai_core_cnt, cube_core_cnt, vector_core_cnt, ai_cpu_cnt (counts; 0 when
        the ini has no such key, e.g. cube_core_cnt on 910A/310P);
        memory_size, l2_size (bytes); cube_vector_combine (str or None);
        core_type_list (tuple of str).
        memory_size_from_ini is False where the ini leaves memory_size empty
        and a substitute value is used.

    ``[AICoreSpec]``:
        cube_freq (MHz); l0_a_size, l0_b_size, l0_c_size, l1_size, ub_size,
        ubblock_size, ubbank_size (bytes); ubbank_num, ubbank_group_num
        (counts).

    ``[AICoreMemoryRates]`` (all bytes per cycle):
        ddr_rate, ddr_read_rate, ddr_write_rate, l2_rate, l2_read_rate,
        l2_write_rate, ub_to_l2_rate, ub_to_ddr_rate, l1_to_ub_rate,
        ub_to_l1_rate.

    ``[VectorCoreSpec]`` / ``[VectorCoreMemoryRates]`` (None where absent):
        vec_freq (MHz), vc_ub_size (bytes), vc_ddr_rate (B/cycle).

    The cube half (defaults are the A2/A3 values, the field comments give each
    one's source): bt_size, fb0..fb3_size (bytes), support_fixpipe, the ini's
    l1_to_l0_a/b_rate and l0_c_to_ub_rate, the documented MTE1 rates mte1_l0a/l0b/bt_rate
    (B/cycle), fixpipe_elements_per_cycle, cube_m/n_size and cube_k_per_cycle (Mmad MACs
    per cycle by dtype), and our [R] heads mmad/mte1/fixpipe_head_cycles.

    Timing parameters (ours; see the base records for their basis):
        hbm_bandwidth (B/s, device-wide GM bandwidth shared by all cores),
        dma_latency_cycles (MTE2 latency after a transfer's own time, cycles),
        vec_head_cycles (fixed cost per vector instruction, cycles),
        scalar_cycles (cost of one PIPE_S instruction, cycles),
        host_link_bandwidth (B/s), host_link_latency_us (µs),
        launch_overhead_us (µs); the memory system's noc_bandwidth (B/s),
        hbm_mixed_efficiency (fraction), hbm_write_queue_bytes (bytes) and
        hbm_transfer_overhead_cycles (cycles), fitted by benchmarks/calibrate_add.py
        (docs/calibration.md); the write queue's marks hbm_write_high_thresh_perc and
        hbm_write_low_thresh_perc (percent of the queue) and its batch
        hbm_min_writes_per_switch_bytes (bytes), gem5's MemCtrl defaults.
    """

    # [version]
    soc_version: str
    short_soc_version: str
    aic_version: str
    arch_type: int
    npu_arch: str
    # [SoCInfo]
    ai_core_cnt: int
    cube_core_cnt: int
    vector_core_cnt: int
    ai_cpu_cnt: int
    memory_size: int
    l2_size: int
    # [AICoreSpec] / [VectorCoreSpec] clocks
    cube_freq: int
    vec_freq: int | None
    # [SoCInfo]
    cube_vector_combine: str | None
    core_type_list: tuple[str, ...]
    # [AICoreSpec] sizes
    l0_a_size: int
    l0_b_size: int
    l0_c_size: int
    l1_size: int
    ub_size: int
    ubblock_size: int
    ubbank_size: int
    ubbank_num: int
    ubbank_group_num: int
    # [AICoreMemoryRates], B/cycle
    ddr_rate: int
    ddr_read_rate: int
    ddr_write_rate: int
    l2_rate: int
    l2_read_rate: int
    l2_write_rate: int
    ub_to_l2_rate: int
    ub_to_ddr_rate: int
    l1_to_ub_rate: int
    ub_to_l1_rate: int
    # [VectorCoreMemoryRates] ddr_rate (B/cycle), [VectorCoreSpec] ub_size
    vc_ddr_rate: int | None
    vc_ub_size: int | None
    memory_size_from_ini: bool
    # Our timing parameters
    hbm_bandwidth: float
    dma_latency_cycles: int
    vec_head_cycles: int
    scalar_cycles: int
    host_link_bandwidth: float
    host_link_latency_us: float
    launch_overhead_us: float
    # Timing parameters of the L2, alignment and UB-bank model (docs/calibration.md gives
    # each value's basis; the defaults are those of the A2/A3 parts).
    #: MTE3 (UB -> GM) latency after a transfer's own time, cycles: fitted to §4.1 case 1
    #: (295.1 cycles per 8 KB copy-out = 12.5 issue + 256 + 27).
    dma_write_latency_cycles: int = 27
    #: Extra HBM occupancy per transfer that reaches HBM and starts a new stream (does not
    #: take up where its MTE's previous transfer's first row ended), cycles: fitted to §4.1
    #: cases 2-3 (benchmarks/calibrate_add.py, docs/calibration.md).
    hbm_transfer_overhead_cycles: float = 2.5
    #: HBM capacity while reads and writes are both in flight, as a fraction of
    #: ``hbm_bandwidth``: fitted to §4.1 cases 2-3 (docs/calibration.md).
    hbm_mixed_efficiency: float = 1.0
    #: HBM controller write queue for the dirty L2 lines evicted, bytes: fitted to §4.1
    #: cases 2-3 (docs/calibration.md).
    hbm_write_queue_bytes: int = 16777216
    #: Write draining of the HBM controller, as gem5's ``MemCtrl`` (``src/mem/MemCtrl.py``):
    #: the bus turns to writes when the write queue holds more than this share of
    #: ``hbm_write_queue_bytes``, percent (gem5's ``write_high_thresh_perc``, default 85).
    hbm_write_high_thresh_perc: float = 85.0
    #: ... and the queue drains in the HBM time the reads leave only above this share,
    #: percent (gem5's ``write_low_thresh_perc``, default 50).
    hbm_write_low_thresh_perc: float = 50.0
    #: Bytes a write batch drains before the bus turns back to waiting reads: gem5's
    #: ``min_writes_per_switch`` (16 bursts by default) of its HBM2 pseudo-channel
    #: (``HBM_2000_4H_1x64``: 64-bit bus, BL4, 32 B a burst), 512 B. Not fitted: §4.1
    #: cases 2-3 give the same cost for 1 KiB to 1 MiB (docs/calibration.md).
    hbm_min_writes_per_switch_bytes: int = 512
    #: Device-wide bandwidth between the vector cores and L2/HBM, read and write bytes
    #: together, B/s: fitted to §4.1 cases 2-3 (docs/calibration.md).
    noc_bandwidth: float = 2.4e12
    #: Device-wide L2 bandwidth, B/s: "L2 Cache读写混合带宽约为7TB/s" (§2).
    l2_bandwidth: float = 7e12
    #: L2 line, bytes: kC220L2CacheLineBytes = 512 in a Huawei DVM source (§1.6 [S]).
    l2_line_bytes: int = 512
    #: What the L2 fills and hits, bytes: msprof counts A2's L2 read hits and
    #: miss-allocates in 128 B (the DataCopy best practice's U5: 9,437,187 miss-allocates
    #: for the 1208 MB it reads), so a line is filled by 128 B sectors (a 512 B line of
    #: four sectors). 0: the whole line.
    l2_sector_bytes: int = 128
    #: Writes that find L2 full go on to HBM at once. Off: the L2 is write-back, and the
    #: dirty lines it evicts reach HBM through the write queue (docs/calibration.md).
    l2_write_through_when_full: bool = False
    #: Per-core GM rate factor for transfers whose GM address is not 512 B aligned:
    #: "32B对齐场景只能达到512B对齐场景的70%" (§2, A2 only).
    gm_unaligned_rate_factor: float = 0.7
    # -- The MTE issue model (docs/calibration.md "The MTE issue model"). --------------
    #: GM bytes of one MTE burst, and the grid a row is cut on: a row is moved as the
    #: bursts of the 512 B blocks it touches ("GM地址尽量512B对齐", A2: a 512 B aligned
    #: address gets the full bandwidth; the DataCopy best practice asks for rows whose
    #: bytes are 512 B aligned). A row that starts off the grid touches one block more
    #: than its length needs; that block costs a whole burst of HBM time. 0: no grid.
    mte_burst_bytes: int = 512
    #: Cycles an MTE spends issuing one DataCopy instruction (GM <-> local), before its
    #: bursts: fitted to the DataCopy best practice's U1 (49,152 copies of 128 B per AIV).
    mte_issue_cycles: float = 12.5
    #: Cycles an AIV's MTE takes per burst through L2 (hit or miss), and per burst that
    #: bypasses L2 (``CACHE_MODE_DISABLE``): the request rate the MTE sustains with its
    #: requests in flight (a latency over the requests in flight, Little's law; neither
    #: is published). A transfer takes the larger of its bursts at this rate and its bytes
    #: at the per-core rate. Fitted to the DataCopy best practice's U2 (64 rows of 128 B
    #: through L2) and U8 (128 rows of 128 B, L2 bypassed).
    mte_burst_cycles: float = 8.1
    mte_burst_bypass_cycles: float = 11.5
    #: The AIC's (GM -> L1, Nd2Nz included) burst cycles as a fraction of the AIV's:
    #: fitted to the DataCopy best practice's L7 (bypass, 128 B rows).
    aic_mte_burst_factor: float = 0.68
    #: Concurrent reads of the same GM bytes from HBM (the same transfer shape at the same
    #: address, by several cores at once) are served one at a time: together they get at
    #: most this bandwidth, B/s ("同地址访问冲突", DataCopy best practice 优化点4). Fitted to
    #: the best practice's U7. 0: no limit.
    same_address_bandwidth: float = 0.64e12
    #: UB banks (rows of 32 B interleave over them) and bank groups: 48 banks x 128 rows x
    #: 32 B in 16 groups of 3 on 2201 (§2 "UB banks (2201)").
    ub_banks: int = 48
    # -- The cube half of the AI core. Defaults are the A2/A3 values. --------
    #: [AICoreSpec] bt_size (bias table) and fb0..fb3_size (Fixpipe buffers), bytes (§1.1);
    #: 0 where the ini has no such key (910A, 310P).
    bt_size: int = 1024
    fb0_size: int = 2048
    fb1_size: int = 1024
    fb2_size: int = 2048
    fb3_size: int = 2048
    #: [AICoreSpec] support_fixpipe=1 (§1.1): the Fixpipe unit moves L0C out (A2/A3 only).
    support_fixpipe: bool = True
    #: [AICoreMemoryRates] l1_to_l0_a_rate, l1_to_l0_b_rate, l0_c_to_ub_rate (B/cycle, §1.1),
    #: kept as the ini has them; the timing uses the documented MTE1 rates below.
    l1_to_l0_a_rate: int = 512
    l1_to_l0_b_rate: int = 256
    l0_c_to_ub_rate: int = 256
    #: PIPE_MTE1 rates, B/cycle: LoadData / LoadDataWithTranspose L1 -> L0A 256 and -> L0B 128,
    #: L1 -> bias table 32 (§2.1 and §2: the 2201 documents, not the ini's 512/256).
    mte1_l0a_rate: int = 256
    mte1_l0b_rate: int = 128
    mte1_bt_rate: int = 32
    #: Fixpipe L0C -> L1, elements per cycle (float -> half/bf16 and quantisation, §2.1).
    fixpipe_elements_per_cycle: int = 64
    #: [AICoreSpec] cube_m_size / cube_n_size (16); and, per input dtype of Mmad, the k
    #: elements one cycle consumes for a 16 x 16 output fractal (§2.1: half/bf16 16x16x16,
    #: float 16x16x4, int8 16x16x32). A dtype missing here has no Mmad on this SoC.
    cube_m_size: int = 16
    cube_n_size: int = 16
    cube_k_per_cycle: tuple = (("float16", 16), ("bfloat16", 16), ("float32", 4), ("int8", 32))
    #: Fixed cost of one Mmad, one MTE1 load and one Fixpipe, cycles: the Δt / ΔT of the §2.1
    #: formulas, which are not published (§5) [R: taken equal to vec_head_cycles].
    mmad_head_cycles: int = 22
    mte1_head_cycles: int = 22
    fixpipe_head_cycles: int = 22
    #: The scalar unit's own work (npusim.ascendc.scalar; docs/calibration.md "Scalar unit"),
    #: cycles: once per core at kernel entry; per instruction issued to a pipe; per TQue
    #: AllocTensor/EnQue/DeQue/FreeTensor on top of its flag; per GlobalTensor operator[]
    #: (GM address arithmetic), plus the extra when the tensor has an L2 cache hint; per
    #: 64 B line and per 4-byte word of a tiling struct read from GM (GET_TILING_DATA).
    scalar_entry_cycles: float = 2780.0
    scalar_issue_cycles: float = 1.83
    scalar_queue_cycles: float = 4.0
    scalar_gm_offset_cycles: float = 1.83
    scalar_gm_hint_cycles: float = 11.8
    scalar_tiling_line_cycles: float = 100.0
    scalar_tiling_word_cycles: float = 1.0

    @property
    def freq_hz(self) -> float:
        """Core clock in Hz (cube_freq * 1e6); the AIV shares it on A2."""
        return self.cube_freq * 1e6

    @property
    def is_split(self) -> bool:
        """True on the split (separate AIC/AIV) architecture, A2/A3."""
        return self.cube_vector_combine == "split"

    @property
    def vector_block_num(self) -> int:
        """Cores a vector-only kernel's blockDim counts.

        vector_core_cnt (AIVs) on split A2/A3 (docs/reference/hardware.md §3,
        launch limits); ai_core_cnt on the coupled 910A/310P.
        """
        return self.vector_core_cnt if self.is_split else self.ai_core_cnt

    @property
    def ub_usable(self) -> int:
        """UB bytes reported by the tiling API's GetCoreMemSize(UB).

        910B and A3 reserve 256 B for kfc (docs/reference/hardware.md §1.7); the
        8 KiB Ascend C reservation (ascendc_reserved_ub) is not included.
        """
        if self.short_soc_version in ("Ascend910B", "Ascend910_93"):
            return self.ub_size - 256
        return self.ub_size

    @property
    def l1_usable(self) -> int:
        """L1 bytes reported by GetCoreMemSize(L1): 910B and A3 reserve 256 B for kfc
        (docs/reference/hardware.md §1.7, ``ASC_L1_SIZE = 512*1024 - 256``)."""
        if self.short_soc_version in ("Ascend910B", "Ascend910_93"):
            return self.l1_size - 256
        return self.l1_size

    @property
    def cube_block_num(self) -> int:
        """Cores a cube-only (AIC_ONLY) kernel's blockDim counts: cube_core_cnt (AICs) on
        split A2/A3, ai_core_cnt on the coupled 910A/310P (docs/reference/hardware.md §3)."""
        return self.cube_core_cnt if self.is_split else self.ai_core_cnt

    def cube_rate(self, dtype) -> int | None:
        """k elements per cycle of one 16 x 16 Mmad output fractal for input ``dtype``
        (None: no Mmad for that dtype on this SoC)."""
        return _cube_rates(self.cube_k_per_cycle).get(np.dtype(dtype))

    @property
    def ascendc_reserved_ub(self) -> int:
        """UB bytes reserved for some Ascend C APIs (docs/reference/hardware.md
        §1.7, documented for 2201), unless --cce-disable-asc-reserved-ubuf."""
        return 8192

    @property
    def max_event_id(self) -> int:
        """Number of SetFlag/WaitFlag event IDs (IDs 0..max_event_id-1).

        8 on 2201 and 4 on the first-generation 910 (docs/reference/hardware.md
        §3); 8 on 310P is [R].
        """
        return 4 if self.npu_arch == "1001" else 8

    @property
    def max_tque_buffers_per_position(self) -> int:
        """Buffers allocatable at once per TPosition (§3 TPipe/TQue).

        8 on 2201, 4 on 1001; 8 on 310P is [R].
        """
        return 4 if self.npu_arch == "1001" else 8

    @property
    def max_total_buffers(self) -> int:
        """Total TPipe buffers in one kernel (docs/reference/hardware.md §3)."""
        return 64

    @property
    def supports_bf16_vector(self) -> bool:
        """bf16 vector arithmetic: none on A2 (docs/reference/hardware.md §1.1),
        none on 910A/310P either."""
        return False

    @property
    def lib_api_workspace_size(self) -> int:
        """GetLibApiWorkSpaceSize in bytes: 16 MiB on 2201, else 2 MiB
        (docs/reference/hardware.md §3 Workspace, §1.7)."""
        return 16 * MIB if self.npu_arch == "2201" else 2 * MIB

    @property
    def max_block_dim(self) -> int:
        """Largest numBlocks a launch accepts (docs/reference/hardware.md §3)."""
        return 65535


# --- A2 base record: Ascend910B1 -------------------------------------------
# docs/reference/hardware.md §1.1 (verbatim ini, identical in INI-X).
_ASCEND910B1 = SocSpec(
    soc_version="Ascend910B1",
    short_soc_version="Ascend910B",
    aic_version="AIC-C-220",
    arch_type=4,
    npu_arch="2201",  # NpuArch=2201 in later toolkits (§5, §3)
    ai_core_cnt=24,
    cube_core_cnt=24,
    vector_core_cnt=48,
    ai_cpu_cnt=4,  # 8.1.RC1 value; one CANN 8.5 capture shows 6 (§5)
    memory_size=68719476736,  # 64 GiB
    l2_size=201326592,  # 192 MiB
    cube_freq=1850,
    vec_freq=None,  # no [VectorCoreSpec] in the 910B ini (§1.1)
    cube_vector_combine="split",
    core_type_list=("CubeCore", "VectorCore"),
    l0_a_size=65536,
    l0_b_size=65536,
    l0_c_size=131072,
    l1_size=524288,
    ub_size=196608,
    ubblock_size=32,
    ubbank_size=4096,
    ubbank_num=64,  # ini value; the 2201 doc describes 48 banks (§2, §5)
    ubbank_group_num=16,
    ddr_rate=32,
    ddr_read_rate=32,
    ddr_write_rate=32,
    l2_rate=110,
    l2_read_rate=110,
    l2_write_rate=86,
    ub_to_l2_rate=64,
    ub_to_ddr_rate=64,
    l1_to_ub_rate=128,
    ub_to_l1_rate=128,
    vc_ddr_rate=None,  # no [VectorCoreMemoryRates] (§1.1)
    vc_ub_size=None,
    memory_size_from_ini=True,
    # Official prose: "GM的带宽约为1.6TB/s" (§2).
    hbm_bandwidth=1.6e12,
    # §4.1 case 1: one AIV moving 8 KB per DataCopy reads 256 MiB in
    # 6208.8 µs of MTE2 time over 16384 iterations of two 8 KB DataCopies
    # (x, then y issued once x's bytes are through) = 701 cycles each at
    # 1.85 GHz. Each copy's own time is the issue (12.5) + its bytes at
    # ddr_read_rate (256 cycles), leaving 164 cycles of latency after the
    # second (benchmarks/calibrate_add.py, whose output this must equal).
    dma_latency_cycles=164,
    # §4.1 vector times: case 1 runs 16384 Adds of 4096 halves (32 repeats)
    # on one core in 761.65 µs = ~86 cycles each; case 3 runs ~85.3 Adds of
    # 16384 halves (128 repeats) per core in 12.845 µs = ~278 cycles each.
    # 86 = h + 32 r and 278 = h + 128 r give r = 2 cycles/repeat and
    # h = 22 cycles of head cost per instruction.
    vec_head_cycles=22,
    scalar_cycles=11,  # fit: Add case 0 (docs/calibration.md "Scalar unit")
    host_link_bandwidth=25e9,  # [R] PCIe-class host<->device link
    host_link_latency_us=10.0,  # [R]
    launch_overhead_us=3.0,  # [R] kernel launch fixed cost on the device
)

# --- Other A2 parts: the §1.2 diff table against Ascend910B1 --------------
_ASCEND910B2 = replace(
    _ASCEND910B1,
    soc_version="Ascend910B2",
    cube_freq=1800,
)
_ASCEND910B3 = replace(
    _ASCEND910B1,
    soc_version="Ascend910B3",
    ai_core_cnt=20, cube_core_cnt=20, vector_core_cnt=40,
    cube_freq=1800,
)
_ASCEND910B4 = replace(
    _ASCEND910B1,
    soc_version="Ascend910B4",
    ai_core_cnt=20, cube_core_cnt=20, vector_core_cnt=40,
    cube_freq=1500,
    memory_size=34359738368,  # 32 GiB
    l2_size=100663296,  # 96 MiB (ini; real L2 is 168 MiB per ops-nn, §1.2)
    hbm_bandwidth=0.8e12,  # [S] vendor-spec table (§2)
)

# --- A3 dies (Short_SoC_version Ascend910_93): §1.2 diff table -------------
# Values are per die; every field not changed here equals 910B1.
_A3_BASE = replace(_ASCEND910B1, short_soc_version="Ascend910_93")
_ASCEND910_9391 = replace(_A3_BASE, soc_version="Ascend910_9391")
_ASCEND910_9392 = replace(_A3_BASE, soc_version="Ascend910_9392")
_ASCEND910_9381 = replace(
    _A3_BASE,
    soc_version="Ascend910_9381",
    cube_freq=1800,
)
_ASCEND910_9382 = replace(
    _A3_BASE,
    soc_version="Ascend910_9382",
    cube_freq=1800,
)
_ASCEND910_9372 = replace(
    _A3_BASE,
    soc_version="Ascend910_9372",
    ai_core_cnt=20, cube_core_cnt=20, vector_core_cnt=40,
    cube_freq=1800,
)
_ASCEND910_9362 = replace(
    _A3_BASE,
    soc_version="Ascend910_9362",
    ai_core_cnt=20, cube_core_cnt=20, vector_core_cnt=40,
    cube_freq=1500,
    memory_size=34359738368,  # 32 GiB
    l2_size=176160768,  # 168 MiB
    # [R] The §2 vendor table gives 0.8 TB/s only for 910B4 and 1.6 TB/s for
    # "A3 die"; this die has the 910B4-class configuration (20 cores,
    # 1500 MHz, 32 GiB), so we use the 910B4 figure.
    hbm_bandwidth=0.8e12,
)

# --- First-generation 910 base record: Ascend910A --------------------------
# docs/reference/hardware.md §1.3 (verbatim ini). Coupled architecture: cube and
# vector share one AI Core, so the ini has no cube_core_cnt key (0 here) and
# vector_core_cnt=0.
_ASCEND910A = SocSpec(
    soc_version="Ascend910A",
    short_soc_version="Ascend910",
    aic_version="AIC-C-100",
    arch_type=3,
    npu_arch="1001",  # [R]
    ai_core_cnt=32,
    cube_core_cnt=0,  # key absent from the ini
    vector_core_cnt=0,
    ai_cpu_cnt=4,
    # memory_size is empty in the ini; 32 GiB is our substitute (HBM size of
    # the first-generation 910, [R]).
    memory_size=34359738368,
    l2_size=33554432,  # 32 MiB
    cube_freq=1000,
    vec_freq=None,  # no [VectorCoreSpec]
    cube_vector_combine=None,  # key absent from the ini
    core_type_list=("AICore",),
    l0_a_size=65536,
    l0_b_size=65536,
    l0_c_size=262144,
    l1_size=1048576,
    ub_size=262144,
    ubblock_size=32,
    ubbank_size=4096,
    ubbank_num=64,
    ubbank_group_num=16,
    ddr_rate=32,
    ddr_read_rate=32,
    ddr_write_rate=32,
    l2_rate=110,
    l2_read_rate=110,
    l2_write_rate=86,
    ub_to_l2_rate=64,
    ub_to_ddr_rate=64,
    l1_to_ub_rate=128,
    ub_to_l1_rate=128,
    vc_ddr_rate=None,
    vc_ub_size=None,
    memory_size_from_ini=False,
    hbm_bandwidth=1.2e12,  # [R]
    gm_unaligned_rate_factor=1.0,  # the 512 B effect is documented for A2 only (§2)
    ub_banks=64,  # ini ubbank_num; the 48-bank layout is documented for 2201 only
    # no bt_size/fb*_size/support_fixpipe keys in the ini (§1.3, §1.4); Mmad takes half and
    # int8 only (Mmad page, "Atlas 训练系列产品 / 推理系列产品" type table)
    bt_size=0, fb0_size=0, fb1_size=0, fb2_size=0, fb3_size=0, support_fixpipe=False,
    cube_k_per_cycle=(("float16", 16), ("int8", 32)),
    dma_latency_cycles=164,  # as 910B1 (derivation there)
    vec_head_cycles=22,  # as 910B1 (derivation there)
    scalar_cycles=11,  # fit: Add case 0 (docs/calibration.md "Scalar unit")
    host_link_bandwidth=25e9,  # [R]
    host_link_latency_us=10.0,  # [R]
    launch_overhead_us=3.0,  # [R]
)

# §1.3: the other first-generation variants differ only in cores and clock.
_ASCEND910PROA = replace(
    _ASCEND910A,
    soc_version="Ascend910ProA",
    cube_freq=1100,
)
_ASCEND910PROB = replace(
    _ASCEND910A,
    soc_version="Ascend910ProB",
    ai_core_cnt=30,
    cube_freq=1150,
)
_ASCEND910PREMIUMA = replace(
    _ASCEND910A,
    soc_version="Ascend910PremiumA",
    cube_freq=1220,
)

# --- 310P base record: Ascend310P3 -----------------------------------------
# docs/reference/hardware.md §1.4 (verbatim ini). Coupled AI Cores plus separate
# Vector Cores with their own [VectorCoreSpec]/[VectorCoreMemoryRates].
_ASCEND310P3 = SocSpec(
    soc_version="Ascend310P3",
    short_soc_version="Ascend310P",
    aic_version="AIC-M-200",
    arch_type=1,
    npu_arch="2002",  # [R]
    ai_core_cnt=8,
    cube_core_cnt=0,  # key absent from the ini
    vector_core_cnt=7,
    ai_cpu_cnt=16,
    memory_size=24000000000,
    l2_size=16777216,  # 16 MiB
    cube_freq=1060,
    vec_freq=1000,
    cube_vector_combine=None,  # key absent from the ini
    core_type_list=("AICore", "VectorCore"),
    l0_a_size=65536,
    l0_b_size=65536,
    l0_c_size=262144,
    l1_size=1048576,
    ub_size=262144,
    ubblock_size=32,
    ubbank_size=4096,
    ubbank_num=64,
    ubbank_group_num=16,
    ddr_rate=17,
    ddr_read_rate=17,
    ddr_write_rate=17,
    l2_rate=114,
    l2_read_rate=114,
    l2_write_rate=114,
    ub_to_l2_rate=114,
    ub_to_ddr_rate=17,
    l1_to_ub_rate=128,
    ub_to_l1_rate=256,
    l0_c_to_ub_rate=512,  # §1.4
    vc_ddr_rate=9,
    vc_ub_size=262144,
    memory_size_from_ini=True,
    hbm_bandwidth=204.8e9,  # [R]
    gm_unaligned_rate_factor=1.0,  # the 512 B effect is documented for A2 only (§2)
    ub_banks=64,  # ini ubbank_num; the 48-bank layout is documented for 2201 only
    # no bt_size/fb*_size/support_fixpipe keys in the ini (§1.3, §1.4); Mmad takes half and
    # int8 only (Mmad page, "Atlas 训练系列产品 / 推理系列产品" type table)
    bt_size=0, fb0_size=0, fb1_size=0, fb2_size=0, fb3_size=0, support_fixpipe=False,
    cube_k_per_cycle=(("float16", 16), ("int8", 32)),
    dma_latency_cycles=164,  # as 910B1 (derivation there)
    vec_head_cycles=22,  # as 910B1 (derivation there)
    scalar_cycles=11,  # fit: Add case 0 (docs/calibration.md "Scalar unit")
    host_link_bandwidth=25e9,  # [R]
    host_link_latency_us=10.0,  # [R]
    launch_overhead_us=3.0,  # [R]
)

# §1.4: "Ascend310P1 differs as follows: 10 AI cores, 8 vector cores,
# 8 AI CPUs" (vir_type_list also differs; it is not modelled).
_ASCEND310P1 = replace(
    _ASCEND310P3,
    soc_version="Ascend310P1",
    ai_core_cnt=10,
    vector_core_cnt=8,
    ai_cpu_cnt=8,
)

SOC_PRESETS: dict[str, SocSpec] = {
    spec.soc_version: spec
    for spec in (
        _ASCEND910B1,
        _ASCEND910B2,
        _ASCEND910B3,
        _ASCEND910B4,
        _ASCEND910_9391,
        _ASCEND910_9392,
        _ASCEND910_9381,
        _ASCEND910_9382,
        _ASCEND910_9372,
        _ASCEND910_9362,
        _ASCEND910A,
        _ASCEND910PROA,
        _ASCEND910PROB,
        _ASCEND910PREMIUMA,
        _ASCEND310P1,
        _ASCEND310P3,
    )
}

DEFAULT_SOC = "Ascend910B1"


def list_socs() -> list[str]:
    """Return the names of all presets, sorted."""
    return sorted(SOC_PRESETS)


def get_soc(name: str | SocSpec | None = None) -> SocSpec:
    """Return the preset called ``name``.

    ``None`` selects :data:`DEFAULT_SOC`; a :class:`SocSpec` is returned
    unchanged. An unknown name raises :class:`UnknownSocError`.
    """
    if name is None:
        name = DEFAULT_SOC
    if isinstance(name, SocSpec):
        return name
    try:
        return SOC_PRESETS[name]
    except KeyError:
        raise UnknownSocError(
            f"unknown SoC {name!r}; known SoCs: {', '.join(list_socs())}"
        ) from None
