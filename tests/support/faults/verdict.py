"""Whether a scenario held: its strikes' rules over the records after the fault, then the resume's, then
what the run left behind (see :mod:`tests.support.faults.check` for each check)."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.faults import check
from tests.support.faults.kinds import NO_FAULT, Fault, Injection, Record

# What only a crash of pytest itself prints (a mask's traceback is pytest's own, without these).
_CRASH_SIGNS = ("Traceback (most recent call last)", "INTERNALERROR")


@dataclass
class Strike:
    """One fault of a scenario: its seed, and what it did (its injection)."""

    fault: Fault
    seed: int
    injection: Injection

    @property
    def task(self) -> str:
        return self.injection.moment.task


@dataclass
class Session:
    """One pytest session of a scenario: its name, exit status, output and duration."""

    name: str
    returncode: int | None = None
    output: str = ""
    seconds: float = 0.0

    def ran(self) -> set[str]:
        """The task keys ``-v`` printed an outcome for."""
        found = set()
        for line in self.output.splitlines():
            words = line.split()
            for word, node in itertools.pairwise(words):
                if word in ("PASSED", "FAILED", "MASKED", "ERROR", "SKIPPED") and "::" in node:
                    found.add(node.rpartition("::")[2].split("[")[0])
        return found


@dataclass
class Verdict:
    problems: list[str] = field(default_factory=list)
    masks: Counter[str] = field(default_factory=Counter)
    accounted: int = 0
    leftovers: list[str] = field(default_factory=list)
    corrupt: list[str] = field(default_factory=list)


def rule_for(key: str, strikes: list[Strike]) -> tuple[Fault, Injection]:
    """The rules of ``key``'s record: the fault that hit it, or one that hit the whole run, else none."""
    for strike in strikes:
        if strike.injection.landed and (strike.task == key or not strike.fault.per_task):
            return strike.fault, strike.injection
    return NO_FAULT, strikes[0].injection


def expected_exit(strikes: list[Strike], records: dict[str, Record | None]) -> set[int]:
    plain = NO_FAULT.expected_exit(records)
    for strike in strikes:
        if strike.injection.landed and strike.fault.expected_exit(records) != plain:
            return strike.fault.expected_exit(records)
    return plain


def judge_first(
    verdict: Verdict,
    strikes: list[Strike],
    session: Session,
    state: check.Snapshot,
    selected: set[str],
    processes: list[str],
) -> None:
    problems = verdict.problems
    for key in sorted(selected):
        fault, injection = rule_for(key, strikes)
        problem = fault.judge(key, state.records.get(key), injection)
        if problem:
            problems.append(f"after the fault, {key}: {problem}")
    if unexpected := set(state.records) - selected:
        problems.append(f"records of tasks not selected: {sorted(unexpected)}")
    problems += [f"after the fault: {p}" for p in state.problems]
    records: dict[str, Record | None] = {k: state.records.get(k) for k in selected}
    wanted = expected_exit(strikes, records)
    if session.returncode not in wanted:
        problems.append(f"the run exited {session.returncode}, expected {sorted(wanted)}")
    problems += _crashes(session)
    # A killed run writes no summary, nor does one whose disk is still full at its end.
    full_at_end = any(s.injection.disk is not None and s.injection.disk.full_at_end for s in strikes)
    if session.returncode != -9 and not full_at_end:
        problems += [f"after the fault: {p}" for p in check.summary_problems(state.summary, state.records, selected)]
    problems += [f"a process of the run outlived it: {p}" for p in processes]
    verdict.masks = Counter(r["termination"] for r in state.records.values() if r["masked"])


def judge_resume(verdict: Verdict, session: Session, before: check.Snapshot, selected: set[str]) -> None:
    valid = {k for k, r in before.records.items() if not r["masked"] and r["score"] is not None}
    wanted = selected - valid
    ran = session.ran()
    if ran != wanted:
        verdict.problems.append(f"the resume ran {sorted(ran)}, not the tasks without a valid record {sorted(wanted)}")
    if session.returncode != 0:
        verdict.problems.append(f"the resume exited {session.returncode}, not 0")
    verdict.problems += _crashes(session)


def judge_final(
    verdict: Verdict, state: check.Snapshot, run_dir: Path, selected: set[str], resumed: bool, leftovers: list[str]
) -> None:
    problems = verdict.problems
    verdict.accounted = len(selected & set(state.records))
    if verdict.accounted != len(selected):
        problems.append(f"at the end, tasks without a record: {sorted(selected - set(state.records))}")
    for key, record in sorted(state.records.items()):
        if resumed and (record["masked"] or record["score"] != 1.0):
            problems.append(f"after the resume, {key} ended {record['termination']} with score {record['score']}")
        problems += check.trajectory_problems(run_dir, key, record)
    problems += state.problems
    verdict.corrupt = state.corrupt
    problems += [f"corrupt: {c}" for c in state.corrupt]
    if resumed:
        problems += [f"after the resume: {p}" for p in check.summary_problems(state.summary, state.records, selected)]
    verdict.leftovers = leftovers
    problems += [f"left behind: {item}" for item in leftovers]


def _crashes(session: Session) -> list[str]:
    return [
        f"the {session.name} printed {sign!r}: pytest itself crashed, not a task"
        for sign in _CRASH_SIGNS
        if sign in session.output
    ]
