"""The layout of an aclnn call's workspace: the buffers its kernels share, in order.

Each buffer starts on a 512 B boundary [R: A2 DMA is fastest on 512 B aligned GM,
docs/reference/hardware.md §2], after an optional base (the tiling's own workspace, e.g. the
Ascend C system workspace).
"""
from __future__ import annotations

#: Alignment of every buffer placed in a workspace (bytes).
WORKSPACE_ALIGN = 512


class Workspace:
    """Offsets (bytes from the workspace's start) of named buffers.

    Attributes:
        size: bytes the workspace needs so far (the base plus each buffer rounded up).
        parts: buffer name -> its offset, in the order taken.
    """

    def __init__(self, base: int = 0):
        self.size = int(base)
        self.parts: dict = {}

    def take(self, name, nbytes: int) -> int:
        """Place ``nbytes`` (0 allowed) at the next aligned offset; return that offset."""
        offset = self.parts[name] = self.size
        self.size += -(-int(nbytes) // WORKSPACE_ALIGN) * WORKSPACE_ALIGN
        return offset
