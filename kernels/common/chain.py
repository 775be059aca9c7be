"""Enqueueing the kernels of one aclnn call so that a failure stops the rest.

An aclnn operator is often several kernels (Cast, Sort, ZerosLike, the operator, a final
Cast or ViewCopy). On hardware, an AI core exception puts the stream in an error state: the
tasks after the failing one do not run, and ``aclrtSynchronizeStream`` reports
ACL_ERROR_RT_AICORE_EXCEPTION (507015). ``npusim.Device`` runs every task of a stream
regardless, so :func:`enqueue_chain` gates each kernel of the chain on the success of the
one before it: a kernel whose predecessor failed raises :class:`ChainAborted` at its first
instruction instead of running, and touches no memory. This is what keeps an output that
is written only by the last kernel of the chain unchanged when an earlier kernel fails.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from npusim.errors import KernelError


class ChainAborted(KernelError):
    """A kernel of an aclnn call did not run because an earlier one failed."""

    category = "Stream"


@dataclass
class KernelLaunch:
    """One kernel of a chain: the arguments of ``Device.launch``.

    ``on_done(profile)`` runs after a clean run of this kernel (e.g. to add warnings).
    """

    kernel: object
    block_dim: int
    args: tuple
    name: str
    reserve_ub: bool = True
    sync_all: bool = False
    on_done: object = None
    label: str = field(default="")
    #: a KernelMetaType (None: a vector kernel); KERNEL_TYPE_AIC_ONLY runs on the cube cores
    kernel_type: object = None


def enqueue_chain(device, stream, launches: list[KernelLaunch], op_name: str) -> None:
    """Enqueue ``launches`` on ``stream`` in order; each runs only if the previous one ran
    cleanly (see the module docstring).

    Args:
        device: the npusim Device. stream: one of its streams.
        launches: the kernels, in execution order.
        op_name: the aclnn API, named in the message of a skipped kernel.
    """
    state = {"done": 0}

    for i, step in enumerate(launches):
        def gated(*args, _i=i, _step=step):
            if state["done"] != _i:
                failed = launches[state["done"]].name
                raise ChainAborted(_step.name, f"not run: {failed}, an earlier kernel of "
                                   f"{op_name} on this stream, failed (a stream stops at an "
                                   "AI core exception)")
            _step.kernel(*args)
        # the kernel's name, and ``__wrapped__``: the lockstep engine remembers a launch's
        # partition by the kernel it runs, not by this per-call gate
        functools.update_wrapper(gated, step.kernel)

        def on_done(profile, _i=i, _step=step):
            state["done"] = _i + 1
            if _step.on_done is not None:
                _step.on_done(profile)

        device.launch(stream, gated, step.block_dim, step.args, name=step.name,
                      reserve_ub=step.reserve_ub, sync_all=step.sync_all, on_done=on_done,
                      kernel_type=step.kernel_type)
