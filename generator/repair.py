"""Which labelled rows a message to the model carries: bounded in count and in size. Pure.

A labelled run gives the generator thousands of examples; a prompt holding them all would
outgrow the model's context and bury the rule in the rows. So the first message shows a
bounded, balanced sample of the examples, every example is still tested, and each repair
message carries the rows the check disagrees with, bounded the same way: the examples the
model has not seen come back to it when the check gets them wrong.

Balanced means round-robin over groups (the expected value): a check that fails rows
of two labels shows the model both kinds of mistake, not only the more frequent one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class RowBudget:
    """At most ``rows`` rows, of ``chars`` characters in all, in one message."""

    rows: int
    chars: int


#: The disagreeing rows one repair message carries at most.
REPAIR_BUDGET = RowBudget(rows=20, chars=12_000)
#: The labelled examples the first message shows at most (all of them are tested).
EXAMPLE_BUDGET = RowBudget(rows=40, chars=24_000)


def within_budget(
    items: Sequence[T],
    group: Callable[[T], Hashable],
    size: Callable[[T], int],
    budget: RowBudget,
) -> list[T]:
    """``items`` taken round-robin over their groups (each group in order) while the
    budget lasts, returned in their original order.

    A row too large for what is left of ``budget.chars`` is passed over (a smaller one
    may still fit); the first row is always taken, so a message never lacks its reason.
    """
    queues: dict[Hashable, list[int]] = {}
    for index, item in enumerate(items):
        queues.setdefault(group(item), []).append(index)
    chosen: list[int] = []
    chars = 0
    while len(chosen) < budget.rows and any(queues.values()):
        for queue in queues.values():
            if not queue or len(chosen) >= budget.rows:
                continue
            index = queue.pop(0)
            cost = size(items[index])
            if chosen and chars + cost > budget.chars:
                continue
            chosen.append(index)
            chars += cost
    return [items[i] for i in sorted(chosen)]
