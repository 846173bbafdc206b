"""Selection markers of an OSWorld-V2 task, each from a fact its file states (see ``reader.py``)."""

from __future__ import annotations

from pytest_osworld.v2.reading.task_file import V2Task

V2_MARKERS: dict[str, str] = {
    "v2": "an OSWorld-V2 task (a Python task class, collected without importing it)",
    "llm_judge": "the V2 task's evaluation calls an LLM judge (model_client, llm_metrics, OSWORLD_EVAL_MODEL_*)",
    "user_sim": "the V2 task has a simulated user (a user_simulator attribute)",
    "multi_phase": "the V2 task is a MultiPhaseTask",
    "needs_services": "the V2 task needs a shared service: the mock websites, GitLab or a proxy",
    "service(name)": "the V2 task needs this service: website, gitlab or proxy; select with -m \"service(name='website')\"",
    "capability(name)": "the V2 task is in this capability split; select with -m \"capability(name='tutorial_following')\"",
}

# (name, keyword arguments): the module knows nothing of pytest, the plugin makes the marks.
Marker = tuple[str, dict[str, str]]


def v2_markers(task: V2Task) -> list[Marker]:
    """The markers a V2 task's item carries, in a stable order."""
    names = ["osworld", "v2"]
    if task.llm_judge:
        names.append("llm_judge")
    if task.user_sim:
        names.append("user_sim")
    if task.multi_phase:
        names.append("multi_phase")
    if task.proxy:
        names.append("needs_proxy")  # v1's marker for the same flag, so one -m selects both
    services = task.services
    if services:
        names.append("needs_services")
    marks: list[Marker] = [(name, {}) for name in names]
    marks += [("service", {"name": s}) for s in services]
    marks += [("capability", {"name": c}) for c in task.capabilities]
    marks += [("app", {"name": a}) for a in dict.fromkeys(task.related_apps)]
    return marks
