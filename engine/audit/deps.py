"""``AuditDep``: the routes' handle on the audit log.

Apart from :mod:`engine.audit.api` and importing nothing of ``engine.api``: the API's
routes import this while ``engine.api`` is still being initialised, so it must not
need it (``scorebox audit`` once failed on that cycle).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from engine.audit.store import AuditLog


def get_audit(request: Request) -> AuditLog:
    """The app's audit log (``Services.audit``)."""
    audit: AuditLog = request.app.state.services.audit
    return audit


AuditDep = Annotated[AuditLog, Depends(get_audit)]
