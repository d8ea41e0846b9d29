"""What the stand-in modules' types share: pydantic-like models without pydantic.

Keyword construction checked against the fields, attribute and dict-style access,
``model_dump``. Private to the stand-ins (a check never imports it).
"""

from __future__ import annotations

from typing import Any


class _Model:
    """Keyword construction, attribute and dict-style access, ``model_dump``."""

    _fields: dict[str, Any] = {}

    def __init__(self, **values: Any) -> None:
        # Unknown fields are ignored, as pydantic's default (extra="ignore") does: published
        # reward functions pass StepOutput(action=...) and the real model drops it.
        for name, default in self._fields.items():
            if name not in values and default is _REQUIRED:
                raise TypeError(f"{type(self).__name__} needs `{name}`")
            value = values.get(name, default)
            setattr(self, name, dict(value) if isinstance(value, dict) else value)

    def __getitem__(self, key: str) -> Any:
        if key not in self._fields:
            raise KeyError(key)
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default) if key in self._fields else default

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def keys(self) -> list[str]:
        return list(self._fields)

    def model_dump(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self._fields:
            value = getattr(self, name)
            if isinstance(value, _Model):
                value = value.model_dump()
            elif isinstance(value, dict):
                value = {
                    k: v.model_dump() if isinstance(v, _Model) else v for k, v in value.items()
                }
            elif isinstance(value, list):
                value = [v.model_dump() if isinstance(v, _Model) else v for v in value]
            out[name] = value
        return out

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._fields)
        return f"{type(self).__name__}({fields})"


_REQUIRED = object()
