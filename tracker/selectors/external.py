"""What imported PaddleAPITest runs say about a task's configs (`ExternalRun` / `ExternalResult`).

PaddleAPITest's own outcome, labelled with its run's device, date and tolerance rule: read for the task page's
own panel, never merged into this board's verdicts (runs, verification, charts read ConfigResult only).
"""
from __future__ import annotations

from collections import Counter

from apitester.reports.run_dirs import CLASS_GROUPS, CLASS_PRECEDENCE

from ..models import ExternalResult, Task

ROWS_PER_RUN = 50  # a task page lists at most this many configs per imported run (the counts cover all)


def task_external_runs(task: Task) -> list[dict]:
    """One entry per imported run holding results of this task, newest run first: its label, the count per
    final class, and up to ROWS_PER_RUN configs (failing classes first)."""
    order = {name: i for i, name in enumerate(CLASS_PRECEDENCE)}
    rows = (ExternalResult.objects.filter(task=task).select_related("run")
            .order_by("-run__run_date", "-run_id", "pk")
            .values("run_id", "run__device", "run__run_date", "run__date_from", "run__tolerance",
                    "run__paddle_version", "run__vocabulary", "run__source", "result_class", "classes",
                    "log_outcome", "class_file", "class_line", "failing_config__config"))
    runs: dict[int, dict] = {}
    for row in rows:
        entry = runs.setdefault(row["run_id"], {
            "id": row["run_id"], "device": row["run__device"], "date": row["run__run_date"],
            "date_from": row["run__date_from"], "tolerance": row["run__tolerance"],
            "paddle_version": row["run__paddle_version"], "vocabulary": row["run__vocabulary"],
            "counts": Counter(), "rows": []})
        entry["counts"][row["result_class"]] += 1
        entry["rows"].append({
            "config": row["failing_config__config"], "result_class": row["result_class"],
            "failing": CLASS_GROUPS.get(row["result_class"]) == "paddle",
            "other_classes": [c for c in row["classes"] if c != row["result_class"]],
            "log_outcome": row["log_outcome"], "where": f"{row['class_file']}:{row['class_line']}"})
    for entry in runs.values():
        entry["counts"] = sorted(entry["counts"].items(), key=lambda kv: order.get(kv[0], len(order)))
        entry["total"] = len(entry["rows"])
        entry["rows"] = sorted(entry["rows"], key=lambda r: order.get(r["result_class"], len(order)))[:ROWS_PER_RUN]
    return list(runs.values())
