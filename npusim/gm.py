"""Global memory (HBM) of one simulated device: real bytes behind integer pointers.

Allocation rules are those of ``aclrtMalloc`` (``docs/reference/api.md`` §6 "Documented
semantics"): the size must be > 0; it is rounded up to a multiple of 32 B and 32 B are
added; the start address is 64 B aligned; memory is not initialised (see below for what a
read of it gives). The capacity is the
SoC's ``memory_size`` (``docs/reference/hardware.md`` §1). A huge-page allocation
(``malloc(size, huge_page=True)``: aclrtMalloc's ``ACL_MEM_MALLOC_HUGE_ONLY``, the runtime's
``RT_MEMORY_POLICY_HUGE_PAGE_ONLY``) is granted in whole 2 MiB pages, 2 MiB aligned: the
aclrtMemMallocPolicy page, "申请大页内存,内存申请粒度为2M,不足2M的倍数,向上2M对齐" (the
allocation granularity is 2 MiB; a size that is not a multiple of 2 MiB is rounded up to one).
The bytes up to the page's end then belong to the allocation, as they do on the device.

Backing is lazy: each allocation owns a numpy buffer of exactly its rounded size, created
with ``np.zeros`` (calloc: the operating system maps zero pages only when they are touched),
so a 64 GiB device costs only what is allocated. The device does not initialise what
aclrtMalloc returns; npusim's fresh allocation reads as zeros, on every host and run
(determinism: a buffer from ``np.empty`` would hold whatever the host's heap held, so a
kernel that reads before it writes would give host-dependent bytes). Zeros are what a
fresh page holds, and what CANN's CPU debug mode gives (its ``GmAlloc`` maps a new file);
on the device, memory freed and allocated again keeps its old bytes, so a kernel that
depends on zeros is still wrong there. Every access is bounds-checked against the
allocation that holds its first byte: a range that leaves that allocation is an error,
even when another allocation happens to follow it.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from npusim.errors import GmAccessError, InvalidDevicePointer, OutOfDeviceMemory

#: First device address handed out; high like a real device VA, and 2 MiB aligned.
GM_BASE_ADDRESS = 0x12C0_4000_0000
#: Start-address alignment of an allocation. aclrtMalloc guarantees 64 B; the simulator
#: hands out 512 B-aligned starts (which are 64 B aligned too) so that a tensor's bandwidth
#: does not depend on the order it was allocated in: GM transfers that are not 512 B
#: aligned are slower on A2 (docs/reference/hardware.md §2).
ALLOC_ALIGN = 512
#: Granularity and alignment of a huge-page allocation (aclrtMemMallocPolicy: "内存申请粒度为2M").
HUGE_PAGE = 2 << 20


def malloc_size(size: int) -> int:
    """Bytes reserved for a request of ``size`` bytes: ceil32(size) + 32 (aclrtMalloc)."""
    return (size + 31) // 32 * 32 + 32


@dataclass
class Allocation:
    """One live allocation: ``[base, base + alloc_size)`` backed by ``buf``."""

    base: int
    size: int          # bytes requested by the user
    alloc_size: int    # bytes reserved (malloc_size(size))
    buf: np.ndarray = field(repr=False)  # uint8, length alloc_size

    @property
    def end(self) -> int:
        return self.base + self.alloc_size


class GlobalMemory:
    """The device's HBM: an allocator plus bounds-checked byte views.

    Args:
        capacity: bytes of device memory (the SoC's ``memory_size``).
    """

    def __init__(self, capacity: int):
        self.capacity = int(capacity)
        self.used = 0
        self._next = GM_BASE_ADDRESS
        self._bases: list[int] = []
        self._allocs: dict[int, Allocation] = {}

    # -- allocation -------------------------------------------------------------------
    def malloc(self, size: int, huge_page: bool = False) -> int:
        """Allocate ``size`` bytes and return the device address (an int).

        ``huge_page``: reserve whole 2 MiB pages, 2 MiB aligned (the module doc), so the
        reservation is ``malloc_size(size)`` rounded up to a multiple of :data:`HUGE_PAGE`.

        Raises:
            ValueError: ``size`` is not a positive int (aclrtMalloc: "size不能为0").
            OutOfDeviceMemory: the capacity would be exceeded.
        """
        if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size <= 0:
            raise ValueError(f"size must be a positive number of bytes, got {size!r}")
        alloc_size = malloc_size(int(size))
        align = ALLOC_ALIGN
        if huge_page:
            alloc_size = -(-alloc_size // HUGE_PAGE) * HUGE_PAGE
            align = HUGE_PAGE
        if self.used + alloc_size > self.capacity:
            raise OutOfDeviceMemory(
                f"cannot allocate {size} B ({alloc_size} B reserved): {self.capacity - self.used} B "
                f"of {self.capacity} B free")
        base = -(-self._next // align) * align
        self._next = base + alloc_size
        alloc = Allocation(base, int(size), alloc_size, np.zeros(alloc_size, dtype=np.uint8))
        self._allocs[base] = alloc
        self._bases.append(base)  # bases only grow, so the list stays sorted
        self.used += alloc_size
        return base

    def free(self, addr: int) -> None:
        """Release the allocation that starts at ``addr``.

        Raises:
            InvalidDevicePointer: ``addr`` is not the start of a live allocation.
        """
        alloc = self._allocs.pop(addr, None)
        if alloc is None:
            raise InvalidDevicePointer(f"0x{addr:x} is not the start of a live device allocation")
        del self._bases[bisect.bisect_left(self._bases, addr)]
        self.used -= alloc.alloc_size
        self._host_wrote(addr, alloc.end)

    @property
    def free_bytes(self) -> int:
        return self.capacity - self.used

    def allocations(self) -> list[Allocation]:
        """The live allocations, in address order."""
        return [self._allocs[b] for b in self._bases]

    # -- access -----------------------------------------------------------------------
    def find(self, addr: int) -> Allocation | None:
        """The live allocation holding byte ``addr``, or None."""
        i = bisect.bisect_right(self._bases, addr) - 1
        if i < 0:
            return None
        alloc = self._allocs[self._bases[i]]
        return alloc if addr < alloc.end else None

    def contains(self, addr: int, nbytes: int) -> bool:
        """Whether ``[addr, addr + nbytes)`` lies inside one live allocation."""
        alloc = self.find(addr)
        return alloc is not None and addr + nbytes <= alloc.end

    def view(self, addr: int, nbytes: int, *, instruction: str = "GM access",
             pipe: str | None = None) -> np.ndarray:
        """A writable uint8 view of ``[addr, addr + nbytes)``, no copy.

        Raises:
            GmAccessError: the range is not inside one live allocation.
        """
        alloc = self.find(addr)
        if alloc is None or addr + nbytes > alloc.end or nbytes < 0:
            raise GmAccessError(instruction, self._describe_miss(addr, nbytes), pipe=pipe)
        off = addr - alloc.base
        return alloc.buf[off:off + nbytes]

    def _describe_miss(self, addr: int, nbytes: int) -> str:
        alloc = self.find(addr)
        if alloc is None:
            return (f"address 0x{addr:x} ({nbytes} B) is not inside any live allocation "
                    "(docs/reference/api.md §6: device memory comes from aclrtMalloc)")
        return (f"range 0x{addr:x}+{nbytes} B runs {addr + nbytes - alloc.end} B past the end of "
                f"its allocation [0x{alloc.base:x}, 0x{alloc.end:x}) of {alloc.alloc_size} B")

    def read(self, addr: int, nbytes: int) -> bytes:
        """Copy ``nbytes`` from the device to a new ``bytes`` object."""
        return self.view(addr, nbytes).tobytes()

    def write(self, addr: int, data) -> None:
        """Copy a bytes-like object or numpy array into device memory at ``addr``."""
        if isinstance(data, np.ndarray):
            src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        else:
            src = np.frombuffer(data, dtype=np.uint8)
        self.view(addr, src.size)[:] = src
        self._host_wrote(addr, addr + src.size)

    #: Byte spans that a timing-only launch stored without computing them
    #: (npusim.ascendc.timing_only.Spans), or None.
    uncomputed = None

    def _host_wrote(self, lo: int, hi: int) -> None:
        """Bytes ``[lo, hi)`` hold values the host put there (or none, once freed): no
        longer the uncomputed bytes of a timing-only launch."""
        if self.uncomputed:
            self.uncomputed.remove(lo, hi)
