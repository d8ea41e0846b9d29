"""The dependencies FastAPI solves for ``POST /v1/score``: each costs every request that
uses it, so the route's runs and caller are read off the request without the services,
store or settings as dependencies of their own."""

from __future__ import annotations

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from engine.api.routes import score


def _calls(dependant: Dependant) -> list[str]:
    names = []
    for sub in dependant.dependencies:
        call = sub.call
        names.append(getattr(call, "__name__", type(call).__name__))
        names += _calls(sub)
    return names


def test_score_solves_the_runs_the_caller_and_its_bearer_key_only() -> None:
    route = next(
        r for r in score.router.routes if isinstance(r, APIRoute) and r.path == "/v1/score"
    )
    assert sorted(_calls(route.dependant)) == ["HTTPBearer", "get_principal", "get_runs"]
