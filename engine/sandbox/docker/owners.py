"""Who made a container, told apart across PID namespaces and PID reuse, for the reaper.

A container carries ``scorebox.owner`` (``host:pid``, what people read) and
``scorebox.owner-process``: the PID namespace of its maker and the start time of
its process (``pidns:start``), read from ``/proc``. Two scorebox processes that
share a hostname but not a PID namespace (two containers with the host's UTS
namespace, say) have different namespaces, so neither takes the other's
containers for orphans; a PID reused by another process has another start time.
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Mapping

#: The label that carries :func:`process_identity`.
LABEL_OWNER_PROCESS = "scorebox.owner-process"


def _pid_namespace(pid: int | str) -> str | None:
    try:
        return str(os.stat(f"/proc/{pid}/ns/pid").st_ino)
    except OSError:
        return None


def _start_time(pid: int | str) -> str | None:
    """Field 22 of ``/proc/PID/stat``: when the process started (clock ticks since boot)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return None
    # the command name (field 2) may hold spaces and parentheses: split after its last ")"
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


@functools.cache
def process_identity() -> str:
    """This process: ``pidns:start`` (``?`` for what ``/proc`` does not tell)."""
    return f"{_pid_namespace('self') or '?'}:{_start_time('self') or '?'}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def owner_gone(labels: Mapping[str, str], host: str | None = None) -> bool:
    """Whether the process that made a container with ``labels`` is gone (reap it).

    Only containers of this host and of this PID namespace are judged: one made in
    another namespace is never ours to take (its maker's PID means nothing here).
    """
    owner_host, _, pid = labels.get("scorebox.owner", "").rpartition(":")
    if owner_host != (host or socket.gethostname()) or not pid.isdigit():
        return False
    made_by = labels.get(LABEL_OWNER_PROCESS)
    if made_by is None:  # made before the label existed: host and PID are all there is
        return not _alive(int(pid))
    namespace, _, started = made_by.partition(":")
    here = _pid_namespace("self")
    if namespace == "?" or here is None:  # no /proc to tell: as before the label
        return not _alive(int(pid))
    if namespace != here:
        return False
    if not _alive(int(pid)):
        return True
    now = _start_time(pid)
    return started != "?" and now is not None and now != started  # the PID was reused
