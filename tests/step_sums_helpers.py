"""What the tests of Mmad's compiled step-sums loop share (tests/test_cube_step_sums_numba.py,
tests/test_cube_step_sums_tiles.py): their marks, the cube's input types, and one
``mmad_steps`` call through each rendering."""
import ml_dtypes
import numpy as np
import pytest

from npusim.ascendc import nans
from npusim.ascendc.cube import step_sums as ss
from npusim.ascendc.cube import step_sums_numba as fused

#: a module's ``pytestmark``: skipped without numba; IEEE inf / NaN arithmetic is the point
NUMBA_MARKS = [pytest.mark.skipif(not fused.AVAILABLE,
                                  reason="numba is not installed (pip install 'npusim[fast]')"),
               pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning"),
               pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")]
BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32)]


def both_renderings(a, b, init, in_place=False):
    """``mmad_steps(a, b, init, out)`` through numpy's rendering and through the compiled
    loop: (numpy's, the loop's) float32 results ``[G, N/16, M, 16]``, NaNs made canonical as
    Mmad makes them. ``in_place``: the start is ``init`` and the result is written over it
    (a copy of it)."""
    G, S, M, _ = a.shape
    N = b.shape[-1]
    got = []
    for on in (False, True):
        fused.ENABLED = on
        try:
            if in_place:
                out = init.copy()
                ss.mmad_steps(a, b, out, out)
            else:
                out = np.full((G, N // 16, M, 16), np.nan, np.float32)
                ss.mmad_steps(a, b, init, out)
        finally:
            fused.ENABLED = fused.AVAILABLE
        got.append(nans.canonical(out))
    return got
