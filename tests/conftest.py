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
