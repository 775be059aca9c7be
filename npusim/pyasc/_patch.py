"""Installing npusim under pyasc, and taking it out again.

Four hooks, each a documented seam of pyasc (no file of pyasc is changed):

* ``asc.lib.runtime.state.lib`` / ``state.npu_utils``: the runtime library every function
  of ``asc.lib.runtime`` calls (:mod:`npusim.pyasc._runtime`);
* ``asc.runtime.jit.JITFunction._run``: what ``kernel[core_num, stream](...)`` runs
  (:meth:`npusim.pyasc._session.Session.launch`);
* ``asc.runtime.config.set_platform``: the Model backend with no SoC given takes the
  session's SoC (pyasc's default is Ascend910B1);
* ``asc.lib.host.loader.Loader.module``: the host extension (:mod:`npusim.pyasc._host`).
"""
from __future__ import annotations


def install(session) -> dict:
    """Point pyasc at ``session``; return what :func:`uninstall` needs to undo it."""
    from asc.lib.host.loader import Loader
    from asc.lib.runtime import state
    from asc.runtime import config
    from asc.runtime.jit import JITFunction
    from npusim.pyasc._host import HostModule
    from npusim.pyasc._runtime import NpuUtils, RuntimeLib

    saved = {"lib": state.lib, "npu_utils": state.npu_utils, "device_id": state.device_id,
             "streams": state.streams, "allocs": state.allocs, "kernels": state.kernels,
             "model": state.model, "soc": state.soc_verison, "run": JITFunction._run,
             "set_platform": config.set_platform, "host": Loader.module}
    state.lib, state.npu_utils = RuntimeLib(session), NpuUtils()
    state.device_id, state.streams, state.allocs, state.kernels = None, {}, {}, {}
    original_set_platform = saved["set_platform"]

    def set_platform(backend, soc_version=None, device_id=None, check=True):
        if soc_version is None and config.Backend(backend) == config.Backend.Model:
            soc_version = config.Platform(session.soc)
        original_set_platform(backend, soc_version, device_id, check)
    set_platform.__doc__ = original_set_platform.__doc__

    def run(self, *args, **kwargs):
        session.launch(self, args, kwargs)

    config.set_platform = set_platform
    JITFunction._run = run
    Loader.module = HostModule()
    return saved


def uninstall(saved: dict) -> None:
    """Undo :func:`install`."""
    from asc.lib.host.loader import Loader
    from asc.lib.runtime import state
    from asc.runtime import config
    from asc.runtime.jit import JITFunction
    state.lib, state.npu_utils = saved["lib"], saved["npu_utils"]
    state.device_id, state.streams = saved["device_id"], saved["streams"]
    state.allocs, state.kernels = saved["allocs"], saved["kernels"]
    state.model, state.soc_verison = saved["model"], saved["soc"]
    JITFunction._run = saved["run"]
    config.set_platform = saved["set_platform"]
    Loader.module = saved["host"]
