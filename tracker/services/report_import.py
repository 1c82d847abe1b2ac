"""Attach PaddleAPITest's failing configs to the board's tasks (write path of `import_reports`).

A config belongs to the task with the same API name and kernel (ci_ce_cpu → CPU task, ci_ce_gpu → GPU
task), with two aliases: paddle.Tensor.mul ↔ paddle.Tensor.__mul__, paddle.Tensor.getitem ↔
paddle.Tensor.__getitem__. Two GPU APIs have two tasks each (paddle.copysign 13/164, paddle.cumsum
16/167): the locked "output dtype类型不同" task takes the configs whose category is about dtypes
(dtype_diff, amp_dtype_diff) and the other task the rest.

Everything is written with bulk operations: ~47k distinct configs import in seconds. Re-importing the
same files changes nothing. Configs no longer in any file stay stored (results may point at them).
"""
from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from apitester.reports import CONFIG_NAME_TO_TASK, TASK_NAME_ALIASES, ConfigTimeline, build_index

from ..models import FailingConfig, Source, Task
from ..vocab import EventKind
from .events import record_event

# Task name <-> traced config name, both ways (e.g. paddle.Tensor.mul <-> paddle.Tensor.__mul__).
API_ALIASES = {**TASK_NAME_ALIASES, **CONFIG_NAME_TO_TASK}

_FIELDS = ("config", "origin_file", "origin_date", "category", "origins", "first_seen", "last_seen", "in_latest_report", "gone_since")


def config_hash(config: str) -> str:
    return hashlib.sha256(config.strip().encode("utf-8")).hexdigest()


@dataclass
class ReportImportResult:
    root: str
    files: int = 0
    configs_read: int = 0  # distinct (kernel, config) pairs in the files
    attached: int = 0  # of those, configs attached to a task
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    malformed: list[str] = field(default_factory=list)
    # (kernel, api) → number of distinct configs whose API has no task on the board
    without_task: Counter = field(default_factory=Counter)
    tasks_without_configs: list[Task] = field(default_factory=list)
    per_task_changes: dict[int, tuple[int, int]] = field(default_factory=dict)  # task number → (created, updated)
    seconds: float = 0.0

    @property
    def without_task_configs(self) -> int:
        return sum(self.without_task.values())


def _task_lookup(tasks: list[Task]):
    by_key: dict[tuple[str, str], list[Task]] = defaultdict(list)
    for task in tasks:
        by_key[(task.api, task.kernel)].append(task)

    def task_for(timeline: ConfigTimeline) -> Task | None:
        candidates = by_key.get((timeline.api, timeline.kernel)) or by_key.get((API_ALIASES.get(timeline.api, ""), timeline.kernel))
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        about_dtype = "dtype" in timeline.newest_origin["category"]
        dtype_tasks = [t for t in candidates if "dtype" in t.locked_reason.lower()]
        other_tasks = [t for t in candidates if t not in dtype_tasks]
        preferred = dtype_tasks if about_dtype else other_tasks
        return (preferred or candidates)[0]

    return task_for


def _desired_fields(timeline: ConfigTimeline) -> dict:
    newest = timeline.newest_origin
    return {
        "config": timeline.config,
        "origin_file": newest["file"],
        "origin_date": dt.date.fromisoformat(newest["date"]) if newest["date"] else None,
        "category": newest["category"],
        "origins": timeline.origins,
        "first_seen": timeline.first_seen,
        "last_seen": timeline.last_seen,
        "in_latest_report": timeline.in_latest_report,
        "gone_since": timeline.gone_since,
    }


def import_reports(root: str | Path, *, when=None) -> ReportImportResult:
    started = timezone.now()
    when = when or started
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"reports directory {root} does not exist")
    index = build_index(root)
    result = ReportImportResult(root=str(root), files=len(index.files), configs_read=len(index.configs))
    result.malformed = [str(m) for m in index.malformed]
    tasks = list(Task.objects.all())
    task_for = _task_lookup(tasks)

    desired: dict[tuple[int, str], tuple[Task, dict]] = {}
    for timeline in index.configs.values():
        task = task_for(timeline)
        if task is None:
            result.without_task[(timeline.kernel, timeline.api)] += 1
            continue
        desired[(task.id, config_hash(timeline.config))] = (task, _desired_fields(timeline))
    result.attached = len(desired)

    # Plain rows instead of model instances: comparing 46k configs should not build 46k objects.
    existing = {
        (row[1], row[2]): row
        for row in FailingConfig.objects.order_by().values_list("id", "task_id", "config_hash", *_FIELDS).iterator(chunk_size=5000)
    }
    to_create, to_update = [], []
    created_per_task: Counter = Counter()
    updated_per_task: Counter = Counter()
    for key, (task, fields) in desired.items():
        current = existing.get(key)
        if current is None:
            to_create.append(FailingConfig(task=task, config_hash=key[1], **fields))
            created_per_task[task.number] += 1
            continue
        if any(current[3 + i] != fields[name] for i, name in enumerate(_FIELDS)):
            to_update.append(FailingConfig(id=current[0], task=task, config_hash=key[1], **fields))
            updated_per_task[task.number] += 1
    result.created, result.updated = len(to_create), len(to_update)
    result.unchanged = len(desired) - result.created - result.updated

    by_number = {t.number: t for t in tasks}
    with transaction.atomic():
        FailingConfig.objects.bulk_create(to_create, batch_size=2000)
        FailingConfig.objects.bulk_update(to_update, _FIELDS, batch_size=1000)
        for number in sorted(set(created_per_task) | set(updated_per_task)):
            created, updated = created_per_task[number], updated_per_task[number]
            result.per_task_changes[number] = (created, updated)
            record_event(
                task=by_number[number], kind=EventKind.CONFIGS_IMPORTED, source=Source.IMPORT, source_ref=str(root),
                message=f"{created} failing config(s) added, {updated} updated from the PaddleAPITest reports",
                data={"created": created, "updated": updated},
                when=when,
            )
        if to_create or to_update:
            record_event(
                task=None, kind=EventKind.REPORT_IMPORT, source=Source.IMPORT, source_ref=str(root),
                message=(f"{result.created} added, {result.updated} updated, {result.unchanged} unchanged; "
                         f"{result.without_task_configs} configs of {len(result.without_task)} APIs without a task"),
                data={
                    "files": result.files, "created": result.created, "updated": result.updated,
                    "without_task": [{"kernel": k, "api": a, "configs": n} for (k, a), n in sorted(result.without_task.items())],
                    "malformed": result.malformed[:200],
                },
                when=when,
            )
    with_configs = set(FailingConfig.objects.values_list("task_id", flat=True).distinct())
    result.tasks_without_configs = [t for t in tasks if t.id not in with_configs]
    result.tasks_without_configs.sort(key=lambda t: t.number)
    result.seconds = (timezone.now() - started).total_seconds()
    return result
