"""Which bundled tasks the native runners' real runs play: together, every bundled v1 task."""

from __future__ import annotations

from collections import Counter

from tests.support.native_runs import CORE, RUNNERS, runner_tasks
from tests.support.native_script import bundled_v1_tasks


def test_the_runners_together_play_every_bundled_v1_task_and_each_plays_the_core() -> None:
    every = {t["id"] for t in bundled_v1_tasks()}
    shares = {agent: {t["id"] for t in runner_tasks(agent, matrix="")} for agent in RUNNERS}
    assert set().union(*shares.values()) == every
    assert all(set(CORE) <= share for share in shares.values())
    # Beyond the core each task is played once, and the shares are even (within one task).
    played = Counter(task for share in shares.values() for task in share - set(CORE))
    assert set(played.values()) == {1}
    sizes = [len(share) for share in shares.values()]
    assert max(sizes) - min(sizes) <= 1


def test_the_full_matrix_plays_every_bundled_v1_task_in_every_runner() -> None:
    every = [t["id"] for t in bundled_v1_tasks()]
    assert all([t["id"] for t in runner_tasks(agent, matrix="all")] == every for agent in RUNNERS)
