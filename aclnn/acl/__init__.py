"""pyACL-style host API of the simulated NPU: ``acl.init``, ``acl.rt.*``, ``acl.util.*``.

Use it like pyACL (``docs/reference/api.md`` §5)::

    from aclnn import acl
    ret = acl.init()                      # or acl.init("acl.json")
    ret = acl.rt.set_device(0)
    stream, ret = acl.rt.create_stream()

Functions return values first and the status last; one that returns only a status
returns just ``ret``. Pointers, streams and events are plain Python ints. Bad arguments
never raise: the call returns a status code and leaves a message for
:func:`get_recent_err_msg`.

The simulator reads an optional ``"npusim"`` section of the acl.init JSON::

    {"npusim": {"soc": "Ascend910B1", "device_count": 1, "profiling": false}}
"""
from __future__ import annotations

import json
import os

from aclnn import errmsg, runtime
from aclnn.acl import rt, util
from aclnn.constants import (
    ACL_ERROR_INVALID_FILE,
    ACL_ERROR_INVALID_PARAM,
    ACL_ERROR_PARSE_FILE,
    ACL_ERROR_REPEAT_FINALIZE,
    ACL_ERROR_REPEAT_INITIALIZE,
    ACL_ERROR_UNINITIALIZE,
    ACL_SUCCESS,
)

__all__ = ["init", "finalize", "get_recent_err_msg", "get_soc_name", "rt", "util"]


def init(config_path: str | os.PathLike | None = None) -> int:
    """Initialise ACL. Mirrors ``aclError aclInit(const char* configPath)``.

    Args:
        config_path: path of a JSON config file; None or "" for the defaults (so does a
            file holding ``{}`` or nothing but whitespace). Its optional ``"npusim"``
            object selects the simulated machine (``aclnn.runtime.CONFIG_KEYS``):

            * ``"soc"``: a name from ``npusim.list_socs()`` (default
              ``npusim.DEFAULT_SOC``);
            * ``"device_count"``: int >= 1 (default 1);
            * ``"profiling"``: bool (default false): every kernel keeps its instruction
              spans for the trace;
            * ``"trace"``: path of the Chrome trace JSON to write (needs ``"profiling":
              true``), written when a device is released by its last reset_device and at
              finalize;
            * ``"op_summary"``: path of the msprof-style op summary CSV (needs
              ``"profiling": true``), written at the same times;
            * ``"max_cores"``: int >= 1, at most that many vector cores per device, as
              ``aclrtSetDeviceResLimit`` does (a value above the SoC's count means all).

            Example: ``{"npusim": {"soc": "Ascend910B1", "profiling": true, "trace":
            "trace.json", "op_summary": "op_summary.csv", "max_cores": 16}}``.

    Returns:
        ret: ACL_SUCCESS (0);
        ACL_ERROR_REPEAT_INITIALIZE (100002) when already initialised (ACL stays
        initialised with its first configuration);
        ACL_ERROR_INVALID_PARAM (100000) when config_path is not a str or path;
        ACL_ERROR_INVALID_FILE (100003) when the file does not exist or cannot be read;
        ACL_ERROR_PARSE_FILE (100006) for invalid JSON, a top level that is not an
        object, or a bad "npusim" section (e.g. an unknown SoC: the message lists the
        known ones).

    Source: ``docs/reference/api.md`` §5 (``ret = acl.init(config_path)``) and §6 ("aclInit
    called a second time returns ACL_ERROR_REPEAT_INITIALIZE").
    """
    if runtime.state.initialized:
        return errmsg.report_error(ACL_ERROR_REPEAT_INITIALIZE,
                                   "acl.init: ACL is already initialised in this process")
    config = {}
    # the type first: comparing an arbitrary object with "" could run its own code
    if config_path is not None and not isinstance(config_path, (str, os.PathLike)):
        return errmsg.report_error(
            ACL_ERROR_INVALID_PARAM,
            f"acl.init: config_path must be a file path string, got {config_path!r}")
    if isinstance(config_path, os.PathLike):
        try:
            config_path = os.fspath(config_path)
        except Exception as exc:  # the caller's __fspath__ failed: not a usable path
            return errmsg.report_error(
                ACL_ERROR_INVALID_PARAM, f"acl.init: config_path is not a usable path: {exc}")
        if not isinstance(config_path, str):
            return errmsg.report_error(
                ACL_ERROR_INVALID_PARAM,
                f"acl.init: config_path must be a file path string, got {config_path!r}")
    if config_path is not None and config_path != "":
        try:
            with open(config_path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, ValueError) as exc:    # ValueError: undecodable, or a NUL in the path
            return errmsg.report_error(
                ACL_ERROR_INVALID_FILE,
                f"acl.init: cannot read config file {os.fspath(config_path)!r}: {exc}")
        if text.strip():
            try:
                config = json.loads(text)
            except json.JSONDecodeError as exc:
                return errmsg.report_error(
                    ACL_ERROR_PARSE_FILE,
                    f"acl.init: config file {os.fspath(config_path)!r} is not valid JSON: {exc}")
            if not isinstance(config, dict):
                return errmsg.report_error(
                    ACL_ERROR_PARSE_FILE,
                    f"acl.init: config file {os.fspath(config_path)!r} must hold a JSON "
                    f"object, got {type(config).__name__}")
    return runtime.init(config)


def finalize() -> int:
    """Finalise ACL and release every device. Mirrors ``aclError aclFinalize()``.

    Devices, streams, events and device memory are dropped without running pending
    work. ``init`` may be called again afterwards.

    Returns:
        ret: ACL_SUCCESS (0);
        ACL_ERROR_REPEAT_FINALIZE (100037) when ACL was initialised before but is not now;
        ACL_ERROR_UNINITIALIZE (100001) when ACL was never initialised [R].

    Source: ``docs/reference/api.md`` §5 and §6 ("aclFinalize called a second time returns
    ACL_ERROR_REPEAT_FINALIZE").
    """
    if not runtime.state.initialized:
        if runtime.state.ever_initialized:
            return errmsg.report_error(ACL_ERROR_REPEAT_FINALIZE,
                                       "acl.finalize: ACL is already finalised")
        return errmsg.report_error(ACL_ERROR_UNINITIALIZE,
                                   "acl.finalize: acl.init has not been called")
    runtime.finalize()
    return ACL_SUCCESS


def get_recent_err_msg() -> str | None:
    """Return and clear the pending error messages, newest first, or None.

    Mirrors ``const char* aclGetRecentErrMsg()`` (``docs/reference/api.md`` §4, §5).
    """
    return errmsg.get_recent_err_msg()


def get_soc_name() -> str:
    """The SoC version of the simulated devices, e.g. ``"Ascend910B1"``. Mirrors
    ``const char *aclrtGetSocName()`` (pyACL ``soc_name = acl.get_soc_name()``): the
    ``"npusim.soc"`` of the acl.init config, or ``npusim.DEFAULT_SOC`` before acl.init
    (the C call needs no aclInit either)."""
    return runtime.state.soc.soc_version


# Calls from several threads take effect one at a time (aclnn.runtime.serialize_api);
# get_recent_err_msg reads this thread's own messages (aclnn.errmsg).
runtime.serialize_api(globals(), ("init", "finalize", "get_soc_name"))
