"""Shared fixtures: a fresh ACL runtime on an Ascend910B1 with one stream."""
import pytest
from hypothesis import settings

from aclnn import runtime

from aclnn_helpers import open_stream


@pytest.fixture
def stream(tmp_path):
    """acl.init (Ascend910B1) + set_device(0) + create_stream; the runtime is reset after."""
    yield open_stream(tmp_path)
    runtime.reset()


@pytest.fixture
def replay_each_time(monkeypatch):
    """Replay every launch, even one whose records an earlier replay had
    (``npusim.timing.REPLAY_MEMO`` off): for tests that compare replays of the same
    records under different settings of the replay itself."""
    from npusim import timing
    monkeypatch.setattr(timing, "REPLAY_MEMO", False)


# Property tests draw the same examples on every run, so that the suite's verdict does not
# depend on the run; `pytest --hypothesis-seed=N` (with derandomize off in a profile of
# your own) explores other examples.
settings.register_profile("reproducible", derandomize=True)
settings.load_profile("reproducible")


@pytest.fixture
def scalar_issue_off(monkeypatch):
    """Record without the scalar unit's issue, entry, queue and address work
    (npusim/ascendc/scalar.py): for tests whose expected records, timelines or cycle counts
    were stored or derived before it, and which check something else."""
    from npusim.ascendc import scalar
    from npusim.soc import SOC_PRESETS
    monkeypatch.setattr(scalar, "CHARGE", False)
    # and a UB GetValue/SetValue at its former 1 cycle, on the preset objects themselves
    # (modules hold them from import time; SocSpec is frozen, hence object.__setattr__)
    kept = {name: spec.scalar_cycles for name, spec in SOC_PRESETS.items()}
    for spec in SOC_PRESETS.values():
        object.__setattr__(spec, "scalar_cycles", 1)
    yield
    for name, value in kept.items():
        object.__setattr__(SOC_PRESETS[name], "scalar_cycles", value)


@pytest.fixture(scope="module")
def pyasc_on_npusim():
    """For one test module: pyasc's launches run on npusim (Ascend910B1, pyasc's Model
    backend). The modules that use it skip first when pyasc is not installed."""
    import asc.runtime.config as config

    import npusim.pyasc as npusim_pyasc
    npusim_pyasc.enable(soc="Ascend910B1")
    config.set_platform(config.Backend.Model)
    yield
    npusim_pyasc.disable()
