"""Global memory: aclrtMalloc rules (docs/reference/api.md §6) and bounds checks."""
import numpy as np
import pytest

from npusim import GlobalMemory, GmAccessError, get_soc
from npusim.errors import InvalidDevicePointer, OutOfDeviceMemory
from npusim.gm import malloc_size


def test_size_rounding_and_alignment():
    gm = GlobalMemory(1 << 20)
    assert malloc_size(1) == 64 and malloc_size(32) == 64 and malloc_size(33) == 96
    a = gm.malloc(100)
    b = gm.malloc(1)
    assert a % 64 == 0 and b % 64 == 0
    assert gm.used == malloc_size(100) + malloc_size(1) == 160 + 64


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_size_must_be_positive_int(bad):
    with pytest.raises(ValueError):
        GlobalMemory(1024).malloc(bad)


def test_capacity_and_free():
    gm = GlobalMemory(1024)
    a = gm.malloc(900)                 # 928 reserved
    with pytest.raises(OutOfDeviceMemory):
        gm.malloc(100)                 # 160 more would exceed 1024
    gm.free(a)
    assert gm.used == 0
    gm.malloc(900)
    with pytest.raises(InvalidDevicePointer):
        gm.free(a + 64)


def test_64_gib_device_is_lazily_backed():
    soc = get_soc("Ascend910B1")
    gm = GlobalMemory(soc.memory_size)
    assert gm.capacity == 64 * 2**30
    big = gm.malloc(8 * 2**30)         # 8 GiB: only pages touched become resident
    gm.view(big + 5 * 2**30, 8)[:] = 7
    assert gm.read(big + 5 * 2**30, 8) == bytes([7] * 8)


def test_accesses_are_bounds_checked_per_allocation():
    gm = GlobalMemory(1 << 20)
    a = gm.malloc(100)                 # [a, a + 160) reserved
    b = gm.malloc(100)
    gm.write(a, np.arange(40, dtype=np.int32))
    assert np.array_equal(np.frombuffer(gm.read(a, 160), np.int32)[:40], np.arange(40))
    with pytest.raises(GmAccessError, match="past the end"):
        gm.view(a + 100, 64)           # leaves a's allocation even though b may follow
    with pytest.raises(GmAccessError, match="not inside any live allocation"):
        gm.view(b + 10_000, 4)
    assert gm.contains(a, 160) and not gm.contains(a, 161)


def test_huge_page_allocation_is_whole_2_mib_pages():
    """aclrtMemMallocPolicy HUGE_ONLY: "内存申请粒度为2M,不足2M的倍数,向上2M对齐"."""
    gm = GlobalMemory(1 << 24)
    small = gm.malloc(100)
    a = gm.malloc(100, huge_page=True)
    assert a % (2 << 20) == 0 and gm.used == malloc_size(100) + (2 << 20)
    gm.view(a + 4096, 2048)[:] = 7                     # inside the page: the allocation's
    assert gm.contains(a, 2 << 20) and not gm.contains(a, (2 << 20) + 1)
    with pytest.raises(GmAccessError):
        gm.view(small + 4096, 2048)                    # 32 B rounding for the plain one
    b = gm.malloc((2 << 20) + 1, huge_page=True)       # rounded up to two pages
    assert b == a + (2 << 20) and gm.used == malloc_size(100) + (6 << 20)


def test_a_fresh_allocation_reads_zeros_whatever_the_host_heap_held():
    """Determinism: fresh device memory reads as zeros on every host and run, not as the
    bytes the host's heap last held (module doc of npusim.gm)."""
    gm = GlobalMemory(1 << 30)
    for size in (64, 4000, 100_000):
        for _ in range(20):                          # leave the host heap full of 0xAB bytes
            junk = np.full(size + 64, 0xAB, np.uint8)
            del junk
        p = gm.malloc(size)
        assert gm.read(p, size) == bytes(size), size
