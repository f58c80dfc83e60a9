"""The background threads' shared loop (``runtime.periodic``): steps again at once while
busy, pauses when idle, and stops without waiting out a pause."""
from __future__ import annotations

import threading
import time

from piql.runtime.periodic import PeriodicThread


class Counting(PeriodicThread):
    """Busy for its first ``busy`` steps, then idle; counts its steps."""

    def __init__(self, busy: int, pause: float, first_pause: float = 0.0) -> None:
        self.busy, self.steps = busy, 0
        self.idle_step = threading.Event()
        super().__init__("piql-test", pause, first_pause)

    def step(self) -> bool:
        self.steps += 1
        if self.steps > self.busy:
            self.idle_step.set()
        return self.steps <= self.busy


def test_busy_steps_follow_at_once_and_an_idle_one_pauses_until_stopped():
    thread = Counting(busy=5, pause=60)
    assert thread.idle_step.wait(10)
    started = time.monotonic()
    thread.stop()
    # the stop ended the pause of 60 s at once, after the five busy steps and one idle one
    assert time.monotonic() - started < 5
    assert thread.steps == 6 and not thread.running and thread.error is None


def test_a_stop_during_the_first_pause_runs_no_step():
    thread = Counting(busy=0, pause=60, first_pause=60)
    started = time.monotonic()
    thread.stop()
    assert time.monotonic() - started < 5 and thread.steps == 0 and not thread.running


class StoppingItself(PeriodicThread):
    def step(self) -> bool:
        self.stop()  # from the thread itself: no join of itself, the loop ends
        return True


def test_a_thread_may_stop_itself():
    thread = StoppingItself("piql-test", pause=60)
    thread._thread.join(10)
    assert not thread.running and thread.error is None
    thread.stop()  # and again from outside: nothing left to wait for
