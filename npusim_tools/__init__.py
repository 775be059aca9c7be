"""npusim_tools: the study tools on top of npusim, kernels and aclnn.

* :mod:`npusim_tools.registry` — the operators the tools can run (random inputs, the
  aclnn call, the kernel-level launch, the golden check);
* :mod:`npusim_tools.cli` — the ``npusim`` command (``socs``, ``ops``, ``run``, ``sweep``,
  ``timeline``);
* :func:`sweep` — ``npusim.sweep`` with an operator name instead of a runner.

It is a package of its own because it imports ``aclnn`` and ``kernels``, which ``npusim``
(the machine) must not.
"""
from __future__ import annotations

import npusim.sweeps as _sweep


def sweep(op: str, *, seed: int = 0, check_golden: bool = True, executor=None,
          scheduler=None, jobs=None, progress=None, timing_only: bool = False, **axes):
    """Sweep operator ``op`` over ``axes`` (``cores``, ``tile``, ``dtype``, ``soc``,
    ``shape``): ``npusim.sweeps.sweep(registry.runner(op), ...)``; ``timing_only`` runs the
    points timing-only (the same figures, no golden check).

    Returns:
        A :class:`npusim.sweeps.SweepResult` (``.records``, ``.table()``, ``.to_csv()``,
        ``.plot()``).

    Raises:
        KeyError: an unknown operator.
    """
    from npusim_tools.registry import runner
    return _sweep.sweep(runner(op, seed, check_golden, timing_only=timing_only),
                        executor=executor, scheduler=scheduler, jobs=jobs, progress=progress,
                        desc=op, timing_only=timing_only, **axes)


__all__ = ["sweep"]
