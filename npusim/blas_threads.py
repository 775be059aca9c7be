"""The simulator's BLAS calls run on one thread (threadpoolctl), during launches only.

Why. The cube's Mmad multiplies a tile's fractal steps in float64
(:mod:`npusim.ascendc.cube.step_sums`): thousands of matrix products of a megabyte or
two, each too small to gain from threads. OpenBLAS's default (a thread per core)
spins its threads up and down for each of them; on a 2-core host that another process keeps
busy, a 1024 x 2816 x 1024 cube kernel took 23 times as long as with one thread
(benchmarks/bench_blas_threads.py prints both figures, and checks that the results are
the same bytes: OpenBLAS shares a product's rows and columns among its threads, not the
sums along k).

What. :func:`launch_blas_threads` is a context manager around each kernel launch
(:func:`npusim.launch.run_kernel`): it limits the BLAS libraries loaded in the process
(those threadpoolctl finds: OpenBLAS, MKL, BLIS...) to ``NPUSIM_BLAS_THREADS`` threads, 1
unless the environment says otherwise, and gives back the previous setting when the launch
ends, so the user's own numpy work outside launches keeps its threads. Nested launches
limit once and restore when the outermost ends; launches from several threads take the
simulator's one lock (:data:`npusim.runlock.LOCK`), so they never overlap.

Switch. ``NPUSIM_BLAS_THREADS=n`` (a positive integer): n threads during launches;
``NPUSIM_BLAS_THREADS=default``: leave BLAS as the process has it. Read at each launch.

Raises:
    ValueError: ``NPUSIM_BLAS_THREADS`` is neither a positive integer nor ``default``.
"""
from __future__ import annotations

import contextlib
import os

from npusim.runlock import LOCK

__all__ = ["launch_blas_threads", "blas_threads_setting"]

_depth = 0            # launches inside the limit (nested)
_restore = None       # threadpoolctl's limiter of the outermost launch
_controller = None    # created at the first launch: it scans the loaded libraries (~7 ms)


def blas_threads_setting() -> int | None:
    """The threads BLAS gets during a launch: ``NPUSIM_BLAS_THREADS`` (default 1), or None
    for ``default`` (no limit)."""
    value = os.environ.get("NPUSIM_BLAS_THREADS", "1").strip().lower()
    if value == "default":
        return None
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"NPUSIM_BLAS_THREADS={value!r}: a positive integer or 'default'")
    return int(value)


@contextlib.contextmanager
def launch_blas_threads():
    """Limit BLAS to :func:`blas_threads_setting` threads for the ``with`` body (the module
    docstring); a no-op for ``default``."""
    global _depth, _restore, _controller
    limit = blas_threads_setting()
    if limit is None:
        yield
        return
    with LOCK:
        if _depth == 0:
            if _controller is None:
                from threadpoolctl import ThreadpoolController
                _controller = ThreadpoolController()
            _restore = _controller.limit(limits=limit, user_api="blas")
        _depth += 1
    try:
        yield
    finally:
        with LOCK:
            _depth -= 1
            if _depth == 0:
                _restore.restore_original_limits()
                _restore = None
