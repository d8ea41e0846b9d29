"""The parent's watch over a child's time: the per-row watchdog's clock, and stopping the
child (:mod:`~engine.harness.supervise` runs them)."""

from __future__ import annotations

import contextlib
import os
import signal
import time

#: Extra seconds past a row's time limit before the parent kills a silent child.
WATCHDOG_GRACE_SECONDS = 0.5


def stop_child(pid: int) -> None:
    """Kill the child now and reap it (its records written so far stay in the pipe)."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


class Watchdog:
    """A child's clock: when the step in flight (loading, then each row) must be done."""

    def __init__(
        self, first_seconds: float, row_allowance: float, gateway_allowance: float | None
    ) -> None:
        """``first_seconds``: the first step's time (loading the check), before the grace;
        ``row_allowance``: a row's, grace included; ``gateway_allowance``: a row's that
        called the model (None: calling it adds no time)."""
        self.row_allowance = row_allowance
        self.gateway_allowance = gateway_allowance
        self.started = time.monotonic()
        #: When the parent gives up on the step in flight.
        self.deadline = self.started + first_seconds + WATCHDOG_GRACE_SECONDS
        #: Whether the step in flight called the model.
        self.called_model = False

    def step(self, now: float) -> None:
        """The next row started at ``now``: a row's time from there."""
        self.started = now
        self.called_model = False
        self.deadline = now + self.row_allowance

    def model_called(self) -> None:
        """The step in flight called the model: it may run as long as the gateway allows."""
        if self.gateway_allowance is not None:
            # Model calls count against the row, within the gateway's larger bound.
            self.deadline = max(self.deadline, self.started + self.gateway_allowance)
            self.called_model = True
