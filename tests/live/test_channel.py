"""The channel between a run's processes and the one serving its page: whole lines only, each process's
own file, screenshots by rename, and the mark of a task a person touched."""

from __future__ import annotations

from pathlib import Path

from pytest_osworld.live.channel import Channel
from pytest_osworld.record import HumanInput


def test_a_tail_reads_each_publishers_whole_lines_once(tmp_path: Path) -> None:
    channel = Channel(tmp_path).make()
    tail = channel.tail()
    gw0, gw1 = channel.publisher("gw0"), channel.publisher("gw1")
    gw0.publish("begin", key="os/a", at=1.0)
    gw1.publish("begin", key="os/b", at=2.0)
    assert sorted((e["worker"], e["key"]) for e in tail.read()) == [("gw0", "os/a"), ("gw1", "os/b")]
    assert list(tail.read()) == []
    with (tmp_path / "events-gw0.jsonl").open("a") as torn:
        torn.write('{"kind": "step", "key": "os/a"')  # a line still being written
    gw1.publish("step", key="os/b", number=1, of=15)
    assert [e["key"] for e in tail.read()] == ["os/b"]
    with (tmp_path / "events-gw0.jsonl").open("a") as rest:
        rest.write(', "number": 2}\n')
    assert [(e["key"], e["number"]) for e in tail.read()] == [("os/a", 2)]
    gw0.close()
    gw0.publish("step", key="os/a", number=3)  # after close: dropped, never raised


def test_a_screenshot_replaces_the_last_and_a_mark_reads_back(tmp_path: Path) -> None:
    channel = Channel(tmp_path).make()
    publisher = channel.publisher("main")
    assert publisher.screenshot("os/a#r2", b"one") and publisher.screenshot("os/a#r2", b"two")
    assert channel.shot_path("os/a#r2").read_bytes() == b"two"
    assert channel.human_input("os/a#r2") is None
    mark = HumanInput(first_at="2026-01-01T00:00:00.000+00:00", last_at="2026-01-01T00:00:02.000+00:00", messages=3)
    channel.mark_input("os/a#r2", mark)
    assert channel.human_input("os/a#r2") == mark
    assert channel.human_input("os/b") is None
