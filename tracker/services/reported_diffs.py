"""Store what PaddleAPITest's logs say about each failing config (write path of `import_reports --logs`).

`apitester.reports.report_logs.read_logs` reads every error_log.log; each failure is attached to the stored
FailingConfig with the same config text whose task tests the same device (the log's ci_ce_cpu /
ci_ce_gpu), one `ReportedDiff` per (config, log file, result line). A failure whose config is not stored
(the import of the config files did not attach it to a task) is counted, not stored.

Re-importing the same logs changes nothing. A log's rows that its new reading no longer holds are
deleted only when every block of that log was read: an unparseable block is reported (file:line) and
changes nothing stored — neither its own row nor any other of its log.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from apitester.reports.report_logs import ReportedFailure, read_logs

from ..models import FailingConfig, ReportedDiff, Source
from ..vocab import EventKind
from .events import record_event
from .report_import import config_hash

_FIELDS = ("task_id", "report_date", "device", "category", "kind", "direction", "mismatched", "total", "max_abs",
           "max_rel", "message")


@dataclass
class ReportedDiffImportResult:
    root: str
    logs: int = 0
    blocks: int = 0
    begun_without_result: int = 0
    unparseable: list[str] = field(default_factory=list)
    without_config: int = 0  # failures whose config is not stored for a task of that device
    created: int = 0
    updated: int = 0
    deleted: int = 0
    unchanged: int = 0
    seconds: float = 0.0


def _number(value: float | None) -> float | None:
    """A difference as every database stores it: SQLite turns NaN into NULL, so a `nan` the report printed is
    stored as unknown (None) everywhere; ±inf is kept."""
    return None if value is None or math.isnan(value) else value


def _fields(failure: ReportedFailure, task_id: int) -> dict:
    return {
        "task_id": task_id, "report_date": failure.date, "device": failure.device, "category": failure.category,
        "kind": failure.kind, "direction": failure.direction, "mismatched": failure.mismatched,
        "total": failure.total, "max_abs": _number(failure.max_abs), "max_rel": _number(failure.max_rel),
        "message": failure.message,
    }


def _configs_by_hash() -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(device, config hash) → [(failing config id, task id)] (one config text may belong to two tasks)."""
    found: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    rows = FailingConfig.objects.order_by().values_list("id", "task_id", "task__kernel", "config_hash")
    for config_id, task_id, kernel, digest in rows.iterator(chunk_size=5000):
        found[(kernel, digest)].append((config_id, task_id))
    return found


def import_reported_diffs(root: str | Path, *, when=None) -> ReportedDiffImportResult:
    started = timezone.now()
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"reports directory {root} does not exist")
    reading = read_logs(root)
    result = ReportedDiffImportResult(
        root=str(root), logs=reading.logs, blocks=reading.blocks, begun_without_result=reading.begun_without_result,
        unparseable=[str(u) for u in reading.unparseable])
    configs = _configs_by_hash()
    desired: dict[tuple[int, str, int], dict] = {}
    for failure in reading.failures:
        owners = configs.get((failure.device, config_hash(failure.config)))
        if not owners:
            result.without_config += 1
            continue
        for config_id, task_id in owners:
            desired[(config_id, failure.file, failure.line)] = _fields(failure, task_id)
    complete_logs = {f.file for f in reading.failures} - {u.file for u in reading.unparseable}

    existing = {
        (row[1], row[2], row[3]): row
        for row in ReportedDiff.objects.order_by().values_list("id", "failing_config_id", "log_file", "log_line", *_FIELDS)
        .iterator(chunk_size=5000)
    }
    to_create, replaced = [], []
    for key, fields in desired.items():
        current = existing.get(key)
        row = ReportedDiff(failing_config_id=key[0], log_file=key[1], log_line=key[2], **fields)
        if current is None:
            to_create.append(row)
        elif any(current[4 + i] != fields[name] for i, name in enumerate(_FIELDS)):
            replaced.append(current[0])
            to_create.append(row)
    stale = [row[0] for key, row in existing.items() if key not in desired and key[1] in complete_logs]
    # A changed row is replaced, not updated in place: its new id moves the task page's data version.
    result.created, result.updated, result.deleted = len(to_create) - len(replaced), len(replaced), len(stale)
    result.unchanged = len(desired) - result.created - result.updated
    with transaction.atomic():
        ReportedDiff.objects.filter(id__in=stale + replaced).delete()
        ReportedDiff.objects.bulk_create(to_create, batch_size=2000)
        if to_create or replaced or stale:
            record_event(
                task=None, kind=EventKind.REPORT_IMPORT, source=Source.IMPORT, source_ref=str(root),
                message=(f"reported diffs from {result.logs} logs: {result.created} added, {result.updated} updated, "
                         f"{result.deleted} removed, {result.unchanged} unchanged; {len(result.unparseable)} unparseable blocks"),
                data={"logs": result.logs, "created": result.created, "updated": result.updated, "deleted": result.deleted,
                      "unparseable": result.unparseable[:200]},
                when=when or started,
            )
    result.seconds = (timezone.now() - started).total_seconds()
    return result
