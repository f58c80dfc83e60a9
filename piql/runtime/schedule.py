"""Refreshing a deployment's periodic views on a fixed period, in a background thread."""
from __future__ import annotations

import threading
from typing import Callable

from piql.runtime.errors import DeploymentError
from piql.runtime.refresh import RefreshReport


class RefreshSchedule:
    """A background thread that calls ``refresh`` (a deployment's) every ``seconds`` until
    :meth:`stop`; the latest reports, or the error that stopped it, are kept."""

    def __init__(self, refresh: Callable[[], list[RefreshReport]], seconds: float) -> None:
        if seconds <= 0:
            raise DeploymentError("the refresh period must be positive")
        self.refresh, self.seconds = refresh, seconds
        self.reports: list[RefreshReport] = []
        self.runs = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="piql-refresh", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.reports = self.refresh()
                self.runs += 1
            except BaseException as err:  # kept for the caller; the schedule stops
                self.error = err
                return
            self._stop.wait(self.seconds)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
