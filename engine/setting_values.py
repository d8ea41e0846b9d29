"""How ``SCOREBOX_*`` variables become setting values, and what a bad one says.

* A list setting takes JSON (``'["pyjokes", "foo"]'``) or comma-separated values
  (``pyjokes,foo``); an empty value is the empty list.
* A bad value is one line per variable naming the variable, the value given, what is
  expected and an example: ``SCOREBOX_MAX_BODY_MB='abc' is not valid: expected a number
  greater than 0, e.g. SCOREBOX_MAX_BODY_MB=32.0``. It is raised as
  :class:`SettingValueError`, which the CLI shows as ``Error: ...`` with exit code 2.

Pure: no environment is read here; :mod:`engine.settings` hands the values in.
"""

from __future__ import annotations

import json
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from engine.errors import ConfigurationError

PREFIX = "SCOREBOX_"


class SettingValueError(ConfigurationError):
    """Raised when a ``SCOREBOX_*`` variable holds a value its setting cannot take."""


def _members(annotation: Any) -> list[Any]:
    """The types of an annotation, without None (``list[str] | None`` -> ``[list[str]]``)."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for a in get_args(annotation) if a is not type(None)]
    return [annotation]


def is_list(annotation: Any) -> bool:
    """Whether a setting is a list (and so also takes comma-separated values)."""
    return any(get_origin(a) in (list, tuple, set, frozenset) for a in _members(annotation))


def split_list(value: str) -> Any:
    """A list setting's raw value: JSON when it looks like an array, else comma-separated."""
    if value.lstrip().startswith("["):
        return json.loads(value)
    return [part.strip() for part in value.split(",") if part.strip()]


def _bounds(field: FieldInfo) -> str:
    words = []
    for item in field.metadata:
        for attr, word in (
            ("gt", "greater than"),
            ("ge", "at least"),
            ("lt", "less than"),
            ("le", "at most"),
        ):
            if isinstance(item, getattr(annotated_types, attr.capitalize())):
                words.append(f"{word} {getattr(item, attr)}")
    return " and ".join(words)


def _expected(field: FieldInfo) -> str:
    """What a setting takes, in words."""
    kinds = _members(field.annotation)
    kind = kinds[0] if kinds else str
    if get_origin(kind) is Literal:
        return "one of " + ", ".join(str(a) for a in get_args(kind))
    if is_list(field.annotation):
        return 'a comma-separated list (a,b) or a JSON array (["a", "b"])'
    if get_origin(kind) is dict or kind is dict:
        return 'a JSON object ({"key": "value"})'
    bounds = _bounds(field)
    if kind is bool:
        return "true or false"
    if kind is int:
        return "a whole number" + (f" {bounds}" if bounds else "")
    if kind is float:
        return "a number" + (f" {bounds}" if bounds else "")
    if kind is Path:
        return "a path"
    return "text" + (f" {bounds}" if bounds else "")


def _example(field: FieldInfo) -> str:
    """A value the setting takes: its first example, its default, or one of its kind."""
    if field.examples:
        return str(field.examples[0])
    kinds = _members(field.annotation)
    kind = kinds[0] if kinds else str
    default = field.default
    if get_origin(kind) is Literal:
        return str(get_args(kind)[0])
    if is_list(field.annotation):
        return "a,b"
    if get_origin(kind) is dict or kind is dict:
        return '\'{"key": "value"}\''
    if kind is bool:
        return "true" if default is PydanticUndefined or default is None else str(default).lower()
    if default not in (PydanticUndefined, None) and not isinstance(default, SecretStr):
        return str(default)
    if kind is int or kind is float:
        low = next(
            (
                getattr(item, attr)
                for item in field.metadata
                for attr in ("ge", "gt")
                if hasattr(item, attr) and isinstance(getattr(item, attr), int | float)
            ),
            0,
        )
        return str(low + 1 if kind is int else float(low + 1))
    if kind is Path:
        return "/var/lib/scorebox"
    return "VALUE"


def describe(variable: str, value: Any, field: FieldInfo, problem: str | None = None) -> str:
    """One line: the variable, the value, what is wrong, what is expected, an example."""
    secret = SecretStr in _members(field.annotation)
    shown = "'****'" if secret else repr(value if isinstance(value, str) else json.dumps(value))
    why = f" ({problem})" if problem else ""
    return (
        f"{variable}={shown} is not valid{why}: expected {_expected(field)}, "
        f"e.g. {variable}={_example(field)}"
    )


def _variable(
    fields: Mapping[str, FieldInfo], nested: Mapping[str, type[BaseModel]], loc: Sequence[Any]
) -> tuple[str, FieldInfo] | None:
    """The variable and field an error's location names (``limits.memory_mb`` is the flat
    ``SCOREBOX_MEMORY_MB``); None when it names no setting."""
    if not loc:
        return None
    name = str(loc[0])
    if name in nested and len(loc) > 1 and str(loc[1]) in nested[name].model_fields:
        return PREFIX + str(loc[1]).upper(), nested[name].model_fields[str(loc[1])]
    for field_name, field in fields.items():
        aliases: list[str] = []
        alias = field.validation_alias
        if isinstance(alias, str):
            aliases = [alias]
        elif alias is not None and hasattr(alias, "choices"):
            aliases = [c for c in alias.choices if isinstance(c, str)]
        if name == field_name or name in aliases:
            variable = aliases[0] if aliases else PREFIX + field_name.upper()
            return variable, field
    return None


#: Settings renamed so that "worker" means one thing, a ``scorebox worker`` process: old
#: name -> new name. The old ``SCOREBOX_*`` variables (and keyword arguments) are still
#: read, with a warning, where the new one is not set.
RENAMED: dict[str, str] = {
    "worker_max_jobs": "reuse_max_jobs",
    "worker_max_age_seconds": "reuse_max_age_seconds",
    "worker_idle_seconds": "reuse_idle_seconds",
    "run_workers": "run_threads",
}


def renamed_values(given: Mapping[str, Any], prefix: str = "") -> tuple[dict[str, Any], list[str]]:
    """The values ``given`` under a renamed setting's old name (``prefix`` + the name,
    upper-cased when ``prefix`` is set: the variables), keyed by the new field name, with
    one deprecation message for each; a value under the new name wins over the old."""

    def key(name: str) -> str:
        return f"{prefix}{name}".upper() if prefix else name

    values: dict[str, Any] = {}
    notes: list[str] = []
    for old, new in RENAMED.items():
        if key(old) not in given:
            continue
        if key(new) in given:
            notes.append(f"{key(old)} is deprecated and ignored: {key(new)} is set")
            continue
        values[new] = given[key(old)]
        notes.append(f"{key(old)} is deprecated: it is read as {key(new)}; set that instead")
    return values, notes


def settings_error(
    exc: ValidationError,
    fields: Mapping[str, FieldInfo],
    nested: Mapping[str, type[BaseModel]],
    given: typing.Collection[str] = (),
) -> SettingValueError | None:
    """:class:`SettingValueError` with one line per bad variable; None when an error
    concerns a keyword argument in ``given`` (a caller's bug, kept as it is)."""
    lines: list[str] = []
    for error in exc.errors():
        loc = error.get("loc") or ()
        if loc and str(loc[0]) in given:
            return None
        found = _variable(fields, nested, loc)
        if found is None:
            return None
        variable, field = found
        # a custom validator's own words; for types and bounds, "expected" says it all
        problem = None
        if error.get("type") == "value_error":
            problem = str(error.get("msg", "")).removeprefix("Value error, ")
        line = describe(variable, error.get("input"), field, problem)
        if line not in lines:
            lines.append(line)
    return SettingValueError("\n".join(lines)) if lines else None
