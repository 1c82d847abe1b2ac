"""Import one PaddleAPITest run directory (write path of `import_reports DIR --kernel cpu|gpu`).

`apitester.reports.run_dirs.read_run_dir` reads the class files (both vocabularies), the checkpoint and the log and
chooses one final class per config. Here:
- a config whose final class is a Paddle failure (`run_dirs.PADDLE_FAILURE`) and whose API has a task of the
  given kernel becomes that task's FailingConfig (added if missing; a stored one is left as it is);
- every config of a task that is stored as a FailingConfig (just added or already there) gets one
  `ExternalResult`: PaddleAPITest's final class, all its classes, what its log said — under one `ExternalRun`
  labelled with the run's device, date and tolerance rule. These are PaddleAPITest's outcomes, kept apart
  from this board's runs and verdicts;
- everything else is counted, not stored (a passing config the board never held, an API without a task).

All or nothing: a malformed line anywhere (class file or log) refuses the whole import, listing every such
line as file:line, and nothing is written. Importing the same run (same class files, same kernel) again
changes nothing.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from apitester.reports.run_dirs import CLASS_GROUPS, RunDirectory, read_run_dir

from ..models import ExternalResult, ExternalRun, FailingConfig, Source, Task
from ..vocab import EventKind, Kernel
from .events import record_event
from .report_import import API_ALIASES, config_hash


class RunDirRefused(ValueError):
    """The run directory cannot be imported as it is; `lines` says where (file:line) and why."""

    def __init__(self, message: str, lines: list[str] | None = None):
        super().__init__(message)
        self.lines = lines or []


@dataclass
class RunDirImportResult:
    root: str
    kernel: str
    reading: RunDirectory
    run: ExternalRun | None = None
    already_imported: bool = False
    configs_added: int = 0  # FailingConfigs created for failing configs
    results_stored: int = 0  # ExternalResults written
    failing_without_task: Counter = field(default_factory=Counter)  # api → failing configs of an API with no task
    not_stored: Counter = field(default_factory=Counter)  # class → configs with no FailingConfig on the board
    per_task: dict[int, tuple[int, int]] = field(default_factory=dict)  # task number → (configs added, results)
    seconds: float = 0.0


def run_fingerprint(root: Path, reading: RunDirectory, kernel: str) -> str:
    digest = hashlib.sha256(kernel.encode())
    for item in reading.files:
        digest.update(item.rel.encode() + b"\0" + (root / item.rel).read_bytes() + b"\0")
    return digest.hexdigest()


def _task_for(tasks: list[Task], kernel: str):
    by_api: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        if task.kernel == kernel:
            by_api[task.api].append(task)

    def lookup(api: str) -> Task | None:
        candidates = by_api.get(api) or by_api.get(API_ALIASES.get(api, ""))
        if not candidates:
            return None
        # Two tasks of one API (copysign, cumsum on GPU): the one not locked to dtype differences takes them,
        # as the report import does for a category that is not about dtypes.
        others = [t for t in candidates if "dtype" not in t.locked_reason.lower()]
        return (others or candidates)[0]

    return lookup


def _run_label(root: Path, reading: RunDirectory, kernel: str) -> dict:
    """Device, date and tolerance rule as the run's own log states them; else said to come from elsewhere."""
    log = reading.log
    if log.test_cpu:
        device = "CPU"
    elif log.gpus:
        device = "GPU " + ", ".join(sorted(log.gpus, key=lambda g: (len(g), g)))
    else:
        device = kernel
    if log.run_started:
        run_date, date_from = log.run_started.date(), "log"
    else:
        newest = max(((root / f.rel).stat().st_mtime for f in reading.files), default=None)
        run_date = dt.datetime.fromtimestamp(newest, dt.timezone.utc).date() if newest else None
        date_from = "files" if newest else ""
    rules = [f"{name}={value}" for name, value in (("atol", log.atol), ("rtol", log.rtol)) if value]
    return {"device": device[:100], "run_date": run_date, "date_from": date_from, "paddle_version": log.paddle_version,
            "tolerance": ", ".join(rules)}


def _summary(reading: RunDirectory) -> dict:
    return {
        "checkpointed": reading.checkpointed, "unclassified": reading.unclassified,
        "in_two_classes": [{"config": c.config, "classes": c.classes, "final": c.result_class}
                           for c in reading.in_two_classes][:200],
        "files": [{"file": f.rel, "class": f.written_class, "as": f.result_class, "vocabulary": f.vocabulary,
                   "lines": f.lines, "configs": f.configs} for f in reading.files],
        "files_not_read": reading.not_read, "log_cases": reading.log.cases, "log_unfinished": reading.log.unfinished,
        "device_from": "log" if (reading.log.test_cpu or reading.log.gpus) else "kernel",
    }


def import_run_dir(root: str | Path, kernel: str, *, when=None) -> RunDirImportResult:
    started = timezone.now()
    root = Path(root)
    kernel = kernel.upper()
    if kernel not in Kernel.values:
        raise RunDirRefused(f"--kernel must be cpu or gpu, not {kernel.lower()!r}")
    reading = read_run_dir(root)
    if reading.malformed:
        raise RunDirRefused(f"{len(reading.malformed)} malformed line(s) in {root}; nothing was imported",
                            [str(m) for m in reading.malformed])
    if not reading.files:
        raise RunDirRefused(f"{root} holds no api_config_<class>.txt of a known class")
    result = RunDirImportResult(root=str(root), kernel=kernel, reading=reading)
    fingerprint = run_fingerprint(root, reading, kernel)
    existing = ExternalRun.objects.filter(fingerprint=fingerprint).first()
    if existing:
        result.run, result.already_imported = existing, True
    else:
        with transaction.atomic():
            _store(result, fingerprint, when or started)
    result.seconds = (timezone.now() - started).total_seconds()
    return result


def _plan(result: RunDirImportResult, tasks: list[Task]) -> tuple[list, list]:
    """(failing configs to add, [(task, config hash, RunConfig)] to record) — reads only."""
    lookup = _task_for(tasks, result.kernel)
    stored = {(task_id, digest): pk for pk, task_id, digest in FailingConfig.objects.filter(
        task__kernel=result.kernel).values_list("pk", "task_id", "config_hash")}
    to_add, to_record = [], []
    for run_config in result.reading.configs.values():
        task = lookup(run_config.api)
        failing = CLASS_GROUPS[run_config.result_class] == "paddle"
        if task is None:
            if failing:
                result.failing_without_task[run_config.api] += 1
            else:
                result.not_stored[run_config.result_class] += 1
            continue
        digest = config_hash(run_config.config)
        if (task.id, digest) not in stored:
            if not failing:
                result.not_stored[run_config.result_class] += 1
                continue
            to_add.append((task, digest, run_config))
        to_record.append((task, digest, run_config))
    return to_add, to_record


def _store(result: RunDirImportResult, fingerprint: str, when) -> None:
    reading = result.reading
    tasks = list(Task.objects.all())
    to_add, to_record = _plan(result, tasks)
    label = _run_label(reading.root, reading, result.kernel)
    run = ExternalRun.objects.create(
        source=str(reading.root)[-500:], fingerprint=fingerprint, kernel=result.kernel, vocabulary=reading.vocabulary,
        per_class=reading.per_class(), summary=_summary(reading), imported_at=when, **label)
    FailingConfig.objects.bulk_create([FailingConfig(
        task=task, config=rc.config, config_hash=digest, origin_file=f"{reading.root.name}/{rc.file}",
        origin_date=label["run_date"], category=rc.result_class,
        origins=[{"file": f"{reading.root.name}/{rc.file}", "date": label["run_date"].isoformat() if label["run_date"] else "",
                  "category": rc.result_class}],
        first_seen=label["run_date"], last_seen=label["run_date"], in_latest_report=True,
    ) for task, digest, rc in to_add], batch_size=2000)
    ids = dict(((task_id, digest), pk) for pk, task_id, digest in FailingConfig.objects.filter(
        task__kernel=result.kernel).values_list("pk", "task_id", "config_hash"))
    ExternalResult.objects.bulk_create([ExternalResult(
        run=run, task=task, failing_config_id=ids[(task.id, digest)], result_class=rc.result_class,
        written_class=rc.written_class, classes=rc.classes, class_file=rc.file, class_line=rc.line,
        log_outcome=rc.log_outcome, log_line=rc.log_line, duration_ms=rc.duration_ms,
    ) for task, digest, rc in to_record], batch_size=2000)
    result.run, result.configs_added, result.results_stored = run, len(to_add), len(to_record)
    _record_events(result, to_add, to_record, when)


def _record_events(result: RunDirImportResult, to_add, to_record, when) -> None:
    added = Counter(task.number for task, _, _ in to_add)
    recorded = Counter(task.number for task, _, _ in to_record)
    by_number = {task.number: task for task, _, _ in to_record}
    run = result.run
    for number in sorted(recorded):
        result.per_task[number] = (added[number], recorded[number])
        record_event(
            task=by_number[number], kind=EventKind.CONFIGS_IMPORTED, source=Source.IMPORT, source_ref=run.source,
            message=(f"PaddleAPITest run ({run.device}, {run.run_date or 'undated'}): {added[number]} failing "
                     f"config(s) added, {recorded[number]} PaddleAPITest result(s) stored"),
            data={"created": added[number], "external_results": recorded[number], "external_run": run.pk},
            when=when,
        )
    record_event(
        task=None, kind=EventKind.REPORT_IMPORT, source=Source.IMPORT, source_ref=run.source,
        message=(f"PaddleAPITest run directory ({run.vocabulary} classes, {run.device}, {run.run_date or 'undated'}): "
                 f"{result.configs_added} failing configs added, {result.results_stored} results stored"),
        data={"external_run": run.pk, "per_class": run.per_class, "configs_added": result.configs_added,
              "results_stored": result.results_stored, "not_stored": dict(result.not_stored),
              "failing_without_task": dict(result.failing_without_task)},
        when=when,
    )
