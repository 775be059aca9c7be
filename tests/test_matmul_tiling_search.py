"""The library's searches as npusim restates them (npusim/ascendc/lib/matmul_tiling_l0.py,
matmul_tiling_l1.py, matmul_tiling_dims.py), checked without a compiler: a few problems
whose TCubeTiling fields asc-devkit's own host tiling (snapshot 82b89a1, run on an
Ascend910B2 by tests/cpp_kernels/matmul_tiling_driver.cpp, as tests/test_matmul_tiling_devkit.py
does over 1344 problems) gave, and the divisor rule the searches share, worked by hand."""
import pytest

from npusim.ascendc.lib.matmul_tiling_l0 import best_single_core, core_axis
from test_matmul_tiling import DT, MatmulApiTiling, MultiCoreMatmulTiling, get, make

KEYS = ("usedCoreNum singleCoreM singleCoreN baseM baseN baseK stepM stepN stepKa stepKb "
        "depthA1 depthB1 iterateOrder shareL1Size").split()

#: (dim (0: MatmulApiTiling), M, N, K, type, transA, transB, bias) -> the library's fields
LIBRARY = {
    # one core
    (0, 1000, 1000, 1000, DT.DT_FLOAT16, False, False, False):
        (1, 1000, 1000, 128, 256, 64, 1, 1, 8, 2, 16, 4, 0, 393216),
    # float A transposed: k runs of even C0 counts, both sides counted twice in L1
    (0, 333, 777, 129, DT.DT_FLOAT, True, False, False):
        (1, 333, 777, 128, 256, 32, 1, 1, 1, 1, 2, 2, 0, 98304),
    (0, 4096, 4096, 4096, DT.DT_INT8, False, True, True):
        (1, 4096, 4096, 128, 256, 128, 1, 1, 1, 4, 2, 8, 0, 295936),
    # 24 cores after SetShape: the general split (GetDims) -- 8 x 3 here, not 1 x 24
    (24, 2048, 8192, 512, DT.DT_FLOAT16, False, False, False):
        (24, 256, 2731, 128, 256, 64, 2, 1, 8, 2, 16, 4, 1, 393216),
    (24, 1000, 1000, 1000, DT.DT_BF16, True, False, False):
        (16, 252, 252, 128, 256, 64, 1, 1, 2, 2, 4, 4, 0, 196608),
    (24, 128, 128, 128, DT.DT_FLOAT16, False, False, False):
        (24, 43, 16, 48, 16, 128, 1, 1, 1, 1, 1, 1, 0, 16384),
    (24, 17, 4000, 300, DT.DT_FLOAT16, False, True, True):
        (23, 32, 174, 32, 128, 128, 1, 2, 3, 3, 3, 6, 0, 221696),
}


@pytest.mark.parametrize("case", LIBRARY, ids=str)
def test_fields_are_the_librarys(case):
    dim, m, n, k, dt, ta, tb, bias = case
    cls = MultiCoreMatmulTiling if dim else MatmulApiTiling
    cube = get(make(cls, m, n, k, dt, ta, tb, bias, dim or None, soc="Ascend910B2"))
    assert tuple(getattr(cube, f) for f in KEYS) == LIBRARY[case]


def test_axes_with_few_divisors_move_to_a_near_length():
    """An axis of more than 8 units is kept when it has enough divisors (more than two
    divisor "layers" up to 64), else the search moves toward the mapped power of two."""
    assert core_axis(8) == 8 and core_axis(64) == 64 and core_axis(32) == 32
    assert core_axis(63) == 63       # 63 = 7 * 9: six divisors
    assert core_axis(17) == 18       # a prime: 17's divisors have at most 2 -> 18 (six)
    assert core_axis(127) == 128
    assert core_axis(11) == 11       # below 16 the mapped length is the axis itself
    # 512 fractals over 24 cores: 22 each (22 = 2 * 11 has enough layers)
    assert best_single_core(512, 512, 24) == 22
