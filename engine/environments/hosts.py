"""Declared environments per host, for distributed mode: what workers publish, what the API shows.

Each worker reads its host's environments (the images on its Docker engine, the failed
builds and the builds in progress under its data directory: host-level facts, so every
worker of a host publishes the same thing) and publishes them next to its heartbeat. The
API node, which builds nothing, answers ``GET /v1/checks/{ref}/environment`` from them:
one state per host and a summary state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from engine.environments.build import Environments
from engine.environments.spec import environment_key
from engine.environments.status import EnvironmentStatus

#: At most this many environments are published per host (the newest built first).
MAX_PUBLISHED = 200
#: A failed build's message is cut to this many characters when published.
MAX_ERROR_CHARS = 500
#: Lock files looked at per snapshot (one per key ever built on the host).
MAX_LOCKS_SCANNED = 1000


def host_snapshot(environments: Environments) -> dict[str, dict[str, Any]]:
    """This host's environments: key -> ``{"state": "built"|"building"|"failed", ...}``.

    A failed entry carries the build's ``error``, which is already worded for tenants (the
    host's paths and credentials are out of it) and ``retryable``. Raises ScoreboxError when
    the Docker engine cannot be asked.
    """
    out: dict[str, dict[str, Any]] = {}
    built = sorted(environments.installer.list_environments(), key=lambda r: -r.built_at)
    for record in built[:MAX_PUBLISHED]:
        out[record.key] = {"state": "built"}
    root = environments.root
    for path in sorted((root / "failed").glob("*.json")):
        if len(out) >= MAX_PUBLISHED:
            return out
        failure = environments.failure(path.stem)
        if failure is not None and path.stem not in out:
            out[path.stem] = {
                "state": "failed",
                "error": failure.error[:MAX_ERROR_CHARS],
                "retryable": failure.retryable,
            }
    for index, path in enumerate(sorted((root / "locks").glob("*.lock"))):
        if len(out) >= MAX_PUBLISHED or index >= MAX_LOCKS_SCANNED:
            break
        if path.stem not in out and environments.building(path.stem):
            out[path.stem] = {"state": "building"}
    return out


def host_label(host: str) -> str:
    """How a tenant sees a worker host: a stable label, not the operator's host name.

    Host names are the operator's infrastructure. The label is ``host-`` and the first 8 hex
    digits of the name's SHA-256, so an operator can tell which host it is.
    """
    return "host-" + hashlib.sha256(host.encode()).hexdigest()[:8]


def distributed_status(
    status: EnvironmentStatus, image: str, hosts: Mapping[str, Mapping[str, Any]]
) -> EnvironmentStatus:
    """``status`` (``unknown``: this node builds nothing) told from the workers' hosts.

    ``hosts``: host -> its published snapshot (:func:`host_snapshot`). Summary state:
    ``failed`` if a host failed to build it, else ``building`` if one is building it, else
    ``ready`` if one has it, else ``missing``; ``unknown`` when no worker published lately.
    """
    if status.state != "unknown" or not status.requirements:
        return status
    if not hosts:
        return status.model_copy(
            update={"detail": "no worker has published its environments in the last 30 s"}
        )
    key = environment_key(status.requirements, image)
    per_host: dict[str, str] = {}
    entries: dict[str, Mapping[str, Any]] = {}
    for host in sorted(hosts):
        entry = hosts[host].get(key)
        shown = host_label(host)
        if isinstance(entry, Mapping) and entry.get("state") in ("built", "building", "failed"):
            per_host[shown] = str(entry["state"])
            entries[shown] = entry
        else:
            per_host[shown] = "missing"
    states = set(per_host.values())
    update: dict[str, Any] = {"key": key, "hosts": per_host, "detail": None}
    if "failed" in states:
        failed = next(entries[h] for h, s in per_host.items() if s == "failed")
        update |= {
            "state": "failed",
            "error": str(failed.get("error") or "failed")[:MAX_ERROR_CHARS],
            "retryable": bool(failed.get("retryable", False)),
        }
    elif "building" in states:
        update["state"] = "building"
    elif "built" in states:
        update["state"] = "ready"
        if states != {"built"}:
            update["detail"] = "built on some hosts: a host without it builds it on first use"
    else:
        update["state"] = "missing"
    return status.model_copy(update=update)
