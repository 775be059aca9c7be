"""The caching allocator behind npu tensors, as torch_npu's (and torch's CUDA one) works.

torch_npu does not call ``aclrtMalloc`` per tensor: its NPUCachingAllocator takes segments
from ``aclrtMalloc`` — 2 MiB ones for requests up to 1 MiB, the request rounded up to 2 MiB
above that — and carves each tensor's block out of them, every block a multiple of 512 B;
a freed block goes back to its segment for reuse, and segments go back to the device only
with ``torch.npu.empty_cache()``. So on the device a kernel that reads a little past the end
of its tensor reads the segment's next bytes, as pyasc's own tests do (their vadd kernels
copy whole 512-element tiles of tensors of 1000 elements); npusim's GM checker sees what the
device would: an access inside the segment is inside an allocation, one past it is not.

Constants: PyTorch's CUDACachingAllocator (``kMinBlockSize`` 512 B, ``kSmallSize`` 1 MiB,
``kSmallBuffer`` 2 MiB, ``kRoundLarge`` 2 MiB), whose design torch_npu's
NPUCachingAllocator follows. Placement is first fit, lowest address first, and the same
requests give the same addresses on every run.
"""
from __future__ import annotations

import aclnn
from aclnn import acl
from aclnn.torch_npu import _runtime

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20
SMALL_BUFFER = 2 << 20
ROUND_LARGE = 2 << 20


def round_size(nbytes: int) -> int:
    return max(MIN_BLOCK, (int(nbytes) + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK)


class _Segment:
    __slots__ = ("ptr", "size", "free", "used")

    def __init__(self, ptr: int, size: int):
        self.ptr, self.size = ptr, size
        self.free = [(ptr, size)]          # sorted (address, bytes) of free blocks
        self.used = 0

    def take(self, size: int) -> int | None:
        for i, (addr, n) in enumerate(self.free):
            if n >= size:
                if n == size:
                    del self.free[i]
                else:
                    self.free[i] = (addr + size, n - size)
                self.used += size
                return addr
        return None

    def give(self, addr: int, size: int) -> None:
        self.used -= size
        blocks = sorted(self.free + [(addr, size)])
        merged = []
        for a, n in blocks:
            if merged and merged[-1][0] + merged[-1][1] == a:
                merged[-1] = (merged[-1][0], merged[-1][1] + n)
            else:
                merged.append((a, n))
        self.free = merged


class CachingAllocator:
    """The blocks of one device (``npu:i``); segments from ``acl.rt.malloc``."""

    def __init__(self, device):
        self.device = device
        self.segments: list[_Segment] = []

    def malloc(self, nbytes: int) -> tuple[int, int]:
        """(device address, block bytes) of a new block for ``nbytes``."""
        size = round_size(nbytes)
        small = size <= SMALL_SIZE
        for seg in self.segments:
            if (seg.size == SMALL_BUFFER) == small:
                addr = seg.take(size)
                if addr is not None:
                    return addr, size
        seg_size = SMALL_BUFFER if small else (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE
        if not small and seg_size == SMALL_BUFFER:
            seg_size += ROUND_LARGE         # keep large segments apart from the small pool's
        ptr, ret = acl.rt.malloc(seg_size, aclnn.ACL_MEM_MALLOC_HUGE_FIRST)
        _runtime.check(ret, "acl.rt.malloc")
        seg = _Segment(ptr, seg_size)
        self.segments.append(seg)
        return seg.take(size), size

    def free(self, addr: int, size: int) -> None:
        for seg in self.segments:
            if seg.ptr <= addr < seg.ptr + seg.size:
                seg.give(addr, size)
                return

    def empty_cache(self) -> None:
        """Give the segments no tensor uses back to the device (``torch.npu.empty_cache``)."""
        keep = []
        for seg in self.segments:
            if seg.used == 0:
                self.device.gm.free(seg.ptr)
            else:
                keep.append(seg)
        self.segments = keep

    def reserved(self) -> int:
        return sum(s.size for s in self.segments)

    def allocated(self) -> int:
        return sum(s.used for s in self.segments)


_allocators: dict = {}


def allocator(device) -> CachingAllocator:
    """The allocator of npusim Device ``device`` (a new one for a new Device object: a reset
    runtime's devices start with no segments)."""
    key = id(device)
    alloc = _allocators.get(key)
    if alloc is None or alloc.device is not device:
        alloc = _allocators[key] = CachingAllocator(device)
    return alloc
