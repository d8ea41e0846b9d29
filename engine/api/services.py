"""What the routes use, built once per app at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine as SAEngine

from engine.runs.executors import EngineHolder
from engine.runs.metrics import Metrics
from engine.runs.service import RunService
from engine.settings import Settings
from engine.storage import Store


@dataclass
class Services:
    """The app's parts. ``store`` is typed by its Protocol; ``db`` is the SQLAlchemy engine
    that stores with tables of their own (e.g. the Okareo edge's) open on."""

    settings: Settings
    store: Store
    runs: RunService
    engines: EngineHolder
    metrics: Metrics
    db: SAEngine
