"""The ``aclGetRecentErrMsg`` error-message mechanism (api.md §4, §5).

In CANN, ``OP_LOGE(errno, fmt, ...)`` logs and calls
``REPORT_ERROR_MESSAGE(code, ...)``; the reported text is later fetched with
``const char* aclGetRecentErrMsg();`` -- Python ``acl.get_recent_err_msg()``.
The documented semantics (api.md §4 "Error log mechanism", §5 pyACL table):

* the call **retrieves and clears** the pending messages;
* when several are pending, the **newest is on top**;
* it returns ``None`` (C: ``nullptr``) when there is nothing;
* messages are **thread-level by default**; ``err_msg_mode`` in acl.json
  switches to process level.

Here a simulator API reports with :func:`report_error`, which stores the
message text exactly as given and returns the code, so callers write::

    return report_error(ACLNN_ERR_PARAM_INVALID, "self has more than 8 dims")

:func:`set_err_msg_mode` is the hook for the acl.json ``err_msg_mode`` item;
how acl.json spells its values is not in api.md, so the mode names here
("thread", "process") are the simulator's own **[R]**.
"""

from __future__ import annotations

import threading

__all__ = [
    "report_error",
    "get_recent_err_msg",
    "aclGetRecentErrMsg",
    "clear",
    "set_err_msg_mode",
    "get_err_msg_mode",
    "ERR_MSG_MODE_THREAD",
    "ERR_MSG_MODE_PROCESS",
    "MAX_PENDING_MESSAGES",
]

ERR_MSG_MODE_THREAD = "thread"
ERR_MSG_MODE_PROCESS = "process"

MAX_PENDING_MESSAGES = 1024
"""At most this many unread messages are kept per queue; older ones are
dropped first. CANN warns that unread messages "may be stacked or lost"
(pyACL docs); the cap and its size are the simulator's choice [R]."""

_lock = threading.Lock()
_mode = ERR_MSG_MODE_THREAD
_process_messages: list[str] = []
_thread_state = threading.local()


def _queue() -> list[str]:
    """The pending-message list for the current mode (and thread)."""
    if _mode == ERR_MSG_MODE_PROCESS:
        return _process_messages
    messages = getattr(_thread_state, "messages", None)
    if messages is None:
        messages = _thread_state.messages = []
    return messages


def report_error(code: int, message: str) -> int:
    """Record ``message`` for :func:`get_recent_err_msg` and return ``code``.

    Simulator counterpart of CANN's ``OP_LOGE(code, fmt, ...)`` /
    ``REPORT_ERROR_MESSAGE`` (api.md §4 "Error log mechanism"). The text is
    stored verbatim (no code prefix, no "EZ9999" tag). ``code`` is not stored;
    it is returned unchanged so the call can be the ``return`` value of an
    API that fails with that status.
    """
    with _lock:
        messages = _queue()
        messages.append(str(message))
        if len(messages) > MAX_PENDING_MESSAGES:
            del messages[: len(messages) - MAX_PENDING_MESSAGES]
    return code


def get_recent_err_msg() -> str | None:
    """Return and clear the pending error messages, newest first.

    Mirrors ``const char* aclGetRecentErrMsg();`` / pyACL
    ``msg = acl.get_recent_err_msg()`` (api.md §4, §5): the messages are
    joined with ``"\\n"``, the most recently reported first; the queue is
    emptied. Returns ``None`` when no message is pending.
    """
    with _lock:
        messages = _queue()
        if not messages:
            return None
        text = "\n".join(reversed(messages))
        messages.clear()
    return text


aclGetRecentErrMsg = get_recent_err_msg
"""C spelling of :func:`get_recent_err_msg` (``const char* aclGetRecentErrMsg();``)."""


def clear() -> None:
    """Drop every pending message of the current queue (thread or process)."""
    with _lock:
        _queue().clear()


def set_err_msg_mode(mode: str) -> None:
    """Select thread-level (default) or process-level message queues.

    ``mode`` is :data:`ERR_MSG_MODE_THREAD` or :data:`ERR_MSG_MODE_PROCESS`;
    anything else raises ``ValueError``. Counterpart of acl.json's
    ``err_msg_mode`` (api.md §4) [R for the value names]. Messages already
    queued stay in the queue they were reported to.
    """
    global _mode
    if mode not in (ERR_MSG_MODE_THREAD, ERR_MSG_MODE_PROCESS):
        raise ValueError(f"err_msg_mode must be {ERR_MSG_MODE_THREAD!r} or "
                         f"{ERR_MSG_MODE_PROCESS!r}, got {mode!r}")
    with _lock:
        _mode = mode


def get_err_msg_mode() -> str:
    """The current message mode (see :func:`set_err_msg_mode`)."""
    return _mode
