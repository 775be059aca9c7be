"""A kernel author's path: a kernel of one's own on an acl stream (ACLRT_LAUNCH_KERNEL,
<<<>>>), as an aclnn operator (aclnn.custom.CustomOp), in the npusim command and in sweeps;
acl contexts, get_soc_name, get_run_mode; the checker's GM-overlap and eventID messages."""
import numpy as np
import pytest

import aclnn
import npusim
from aclnn import acl, runtime
from aclnn.custom import ACLRT_LAUNCH_KERNEL, CustomOp, kernel_call
from aclnn_helpers import load_example
from npusim import GlobalMemory, get_soc, run_kernel
from npusim.ascendc import *  # noqa: F403
from npusim.errors import GmAccessError, SyncError
from npusim_tools import cli, registry

LAUNCH = load_example("custom_kernel_launch")
OP = load_example("custom_aclnn_op")


@pytest.fixture(autouse=True)
def fresh_runtime():
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture
def device():
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    yield stream


def _to_device(host):
    ptr, ret = acl.rt.malloc(host.nbytes, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == 0
    assert acl.rt.memcpy(ptr, host.nbytes, acl.util.numpy_to_ptr(host), host.nbytes,
                         aclnn.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    return ptr


def _from_device(ptr, like):
    out = np.empty_like(like)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), out.nbytes, ptr, out.nbytes,
                         aclnn.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    return out


# -- a kernel on a stream -----------------------------------------------------------------------
def test_the_launch_example_adds_and_records_its_profile():
    z, expected, profile = LAUNCH.launch_on_stream(blockDim=4, totalLength=4 * 2 * 1024,
                                                   tileLength=1024)
    np.testing.assert_array_equal(z, expected)          # half + half, one rounding: exact
    assert profile.op_name == "add_custom" and profile.block_dim == 4


def test_aclrt_launch_kernel_and_chevrons_land_in_the_device_records(device, tmp_path):
    n = 2 * 1024
    x, y = np.arange(n, dtype=np.float16) % 7, np.full(n, 0.5, np.float16)
    px, py, pz = _to_device(x), _to_device(y), _to_device(np.zeros(n, np.float16))
    assert ACLRT_LAUNCH_KERNEL(LAUNCH.add_custom)(2, device, px, py, pz, n, 1024) == 0
    assert kernel_call(LAUNCH.add_custom, name="AddCustom")[2, None, device](
        px, py, pz, n, 1024) == 0
    dev = runtime.current_device()
    assert dev.profiles == []                            # asynchronous: nothing ran yet
    assert acl.rt.synchronize_stream(device) == 0
    np.testing.assert_array_equal(_from_device(pz, x), x + y)
    kernels = [t for t in dev.tasks if t.kind == "KERNEL"]
    assert [t.name for t in kernels] == ["add_custom", "AddCustom"]
    assert all(t.profile is not None and t.error is None for t in kernels)
    rows = npusim.profiling.op_summary_rows([dev])
    assert {"add_custom", "AddCustom"} <= {r["OP Type"] for r in rows}


@pytest.mark.parametrize("block_dim", [0, 65536, 2.0, True])
def test_a_launch_with_a_bad_blockdim_is_refused(device, block_dim):
    assert ACLRT_LAUNCH_KERNEL(LAUNCH.add_custom)(block_dim, device) == 100000
    assert "blockDim must be an int in [1, 65535]" in acl.get_recent_err_msg()
    assert runtime.current_device().tasks == []


def test_launch_argument_errors(device):
    launch = ACLRT_LAUNCH_KERNEL(LAUNCH.add_custom)
    assert launch(1, 0x123456) == 107000 and "not a live stream" in acl.get_recent_err_msg()
    assert launch(1, "s") == 100000 and "stream must be an int" in acl.get_recent_err_msg()
    assert ACLRT_LAUNCH_KERNEL(42)(1, device) == 100000
    assert "kernel must be a function" in acl.get_recent_err_msg()
    assert kernel_call(LAUNCH.add_custom)[1, 5, device]() == 100000
    assert "l2ctrl is reserved" in acl.get_recent_err_msg()
    with pytest.raises(TypeError, match="blockDim, l2ctrl, stream"):
        kernel_call(LAUNCH.add_custom)[1, device]
    assert acl.rt.reset_device(0) == 0
    assert launch(1, None) == 107002                     # no device set


def test_kernel_errors_surface_at_synchronize(device):
    n = 1024
    px, py, pz = (_to_device(np.zeros(n, np.float16)) for _ in range(3))
    # an unaligned tile: DataCopy of 100 halves is not whole 32 B blocks -> checker
    assert ACLRT_LAUNCH_KERNEL(LAUNCH.add_custom)(1, device, px, py, pz, n, 1000) == 0
    assert acl.rt.synchronize_stream(device) == 507015
    msg = acl.get_recent_err_msg()
    assert "core 0" in msg and "custom_kernel_launch.py:" in msg
    # a bug in the kernel's Python (too few arguments) is the stream's error too
    assert ACLRT_LAUNCH_KERNEL(LAUNCH.add_custom)(1, device, px, py) == 0
    assert acl.rt.synchronize_stream(device) == 507015
    assert "the kernel raised TypeError" in acl.get_recent_err_msg()


# -- a kernel and its tiling as an aclnn operator -------------------------------------------------
def test_the_operator_example_matches_its_golden():
    z, expected, tiling = OP.call_operator(n=4096, alpha=-1.5, tileLength=1024)
    np.testing.assert_array_equal(z, expected)
    # 4096 elements in 256-element shares over 48 cores: 16 blocks of 256
    assert (tiling.blockDim, tiling.blockLength, tiling.lastLength) == (16, 256, 256)


def _tensor(host, acl_dtype=aclnn.ACL_FLOAT):
    ptr = _to_device(host)
    shape = list(host.shape)
    return aclnn.aclCreateTensor(shape, acl_dtype, list(aclnn.contiguous_strides(shape)), 0,
                                 aclnn.ACL_FORMAT_ND, shape, ptr)


def test_custom_op_first_phase_errors_name_the_argument(device):
    first, second = OP.aclnnScaledAddGetWorkspaceSize, OP.aclnnScaledAdd
    x, y, z = (_tensor(np.zeros(512, np.float32)) for _ in range(3))
    ws, ex, ret = first(None, y, 0.5, 1024, z)
    assert (ws, ex, ret) == (0, None, 161001) and "argument x" in acl.get_recent_err_msg()
    assert first(x, y, 0.5, z)[2] == 161002
    assert "takes 5 arguments (x, y, alpha, tileLength, z), got 4" in acl.get_recent_err_msg()
    i32 = _tensor(np.zeros(512, np.int32), aclnn.ACL_INT32)
    assert first(x, i32, 0.5, 1024, z)[2] == 161002
    assert "y has dtype ACL_INT32; ScaledAdd takes float32, float16" in acl.get_recent_err_msg()
    short = _tensor(np.zeros(256, np.float32))
    assert first(x, y, 0.5, 1024, short)[2] == 161002
    assert "z has shape [256]" in acl.get_recent_err_msg()
    assert first(x, y, "a", 1024, z)[2] == 161002
    assert "attribute alpha must be a number" in acl.get_recent_err_msg()
    assert first(x, y, 0.5, 1000, z)[2] == 161002          # the tiling's ValueError
    assert "tileLength must be a positive multiple of 256" in acl.get_recent_err_msg()
    odd = [_tensor(np.zeros(300, np.float32)) for _ in range(3)]
    assert first(*odd[:2], 0.5, 1024, odd[2])[2] == 161002   # the check's ValueError
    assert "multiple of 256" in acl.get_recent_err_msg()
    ws, ex, ret = first(x, y, 0.5, 1024, z)
    assert (ws, ret) == (0, 0)
    assert second(0, 0, ex, device) == 0
    assert second(0, 0, ex, device) == 161002               # single-use executor
    assert "already run and released" in acl.get_recent_err_msg()
    _, other, _ = aclnn.aclnnInplaceAddGetWorkspaceSize(x, y, aclnn.aclCreateScalar(
        1.0, aclnn.ACL_FLOAT))
    assert second(0, 0, other, device) == 161002
    assert "built by aclnnInplaceAdd" in acl.get_recent_err_msg()


def test_custom_op_workspace_and_soc(tmp_path):
    seen = {}

    def kernel(x, z, workspace, tiling):
        seen["workspace"] = workspace

    def tiling(soc, shapes, dtypes, attrs):
        return type("T", (), {"blockDim": 1, "workspaceSize": 4096})()
    op = CustomOp("WsCustom", kernel=kernel, tiling=tiling, inputs=("x",), outputs=("z",),
                  socs=("Ascend910B",))
    cfg = tmp_path / "acl.json"
    cfg.write_text('{"npusim": {"soc": "Ascend910A"}}')
    assert acl.init(str(cfg)) == 0 and acl.rt.set_device(0) == 0
    x, z = (_tensor(np.zeros(8, np.float32)) for _ in range(2))
    assert op.get_workspace_size(x, z)[2] == 161002
    assert "not supported on Ascend910A: it runs on Ascend910B" in acl.get_recent_err_msg()
    acl.rt.reset_device(0)
    acl.finalize()
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    x, z = (_tensor(np.zeros(8, np.float32)) for _ in range(2))
    ws, ex, ret = op.get_workspace_size(x, z)
    assert (ws, ret) == (4096, 0)
    assert op.run(0, 4096, ex, None) == 161001                  # workspace is nullptr
    wptr, _ = acl.rt.malloc(ws, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
    assert op.run(wptr, ws, ex, None) == 0
    assert acl.rt.synchronize_device() == 0 and seen["workspace"] == wptr


def test_a_custom_op_runs_through_the_command_and_sweeps(capsys, tmp_path):
    path = str(OP.__file__)
    assert cli.main(["run", "--plugin", path, "ScaledAdd", "--shape", "4096"]) == 0
    out = capsys.readouterr().out
    assert "aclnnScaledAdd shape [4096] float32" in out and "golden check: ok" in out
    csv_path = tmp_path / "s.csv"
    assert cli.main(["sweep", "--plugin", path, "ScaledAdd", "--shape", "8192", "--cores", "1,2",
                     "--axis", "tileLength=256,1024", "--serial", "--no-progress",
                     "--csv", str(csv_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:2] == ["tileLength", "cores"]
    assert cli.main(["sweep", "ScaledAdd", "--plugin", path, "--cores", "1,2",
                     "--axis", "nope=1,2"]) == 2
    assert "has no attribute nope" in capsys.readouterr().err
    assert cli.main(["run", "--plugin", "no/such.py", "ScaledAdd"]) == 2
    assert "no such file" in capsys.readouterr().err


# -- the command: EmbeddingDenseBackward on Ascend910A, InplaceAdd --------------------------------
def test_the_command_runs_edb_on_ascend910a_and_inplace_add(capsys):
    assert cli.main(["run", "EmbeddingDenseBackward", "--soc", "Ascend910A", "--shape",
                     "512x64"]) == 0
    out = capsys.readouterr().out
    assert "on Ascend910A" in out and "golden check: ok" in out and "EmbeddingDenseGrad" in out
    assert cli.main(["run", "EmbeddingDenseBackward", "--soc", "Ascend910A", "--dtype",
                     "bf16"]) == 2
    assert "does not take bfloat16 on Ascend910A" in capsys.readouterr().err
    assert cli.main(["run", "InplaceAdd", "--shape", "4096", "--dtype", "fp16"]) == 0
    assert "aclnnInplaceAdd shape [4096] float16" in capsys.readouterr().out
    case = registry.make_case(registry.get("InplaceAdd"), (2048,), "float32")
    res = registry.run_kernel_level(registry.get("InplaceAdd"), case, cores=2, tile=512)
    np.testing.assert_array_equal(res.outputs["selfRef"],
                                  case.tensors["selfRef"] + case.tensors["other"])


# -- sweeps over an axis of one's own ------------------------------------------------------------
def _runner(point):
    # T = 100 / cores * (1 + cols / 64) µs; roofline only for cols == 64
    rec = {"duration_us": 100.0 / point["cores"] * (1 + point["cols"] / 64)}
    if point["cols"] == 64:
        rec["hbm_floor_us"] = 10.0
    return rec


def test_a_sweep_over_cores_and_a_keyword_of_ones_own():
    result = npusim.sweep(_runner, cores=[2, 4, 8], cols=[64, 128], executor="serial")
    speed = {(r["cores"], r["cols"]): r["speedup"] for r in result.records}
    # against the first point of each series (2 cores), not across cols
    assert speed == {(2, 64): 1.0, (4, 64): 2.0, (8, 64): 4.0,
                     (2, 128): 1.0, (4, 128): 2.0, (8, 128): 4.0}
    assert result.table().splitlines()[0].split()[:2] == ["cols", "cores"]
    fig = result.plot()
    ax_t, ax_s = fig.axes
    labels = [line.get_label() for line in ax_t.lines]
    # one line per series, the roofline only where the records have it
    assert labels == ["simulated (cols=64)", "HBM roofline (cols=64)", "simulated (cols=128)"]
    assert [list(line.get_ydata()) for line in ax_s.lines[:1]] == [[1.0, 2.0, 4.0]]
    ax = result.plot(x="cols").axes[0]
    assert ax.get_xlabel() == "cols" and len([ln for ln in ax.lines
                                              if ln.get_label().startswith("simulated")]) == 3


def _fails(point):
    raise RuntimeError(f"no memory for {point['cores']} cores")


def test_plot_of_a_sweep_whose_every_point_failed_shows_the_first_error():
    result = npusim.sweep(_fails, cores=[1, 2], executor="serial")
    with pytest.raises(ValueError, match=r"all 2 points failed; the first \(cores=1\): "
                                         r"RuntimeError: no memory for 1 cores"):
        result.plot()


def test_the_launch_example_sweeps_cores_and_tiles():
    result = npusim.sweep(LAUNCH.sweep_point, cores=[1, 4], tile=[1024, 4096], executor="serial")
    assert not result.errors
    by = {(r["cores"], r["tile"]): r for r in result.records}
    for tile in (1024, 4096):
        assert by[(4, tile)]["speedup"] == pytest.approx(by[(1, tile)]["duration_us"]
                                                         / by[(4, tile)]["duration_us"])
    assert len(result.plot().axes) == 2


# -- acl contexts, SoC name, run mode -----------------------------------------------------------
def test_contexts_soc_name_and_run_mode(tmp_path):
    assert acl.get_soc_name() == npusim.DEFAULT_SOC
    assert acl.rt.get_run_mode() == (aclnn.ACL_HOST, 0) == (1, 0)
    cfg = tmp_path / "acl.json"
    cfg.write_text('{"npusim": {"soc": "Ascend910B4", "device_count": 2}}')
    assert acl.init(str(cfg)) == 0
    assert acl.get_soc_name() == "Ascend910B4"
    assert acl.rt.get_context() == (0, 107002)
    assert acl.rt.create_context(5) == (0, 107001)
    ctx, ret = acl.rt.create_context(1)
    assert ret == 0 and acl.rt.get_context() == (ctx, 0) and acl.rt.get_device() == (1, 0)
    assert acl.rt.set_device(0) == 0
    default0, _ = acl.rt.get_context()
    assert default0 != ctx and acl.rt.get_device() == (0, 0)
    assert acl.rt.set_context(ctx) == 0 and acl.rt.get_device() == (1, 0)
    # the created context's own default stream: a NULL stream means it while it is current
    assert runtime.resolve_stream(None) is not runtime.current_device().default_stream
    assert acl.rt.set_current_context(default0) == 0 and acl.rt.get_device() == (0, 0)
    assert acl.rt.destroy_context(default0) == 100000
    assert "only a context made by create_context" in acl.get_recent_err_msg()
    assert acl.rt.destroy_context(ctx) == 0
    assert acl.rt.destroy_context(ctx) == 100000 and acl.rt.set_context(ctx) == 100000
    assert acl.rt.set_context(None) == 100000 and acl.rt.destroy_context("c") == 100000
    assert acl.rt.get_context() == (default0, 0)
    assert acl.finalize() == 0


# -- checker messages ---------------------------------------------------------------------------
def _overlap_kernel(x, z, n, scale):
    per = n // GetBlockNum()
    pipe = TPipe()
    buf = TBuf()
    pipe.InitBuffer(buf, per * 4)
    t = buf.Get(float32)
    xg, zg = GlobalTensor(float32), GlobalTensor(float32)
    xg.SetGlobalBuffer(x + GetBlockIdx() * per * 4, per)
    zg.SetGlobalBuffer(z + GetBlockIdx() * per * scale, per)
    DataCopy(t, xg, per)
    SetFlag(HardEvent.MTE2_MTE3, 0)
    WaitFlag(HardEvent.MTE2_MTE3, 0)
    DataCopy(zg, t, per)


def _run(kernel, blocks, *args, soc="Ascend910B1"):
    s = get_soc(soc)
    gm = GlobalMemory(s.memory_size)
    bufs = [gm.malloc(1 << 16) for _ in range(2)]
    return run_kernel(kernel, blocks, (*bufs, *args), soc=s, gm=gm)


def test_gm_overlap_names_both_cores_and_lines_and_spots_elements_used_as_bytes():
    with pytest.raises(GmAccessError) as info:
        _run(_overlap_kernel, 4, 1024, 1)        # block offsets in elements, not bytes
    msg = str(info.value)
    line = f"test_custom_kernels.py:{_overlap_kernel.__code__.co_firstlineno + 12}"
    assert msg.startswith(f"[GM] core 1, PIPE_MTE3, DataCopy at {line}: blocks 0 and 1 ")
    assert (f"core 0 with DataCopy on PIPE_MTE3 at {line} and core 1 with DataCopy on "
            f"PIPE_MTE3 at {line}") in msg
    assert "start 256 B apart but each writes 1024 B, 4 times more" in msg
    assert "element counts used as bytes" in msg
    with pytest.raises(GmAccessError) as info:
        _run(_overlap_kernel, 4, 1024, 2)        # 512 B apart, 1024 B each: 2 x, also a hint
    assert "2 times more" in str(info.value)
    _run(_overlap_kernel, 4, 1024, 4)            # bytes: no overlap


def test_a_waitflag_on_an_eventid_no_setflag_used_is_named():
    def kernel(x, z):
        SetFlag(HardEvent.V_MTE3, 2)
        WaitFlag(HardEvent.V_MTE3, 3)
    with pytest.raises(SyncError, match=r"WaitFlag<V_MTE3>\(3\) waits for eventID 3, which no "
                                        r"SetFlag<V_MTE3> has set; the SetFlag<V_MTE3> waiting "
                                        r"for its WaitFlag used eventID 2 \(at "
                                        r"test_custom_kernels.py:\d+\)"):
        _run(kernel, 1)


def test_reserved_eventids_are_refused_with_a_tpipe():
    def kernel(x, z, event_id):
        TPipe()
        SetFlag(HardEvent.MTE2_V, event_id)
        WaitFlag(HardEvent.MTE2_V, event_id)
    for event_id in (6, 7):
        with pytest.raises(SyncError, match=f"eventID {event_id} is reserved for the TPipe's own "
                                            "synchronisation on Ascend910B1.*FetchEventID"):
            _run(kernel, 1, event_id)
    _run(kernel, 1, 5)
    _run(kernel, 1, 3, soc="Ascend910A")         # 4 IDs there, none reserved

    def static(x, z):                            # no TPipe: the kernel owns every ID
        SetFlag(HardEvent.MTE2_V, 7)
        WaitFlag(HardEvent.MTE2_V, 7)
    _run(static, 1)
