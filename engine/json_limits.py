"""Limits on JSON values that come from clients: nesting depth and valid Unicode (pure).

Python's JSON parser accepts two things the rest of scorebox cannot carry:

- a lone UTF-16 surrogate (``"\\ud800"`` is valid JSON), which no UTF-8 encoder,
  database or container protocol accepts;
- nesting deep enough to pass the parser but not pydantic's serializer (about
  250 levels) or anything else that recurses.

:func:`json_problem` finds the first such place and names it the way an API
error does (``rows[3].metadata.a``), so a request is refused with a 4xx before
anything is stored or queued, never accepted first and failed later.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator

#: Deepest nesting accepted inside one free-form value (metadata, scenario_input, labels...).
MAX_JSON_DEPTH = 64


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone UTF-16 surrogate (no UTF-8 encoding of it exists)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _shown(path: str) -> str:
    return path if len(path) <= 80 else f"{path[:80]}..."


def _child(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def surrogate_message(path: str) -> str:
    """The error for a lone surrogate at ``path``."""
    return (
        f"{_shown(path) + ': ' if path else ''}contains a lone UTF-16 surrogate (an escape "
        "such as \\ud800 without its pair), which is not valid Unicode text: send valid UTF-8"
    )


def json_problem(value: Any, path: str = "", max_depth: int | None = MAX_JSON_DEPTH) -> str | None:
    """The first lone surrogate or too-deep nesting in ``value``, as a message naming the path.

    Iterative, so a hostile value cannot exhaust the stack while it is checked.
    """
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                return surrogate_message(where)
            continue
        if not isinstance(item, dict | list):
            continue
        if max_depth is not None and depth >= max_depth:
            return (
                f"{_shown(where) + ': ' if where else ''}nested more than {max_depth} levels deep; "
                "flatten it (for example, store a JSON string instead)"
            )
        if isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and has_lone_surrogate(key):
                    return surrogate_message(_child(where, "<key>"))
                stack.append((child, _child(where, key), depth + 1))
        else:
            stack.extend((child, _child(where, i), depth + 1) for i, child in enumerate(item))
    return None


def bounded_json(value: Any) -> Any:
    """Pydantic validator: ``value`` unchanged, or a ValueError naming the bad place in it."""
    problem = json_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


#: A free-form JSON value from a client (metadata, labels, params): bounded depth, valid text.
FreeJSON = Annotated[Any, AfterValidator(bounded_json)]
