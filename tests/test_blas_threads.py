"""A launch runs BLAS on one thread and gives the user's setting back (npusim/blas_threads.py)."""
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from npusim import GlobalMemory, get_soc, run_kernel

SOC = get_soc("Ascend910B1")


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def _threads_inside_a_launch():
    seen = []
    run_kernel(lambda: seen.append(_blas_threads()), 1, (), soc=SOC, gm=GlobalMemory(1 << 20))
    return seen[0]


@pytest.fixture
def two_threads():
    if not _blas_threads():
        pytest.skip("no BLAS library that threadpoolctl controls")
    with threadpool_limits(limits=2, user_api="blas"):      # the user's own setting
        assert set(_blas_threads()) == {2}
        yield


def test_one_thread_inside_a_launch_and_the_users_setting_after(two_threads, monkeypatch):
    monkeypatch.delenv("NPUSIM_BLAS_THREADS", raising=False)
    assert set(_threads_inside_a_launch()) == {1}
    assert set(_blas_threads()) == {2}


def test_the_environment_switch(two_threads, monkeypatch):
    monkeypatch.setenv("NPUSIM_BLAS_THREADS", "default")
    assert set(_threads_inside_a_launch()) == {2}
    monkeypatch.setenv("NPUSIM_BLAS_THREADS", "3")
    assert set(_threads_inside_a_launch()) == {3}
    assert set(_blas_threads()) == {2}
    monkeypatch.setenv("NPUSIM_BLAS_THREADS", "zero")
    with pytest.raises(ValueError, match="NPUSIM_BLAS_THREADS"):
        _threads_inside_a_launch()
    assert set(_blas_threads()) == {2}
