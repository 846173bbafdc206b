"""What an episode tells while it runs, and the one question it asks at its end.

``Episode.observer`` is an :class:`EpisodeObserver`; the base class does nothing, so an episode run
without the live page (or outside pytest) pays nothing. The plugin attaches one that publishes each
call to the live page (``plugin/live.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pytest_osworld.record import HumanInput, Usage

Phase = Literal["setup", "evaluation"]


class EpisodeObserver:
    """Told of an episode's phases and steps. Every method must return at once and never raise."""

    def phase(self, phase: Phase) -> None:
        """The episode entered a phase: its task's setup, or the wait before evaluation and the evaluation."""

    def step(self, number: int, of: int) -> None:
        """Step ``number`` of at most ``of`` began: the runner is asked for its next decision."""

    def stepped(self, number: int, response: str | None, screenshot: bytes | None, usage: Usage) -> None:
        """Step ``number`` ended: the model's answer, the screen after its actions, what it cost."""

    def human_input(self) -> HumanInput | None:
        """At the episode's end, before its record is written: input a person sent to the desktop
        during the episode, or None."""
        return None


NO_OBSERVER = EpisodeObserver()
