"""The rate sharing's shortcuts (npusim.timing._Memory._fill) leave every replay as it was:
a replay that gives up the kept sharings (too few come back) and the HBM use of one
repeated weight taken from its (weight, count) sum are the same to the bit as the plain
computation."""
import random

from npusim import timing
from kernel_helpers import assert_same_timing
from test_scalar_paths_unchanged import RUNNERS, _capture


def test_a_replay_that_gives_up_the_kept_sharings_is_unchanged(monkeypatch):
    seen = _capture(monkeypatch)
    RUNNERS["sort-merge"]("sort-merge", seen)
    blocks, soc, kw = seen[-1]
    monkeypatch.setattr(timing, "REPLAY_MEMO", False)
    monkeypatch.setattr(timing, "FILL_MEMO", False)
    ref = timing.simulate(blocks, soc, **kw)
    monkeypatch.setattr(timing, "FILL_MEMO", True)
    given_up = []
    init = timing._Memory.__init__

    def spy(self, *a, **k):
        init(self, *a, **k)
        given_up.append(self)
    monkeypatch.setattr(timing._Memory, "__init__", spy)
    # a trial of 4 computed sharings, with 2 found kept by then or given up: its first
    # sharings are all new
    monkeypatch.setattr(timing, "_FILL_TRIAL", 4)
    assert_same_timing(timing.simulate(blocks, soc, **kw), ref)
    assert given_up and not given_up[-1].memo


def test_the_sum_of_one_repeated_weight_is_the_sum_in_flow_order():
    rng = random.Random(0)
    for _ in range(200):
        n_groups = rng.randint(1, 4)
        weights = [rng.choice([1.0, 1 + rng.random() * 1e-3, 0.75]) for _ in range(n_groups)]
        groups = [[0.0, 1.0, w, 1.0, True, 0, 0.0, rng.random() < 0.7, 1.0, 0.0, None]
                  for w in weights]
        heavy = [rng.choice(groups) for _ in range(rng.randint(1, 60))]
        for g in groups:
            g[timing._GN] = sum(h is g for h in heavy)
        hgroups = [g for g in groups if g[timing._GN]]
        plain = 0.0
        for g in heavy:
            if g[timing._GON]:
                plain += g[timing._GW1]
        got = timing._heavy_sum(heavy, hgroups)
        assert got == plain and got.hex() == plain.hex()
