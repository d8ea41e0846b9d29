"""Which built environments to remove: other base images, long unused, over the total. Pure.

Environments are images of a few hundred MB each, and any tenant can make new ones (up to
its ``environments`` quota at a time), so without pruning they pile up on the Docker
engine. :func:`plan_prune` picks, in this order: environments of another sandbox image
(never used again), those no job used for SCOREBOX_ENV_PRUNE_UNUSED_DAYS, then the least
recently used until the rest fit in SCOREBOX_ENV_MAX_TOTAL_MB. One used in the last
:data:`RECENT_SECONDS` is never removed for size (a job may be starting in it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from engine.environments.records import EnvironmentRecord

#: An environment used this recently is kept whatever the total size.
RECENT_SECONDS = 600.0


@dataclass(frozen=True)
class PruneItem:
    """An environment to remove, and why."""

    key: str
    reason: str
    size_bytes: int
    last_used: float
    requirements: tuple[str, ...] = ()


def plan_prune(
    records: Iterable[EnvironmentRecord],
    last_used: Callable[[EnvironmentRecord], float],
    *,
    image: str,
    now: float,
    unused_days: float,
    max_total_bytes: int,
    keep: Sequence[str] = (),
    all_bases: bool = False,
) -> list[PruneItem]:
    """The environments to remove (see the module's docstring), in that order."""
    plan: list[PruneItem] = []
    kept: list[tuple[float, EnvironmentRecord]] = []
    for record in records:
        used = last_used(record)

        def item(reason: str, record: EnvironmentRecord = record, used: float = used) -> PruneItem:
            return PruneItem(record.key, reason, record.size_bytes, used, record.requirements)

        if record.key in keep:
            kept.append((used, record))
        elif all_bases:
            plan.append(item("all environments (--all)"))
        elif record.base_image != image:
            plan.append(item(f"built on another sandbox image ({record.base_image})"))
        elif unused_days > 0 and now - used > unused_days * 86400:
            days = (now - used) / 86400
            plan.append(item(f"unused for {days:.0f} days (SCOREBOX_ENV_PRUNE_UNUSED_DAYS)"))
        else:
            kept.append((used, record))
    if max_total_bytes > 0:
        total = sum(record.size_bytes for _, record in kept)
        for used, record in sorted(kept, key=lambda pair: pair[0]):
            if total <= max_total_bytes:
                break
            if record.key in keep or now - used < RECENT_SECONDS:
                continue
            total -= record.size_bytes
            plan.append(
                PruneItem(
                    record.key,
                    "least recently used past SCOREBOX_ENV_MAX_TOTAL_MB",
                    record.size_bytes,
                    used,
                    record.requirements,
                )
            )
    return plan
