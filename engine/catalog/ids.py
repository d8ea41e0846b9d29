"""A check version's UUID: how the Okareo SDK sees a version, and ``/v1`` reads it too.

The UUID spells the version's ``chk_<20 hex>`` id reversibly, with a fixed tail that
tells it from any other UUID.
"""

from __future__ import annotations

import uuid

#: The last 12 hex digits of a check version's UUID; the first 20 are its ``chk_`` id's.
_CHECK_UUID_TAIL = "5c0b0000c4ec"
_CHECK_ID_HEX = 20


def check_uuid(check_id: str) -> str:
    """The UUID of a check version: a reversible spelling of its ``chk_<20 hex>`` id."""
    prefix, _, digits = check_id.partition("_")
    if prefix != "chk" or len(digits) != _CHECK_ID_HEX:
        raise ValueError(f"not a scorebox check id: {check_id!r}")
    return str(uuid.UUID(digits + _CHECK_UUID_TAIL))


def check_id_from_uuid(value: str) -> str | None:
    """The ``chk_`` id a check version UUID spells, or None when ``value`` is not one."""
    try:
        digits = uuid.UUID(value).hex
    except (ValueError, AttributeError, TypeError):
        return None
    if not digits.endswith(_CHECK_UUID_TAIL):
        return None
    return "chk_" + digits[:_CHECK_ID_HEX]
