"""Plain-text lines of a summary, a comparison and a gate verdict (the terminal and the CLI print the same)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_osworld.results.gate import Comparison, GateResult, format_p, pct
from pytest_osworld.results.paired import PairedComparison
from pytest_osworld.results.power import PowerTable
from pytest_osworld.results.stats import Interval

_VIEW_LABELS = {"all": "all", "valid": "valid", "no_gdrive": "no-gdrive"}
_MAX_LISTED = 10


def _fraction(num: float, den: int) -> str:
    return f"{num:g}/{den}" if isinstance(num, float) else f"{num}/{den}"


def _view_line(name: str, v: Mapping[str, Any]) -> str:
    n = v["episodes"]
    line = (
        f"  {_VIEW_LABELS[name]:<10} success {_fraction(v['successes'], n):>9} {pct(v['success_rate']):>6}"
        f"   raw {_fraction(round(v['score_sum'], 3), n):>11} {pct(v['raw_rate']):>6}"
    )
    parts = [f"{v['passed'] + v['failed']} valid"]
    if v["masked"]:
        parts.append(f"{v['masked']} masked counted as 0")
    if v["masked_apart"]:
        parts.append(f"{v['masked_apart']} masked left out")
    if v.get("unrunnable"):
        parts.append(f"{v['unrunnable']} unrunnable on the sandbox counted as 0")
    if v["skipped"]:
        parts.append(f"{v['skipped']} skipped left out")
    return f"{line}   ({', '.join(parts)})"


def _listed(keys: list[str]) -> str:
    more = f" and {len(keys) - _MAX_LISTED} more" if len(keys) > _MAX_LISTED else ""
    return ", ".join(keys[:_MAX_LISTED]) + more


def _loop_line(loop: Mapping[str, Any]) -> str:
    """Which agent loop the run used, and the knobs that differ from OSWorld's run script."""
    mode = loop.get("mode")
    if mode == "mixed":
        mode = "mixed: " + ", ".join(f"{name} in {n}" for name, n in (loop.get("modes") or {}).items())
    differs = loop.get("differs") or {}
    knobs = [
        f"{knob} {'/'.join(str(v) for v in d.get('values', []))} (OSWorld {d.get('osworld')})"
        for knob, d in differs.items()
    ]
    return f"  loop       {mode}" + (f"; differs from OSWorld's run: {', '.join(knobs)}" if knobs else "")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def service_lines(services: Mapping[str, Any]) -> list[str]:
    """One line per shared service the run used: episodes, starts, restarts, failures, turns waited."""
    lines = []
    for index, (name, s) in enumerate(services.items()):
        head = "  services   " if index == 0 else " " * 13
        line = (
            f"{head}{name}{' (exclusive)' if s.get('exclusive') else ''}: {_count(s.get('tasks', 0), 'task')}, "
            f"{_count(s.get('starts', 0), 'start')}, {_count(s.get('restarts', 0), 'restart')}, "
            f"{_count(s.get('failures', 0), 'failure')}"
        )
        waited = s.get("waited_seconds")
        if waited:
            line += f"; waited {waited['total']:.1f} s in all, longest {waited['longest']:.1f} s"
        lines.append(line)
    return lines


def summary_lines(summary: Mapping[str, Any], path: str | None = None) -> list[str]:
    ident = summary.get("identity") or {}
    lines = [f"run {ident.get('run_id')}" + (f" -> {path}" if path else "")]
    if ident.get("loop"):
        lines.append(_loop_line(ident["loop"]))
    views = summary.get("views") or {}
    for name in ("all", "valid", "no_gdrive"):
        if name in views:
            lines.append(_view_line(name, views[name]))
    lines += repeat_lines(summary.get("repeats") or {})
    masks = summary.get("masks") or {}
    if masks:
        lines.append(f"  masked     {sum(masks.values())}: " + ", ".join(f"{r} {n}" for r, n in masks.items()))
    skips = summary.get("skips") or {}
    if skips:
        lines.append(f"  skipped    {sum(skips.values())}: " + "; ".join(f"{r} ({n})" for r, n in skips.items()))
    integ = summary.get("integrity") or {}
    selected = integ.get("selected")
    lines.append(
        f"  integrity  {selected if selected is not None else '?'} selected, {integ.get('recorded', 0)} recorded, "
        f"{len(integ.get('missing') or [])} missing, {len(integ.get('duplicates') or [])} duplicate, "
        f"{len(integ.get('unexpected') or [])} unexpected, {len(integ.get('resumed') or [])} resumed"
    )
    for label in ("missing", "duplicates", "unexpected"):
        if integ.get(label):
            lines.append(f"    {label}: {_listed(integ[label])}")
    for problem in integ.get("unreadable") or []:
        lines.append(f"    unreadable: {problem}")
    if integ.get("resumed"):
        lines.append(f"    resumed (valid results kept from the earlier session): {len(integ['resumed'])}")
    domains = summary.get("domains") or {}
    if domains:
        width = max(12, *(len(d) for d in domains))
        lines.append(f"  {'domain':<{width}}  episodes  success(all)     success(valid)   raw(all)  masked  skipped")
        for domain, table in domains.items():
            a, v = table["all"], table["valid"]
            lines.append(
                f"  {domain:<{width}}  {a['episodes']:>8}  {_fraction(a['successes'], a['episodes']):>7} {pct(a['success_rate']):>6}"
                f"   {_fraction(v['successes'], v['episodes']):>7} {pct(v['success_rate']):>6}"
                f"   {pct(a['raw_rate']):>6}  {a['masked']:>6}  {a['skipped']:>7}"
            )
    usage = summary.get("usage") or {}
    if usage.get("prompt_tokens") or usage.get("completion_tokens") or usage.get("cost") is not None:
        cost = f", cost {usage['cost']:g}" if usage.get("cost") is not None else ""
        lines.append(
            f"  usage      {usage['prompt_tokens']:,} prompt + {usage['completion_tokens']:,} completion tokens{cost}"
        )
    for key, label in (("judge", "judge"), ("user_sim", "user sim")):
        if calls := summary.get(key):
            cost = f", cost {calls['cost']:g}" if calls.get("cost") is not None else ""
            failed = f", {calls['failed']} failed" if calls["failed"] else ""
            lines.append(
                f"  {label:<10} {calls['calls']} calls in {calls['tasks']} tasks{failed}, {calls['prompt_tokens']:,} prompt + "
                f"{calls['completion_tokens']:,} completion tokens{cost} (not in the agent's usage)"
            )
    dur = summary.get("durations") or {}
    total = (dur.get("phases") or {}).get("total") or {}
    if total.get("episodes"):
        wall = f", wall clock {dur['wall_seconds']:.1f} s" if dur.get("wall_seconds") is not None else ""
        lines.append(
            f"  time       {total['sum_seconds']:.1f} s in {total['episodes']} episodes "
            f"(mean {total['mean_seconds']:.1f} s){wall}"
        )
    lines += service_lines(summary.get("services") or {})
    lines += sandbox_lines(summary.get("sandboxes"))
    return lines


def sandbox_lines(sandboxes: Mapping[str, Any] | None) -> list[str]:
    """Claim time percentiles (what tasks waited for their sandbox), warm claims, sandboxes per node."""
    if not sandboxes:
        return []
    claim = sandboxes.get("claim_seconds") or {}
    pooled = sandboxes.get("pooled") or 0
    warm = (
        f"; {sandboxes.get('warm', 0)} of {pooled} pooled claims found one ready, "
        f"{sandboxes.get('pool_wait_seconds', 0.0):.1f} s waited in all"
        if pooled
        else ""
    )
    lines = [
        f"  sandboxes  {_count(sandboxes.get('claims', 0), 'claim')}: p50 {claim.get('p50', 0.0):.3f} s, "
        f"p95 {claim.get('p95', 0.0):.3f} s{warm}"
    ]
    nodes = sandboxes.get("nodes") or {}
    shown = []
    for node, entry in list(nodes.items())[:_MAX_LISTED]:
        address = entry.get("address")
        where = f" ({address})" if address and address != node else ""
        short = node[:12] if all(ch in "0123456789abcdef" for ch in node) else node  # a Ray node id, else a host
        shown.append(f"{short}{where} {entry.get('sandboxes', 0)}")
    more = f" and {len(nodes) - _MAX_LISTED} more" if len(nodes) > _MAX_LISTED else ""
    lines.append(f"  per node   {', '.join(shown)}{more}")
    return lines


def _spread(value: float | None) -> str:
    return "" if value is None else f" ± {value * 100:.1f}"


def repeat_lines(repeats: Mapping[str, Any]) -> list[str]:
    """Repeats taken together: only when a task ran more than once (k = 1 says nothing new)."""
    k = repeats.get("k") or 1
    n = repeats.get("tasks") or 0
    if k < 2 or not n:
        return []
    flaky = repeats.get("flaky_tasks") or []
    rates = ", ".join(f"r{p['repeat']} {pct(p['success_rate'])}" for p in repeats.get("per_repeat") or [])
    lines = [
        f"  repeats    k={k} over {n} tasks: pass@{k} {repeats['pass_at_k_tasks']}/{n} {pct(repeats['pass_at_k'])}, "
        f"pass^{k} {repeats['pass_hat_k_tasks']}/{n} {pct(repeats['pass_hat_k'])}, flaky {len(flaky)}",
        f"  spread     success {pct(repeats['success_rate'])}{_spread(repeats.get('std_success_rate'))}, "
        f"score {pct(repeats['mean_score'])}{_spread(repeats.get('std_mean_score'))} "
        f"(± sd over repeats: {rates})",
    ]
    if flaky:
        by_task = repeats.get("by_task") or {}
        listed = [
            f"{t} {by_task.get(t, {}).get('successes', '?')}/{by_task.get(t, {}).get('runs', '?')}" for t in flaky
        ]
        lines.append(f"  flaky      {len(flaky)}: {_listed(listed)}")
    return lines


def _interval(i: Interval | None) -> str:
    return "" if i is None else f", {i.level * 100:g}% CI [{i.low:+.1f}, {i.high:+.1f}]"


def paired_lines(c: PairedComparison) -> list[str]:
    n = len(c.pairs)
    lines = [
        f"  paired     {n} tasks in both runs ({_VIEW_LABELS[c.view]} view, repeats averaged per task, masks left out)"
    ]
    if n:
        lines.append(
            f"  success    {pct(c.base_rate)} -> {pct(c.new_rate)}: {c.change_points:+.1f} points{_interval(c.success_interval)}"
        )
        lines.append(
            f"  raw        {pct(c.base_raw)} -> {pct(c.new_raw)}: {c.raw_change_points:+.1f} points{_interval(c.raw_interval)}"
        )
        lines.append(
            f"  test       exact McNemar (sign test over tasks): {len(c.worse)} worse, {len(c.better)} better, "
            f"p = {format_p(c.p_value)}"
        )
    lines.append(f"  worse ({len(c.worse)}): " + (_listed([p.describe() for p in c.worse]) or "none"))
    lines.append(f"  better ({len(c.better)}): " + (_listed([p.describe() for p in c.better]) or "none"))
    for label, keys in (
        ("only in the baseline", c.only_base),
        ("only in this run", c.only_new),
        ("masked on a side, left out", c.masked),
        ("skipped on a side, left out", c.skipped),
    ):
        if keys:
            lines.append(f"  {label} ({len(keys)}): {_listed(keys)}")
    return lines


def comparison_lines(c: Comparison) -> list[str]:
    label = _VIEW_LABELS[c.view]
    drop = c.drop_points
    change = "-" if drop is None else (f"dropped {drop:.1f} points" if drop > 0 else f"rose {-drop:.1f} points")
    lines = [
        f"  compared   {c.compared} episodes in the {label} view: baseline {pct(c.base_rate)} -> this run {pct(c.new_rate)} ({change})"
    ]
    lines.append(f"  pass -> fail ({len(c.pass_to_fail)}): " + (_listed([str(f) for f in c.pass_to_fail]) or "none"))
    lines.append(f"  fail -> pass ({len(c.fail_to_pass)}): " + (_listed([str(f) for f in c.fail_to_pass]) or "none"))
    if c.only_base:
        lines.append(f"  only in the baseline ({len(c.only_base)}): {_listed(c.only_base)}")
    if c.only_new:
        lines.append(f"  only in this run ({len(c.only_new)}): {_listed(c.only_new)}")
    return lines


def gate_lines(result: GateResult) -> list[str]:
    verdict = "HELD" if result.held else ("FAILED (infrastructure)" if result.infrastructure else "FAILED")
    lines = [f"gate: {verdict}, exit status {result.exit_status}"]
    if result.verdict:
        lines.append(f"  {result.verdict}")
    lines += [f"  FAIL: {f}" for f in result.failures]
    lines += [f"  note: {n}" for n in result.notes]
    if result.paired is not None:
        lines += paired_lines(result.paired)
    if result.comparison is not None:
        lines += comparison_lines(result.comparison)
    return lines


def power_lines(table: PowerTable) -> list[str]:
    """The power of the gate per tasks x repeats, and the fewest tasks that reach the target per repeat count."""
    repeats = sorted({c.repeats for c in table.cells})
    counts = sorted({c.tasks for c in table.cells})
    flakiness = (
        f"{table.flaky_tasks} of {table.observed_tasks} tasks flaky over k={table.observed_k}"
        if table.observed_k > 1
        else "flakiness unknown from a run without repeats (assumed none): measure it with --osworld-repeat 3"
    )
    lines = [
        f"power to detect a {table.drop:g}-point drop (alpha {table.alpha:g}, allowed drop {table.max_drop:g}), "
        f"from {table.observed_tasks} tasks at {pct(table.success_rate)} success; {flakiness}",
        "  tasks  " + "".join(f"{f'x{r} repeats':>12}" for r in repeats),
    ]
    power = {(c.tasks, c.repeats): c.power for c in table.cells}
    for n in counts:
        lines.append(f"  {n:>5}  " + "".join(f"{power[(n, r)] * 100:>11.0f}%" for r in repeats))
    for r in repeats:
        cell = table.smallest(r)
        needed = (
            f"{cell.tasks} tasks x {r} ({cell.tasks * r} episodes per run)" if cell else f"more than {counts[-1]} tasks"
        )
        lines.append(f"  {table.target * 100:g}% power with {r} repeat{'s' if r > 1 else ''}: {needed}")
    return lines
