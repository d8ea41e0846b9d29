"""Where ``Settings`` values come from, besides keyword arguments: the ``SCOREBOX_*``
variables (a list also comma-separated, a bad value one line naming the variable), the flat
limit variables (``SCOREBOX_ROW_TIMEOUT_SECONDS``...), and the old names of renamed
settings (read with a warning). :meth:`engine.settings.Settings.settings_customise_sources`
orders them; :mod:`engine.setting_values` turns a raw value into a setting's value.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from pydantic.fields import FieldInfo
from pydantic_settings import EnvSettingsSource, PydanticBaseSettingsSource

from engine.models import Limits
from engine.setting_values import SettingValueError, describe, is_list, renamed_values, split_list

log = logging.getLogger("engine.settings")  # the warnings read as the settings' own


class FlatLimitsSource(PydanticBaseSettingsSource):
    """``SCOREBOX_ROW_TIMEOUT_SECONDS`` and friends set the default limits.

    A settings source, so a keyword argument (``Settings(limits=...)``) wins over
    them, as it wins over every other variable.
    """

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        limits = {
            name: value
            for name in Limits.model_fields
            if (value := os.environ.get(f"SCOREBOX_{name.upper()}")) is not None
        }
        return {"limits": limits} if limits else {}


class RenamedSource(PydanticBaseSettingsSource):
    """The old variables of renamed settings (``SCOREBOX_WORKER_MAX_JOBS`` for
    ``SCOREBOX_REUSE_MAX_JOBS``...), read where the new one is not set, with a warning."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        values, notes = renamed_values(os.environ, "SCOREBOX_")
        for note in notes:
            log.warning("%s", note)
        return values


class EnvSource(EnvSettingsSource):
    """``SCOREBOX_*`` variables: a list also takes comma-separated values, and a value that
    is not JSON where JSON is needed is a :class:`SettingValueError` naming the variable."""

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        try:
            if isinstance(value, str) and is_list(field.annotation):
                return split_list(value)
            return super().decode_complex_value(field_name, field, value)
        except ValueError as exc:  # raised as ours: pydantic-settings wraps a ValueError
            variable = f"{self.env_prefix}{field_name}".upper()
            problem = f"not JSON: {exc}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise SettingValueError(describe(variable, value, field, problem)) from None
