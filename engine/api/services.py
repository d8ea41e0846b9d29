"""What the routes use, built once per app at start-up."""

from __future__ import annotations

from dataclasses import dataclass

from engine.runs.executors import EngineHolder
from engine.runs.metrics import Metrics
from engine.runs.service import RunService
from engine.settings import Settings
from engine.storage import SqlStore


@dataclass
class Services:
    settings: Settings
    store: SqlStore
    runs: RunService
    engines: EngineHolder
    metrics: Metrics
