"""Credentials out of text an operator or a tenant may read.

Settings carry URLs with credentials in them (``http://user:pass@host/v1`` for the model
endpoint, ``https://user:TOKEN@index/simple`` for a package index). Whatever message or
log line such a URL may reach goes through :func:`mask_credentials` first; messages a
tenant reads name the service instead ("the operator's model endpoint") and carry no
address at all.
"""

from __future__ import annotations

import re

#: ``scheme://userinfo@``: the userinfo part (``user``, ``user:pass``, a bare token).
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^\s/@?#]+)@")

#: What the userinfo of a URL becomes.
MASK = "***"


def mask_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it masked: ``http://***@host/v1``."""
    return _USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)
