"""The HTTP API: ``create_app(settings)`` builds the FastAPI app."""

from __future__ import annotations

from engine.api.app import create_app

__all__ = ["create_app"]
