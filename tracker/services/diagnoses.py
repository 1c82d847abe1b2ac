"""Diagnoses: for a task's strictly failing configs, ask the engine which side is off a float64 oracle,
the smallest input that shows the same failure and a repro script (`python -m apitester diagnose`,
docs/diagnosis.md), and store one Diagnosis per config.

Each config is diagnosed in its own `python -m apitester diagnose --json` process on this host's main
environment (the CPU lane's Paddle): a config that crashes or hangs Paddle costs that process, never the
worker, and DIAGNOSE_TIMEOUT bounds it. A task's configs are taken one per kind of failure first
(strict status, direction, input dtypes), smallest first, so the first few diagnoses already reach the
task's distinct failures; DIAGNOSE_MAX_CONFIGS bounds how many a task gets per request.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import defaultdict

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from apitester.config import ConfigSyntaxError, parse_config
from apitester.vocab import ReadingSource, Status, is_failing

from ..models import ConfigResult, Diagnosis, Source, Task
from ..selectors.envs import main_version, torch_version
from ..selectors.diagnoses import diagnosable_results
from ..vocab import EventKind
from . import latest
from .events import record_event
from .queue import cpu_queue
from .runs import bigint_or_none

log = logging.getLogger(__name__)

DIAGNOSE_TASK = "tracker.tasks.diagnose_tasks_task"
_TEXT_LIMIT = 200_000  # a repro script with literal inputs stays far below this; a runaway one is cut


def _failure_kind(result: ConfigResult) -> tuple:
    """The kind of failure a config shows before any diagnosis: status, direction and input dtypes."""
    try:
        dtypes = tuple(sorted({t.dtype for t in parse_config(result.failing_config.config).tensors()}))
    except ConfigSyntaxError:
        dtypes = ()
    return result.strict_status or result.status, result.strict_direction or result.direction, dtypes


def diagnosis_targets(task: Task, limit: int | None = None) -> list[ConfigResult]:
    """The task's newest CPU verdicts that fail strictly: one per kind of failure first, smallest first."""
    limit = settings.DIAGNOSE_MAX_CONFIGS if limit is None else limit
    failing = diagnosable_results(task)
    failing.sort(key=lambda r: (r.total_elements or 0, r.failing_config_id))
    by_kind: dict[tuple, list[ConfigResult]] = defaultdict(list)
    for result in failing:
        by_kind[_failure_kind(result)].append(result)
    first = [results[0] for results in by_kind.values()]
    rest = [r for r in failing if r not in first]
    return (first + rest)[:limit]


def diagnose_command(result: ConfigResult) -> list[str]:
    command = [sys.executable, "-m", "apitester", "diagnose", "--json"]
    if result.draw:
        command += ["--draw", result.draw]
    # the threads the verdict was judged at (a reduction's result moves with them; None: a run from before #46)
    command += ["--threads", str((result.run.threads if result.run_id else None) or 1)]
    # "--": the config is the positional argument whatever it starts with (a config "--max-trials=1" is a config)
    return command + ["--", result.failing_config.config]


def run_engine(result: ConfigResult) -> dict:
    """The engine's diagnosis of one stored verdict (its config and draw), or {"error": why}."""
    try:
        done = subprocess.run(diagnose_command(result), capture_output=True, text=True, timeout=settings.DIAGNOSE_TIMEOUT,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
    except subprocess.TimeoutExpired:
        return {"error": f"the diagnosis took longer than DIAGNOSE_TIMEOUT ({settings.DIAGNOSE_TIMEOUT:.0f} s)"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"the engine exited {done.returncode} without a diagnosis: {tail[0][:500]}"}
    try:
        data = json.loads(lines[-1])
    except json.JSONDecodeError as exc:
        return {"error": f"the engine's answer is not JSON ({exc})"}
    return data if isinstance(data, dict) else {"error": "the engine's answer is not a JSON object"}


def _text(value, limit: int = _TEXT_LIMIT) -> str:
    return str(value or "")[:limit]


def _seconds(value) -> float:
    try:
        seconds = float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return seconds if 0.0 <= seconds < 1e9 else 0.0  # NaN and inf fail the comparison


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def diagnosis_fields(data: dict) -> dict:
    """Diagnosis columns from the engine's JSON (apitester.diagnosis.diagnose.diagnose_config, schema 1)."""
    if "error" in data:
        return {"state": Diagnosis.State.ERROR, "message": _text(data["error"], 5000)}
    if not data.get("diagnosed"):
        return {"state": Diagnosis.State.ERROR, "message": _text(data.get("reason") or "not diagnosed", 5000),
                "status": _text(_dict(data.get("verdict")).get("strict_status"), 30)}
    failure, shrink, repro = _dict(data.get("failure")), _dict(data.get("shrink")), _dict(data.get("repro"))
    return {
        "state": Diagnosis.State.DONE,
        "status": _text(failure.get("status"), 30), "direction": _text(failure.get("direction"), 10),
        "reading": _text(_dict(data.get("reading")).get("reading"), 30),
        "signature": _text(_dict(data.get("signature")).get("hash"), 64),
        "shrunk_config": _text(shrink.get("config"), 20_000),
        "elements_before": bigint_or_none(shrink.get("elements_before")), "elements_after": bigint_or_none(shrink.get("elements_after")),
        "trials": bigint_or_none(shrink.get("trials")) or 0, "seconds": _seconds(data.get("seconds")),
        "repro": _text(repro.get("script")), "command": _text(repro.get("command"), 20_000),
        "paddle_version": main_version(), "torch_version": torch_version(),
    }


def _source_words(source) -> str:
    """The reading's source in the event's words: what named Torch the side off."""
    return {ReadingSource.GRADIENT_CHECK: "float64 gradient check",
            ReadingSource.INPUT_SHAPE: "the gradient's shape against its input's"}.get(source, "float64 oracle")


def apply_implied_verdict(result: ConfigResult, data: dict, diagnosis: Diagnosis | None = None) -> bool:
    """The final verdict a diagnosis implies (issue 19): a strict failure whose failing output the float64
    oracle reads torch_off -- or whose gradient the float64 gradient check reads Torch's off (issue 34; the
    implied verdict's ``source``) -- becomes torch_suspect, with that source's evidence; the engine's own
    final status is kept in engine_status, so a later diagnosis with another reading restores it.  The
    strict layer is never touched, so "fix verified" still reads it.  An engine error changes nothing.
    A change is a state change of the task's verdicts: it is written as an Event (verdict_reread) naming the
    diagnosis. Returns whether the row changed."""
    if "error" in data or not data.get("diagnosed"):
        return False
    implied = _dict(data.get("implied_verdict"))
    if implied.get("status") == Status.TORCH_SUSPECT and (is_failing(result.status) or result.engine_status):
        fields = {"status": Status.TORCH_SUSPECT.value, "evidence": _text(implied.get("evidence"), 5000),
                  "engine_status": result.engine_status or result.status}
    elif not implied and result.engine_status:
        fields = {"status": result.engine_status, "evidence": "", "engine_status": ""}
    else:
        return False
    if all(getattr(result, name) == value for name, value in fields.items()):
        return False
    before = result.status
    for name, value in fields.items():
        setattr(result, name, value)
    result.save(update_fields=list(fields))
    latest.restatus(result, before)
    why = (f"the {_source_words(implied.get('source'))} reads Torch off" if fields["status"] == Status.TORCH_SUSPECT
           else "the engine's own status: the diagnosis no longer reads Torch off")
    record_event(task=result.task, kind=EventKind.VERDICT_REREAD, source=Source.DIAGNOSIS,
                 source_ref=f"diagnosis {diagnosis.pk}" if diagnosis else "",
                 message=f"config {result.failing_config_id} in run {result.run_id}: {before} → {result.status} ({why})",
                 data={"run": result.run_id, "failing_config": result.failing_config_id, "result": result.pk,
                       "from": before, "to": result.status})
    return True


def store_diagnosis(result: ConfigResult, data: dict) -> Diagnosis:
    """Write one config's diagnosis (an error is stored too, with why: the page says it could not be done)
    and the final verdict it implies, in one transaction (the engine ran before it, outside)."""
    fields = diagnosis_fields(data)
    stored = data if len(json.dumps(data, default=str)) <= 2 * _TEXT_LIMIT else {"truncated": True}
    with transaction.atomic():
        diagnosis = Diagnosis.objects.create(task_id=result.task_id, failing_config_id=result.failing_config_id,
                                             result=result, data=stored, **fields)
        apply_implied_verdict(result, data, diagnosis)
    return diagnosis


def diagnose_task(task: Task, limit: int | None = None) -> list[Diagnosis]:
    """Diagnose the task's strictly failing configs (diagnosis_targets), one engine process each."""
    stored = []
    for result in diagnosis_targets(task, limit):
        stored.append(store_diagnosis(result, run_engine(result)))
        log.info("diagnosed No.%s %s: %s", task.number, result.failing_config_id, stored[-1].reading or stored[-1].state)
    return stored


def diagnose_tasks(numbers: list[int], limit: int | None = None) -> dict[int, int]:
    """The queued job's work: task number -> diagnoses stored."""
    return {task.number: len(diagnose_task(task, limit))
            for task in Task.objects.filter(number__in=numbers).order_by("number")}


def start_diagnosis(tasks: list[Task], limit: int | None = None) -> str:
    """Queue the diagnosis of these tasks on the CPU queue (``limit`` configs each, default DIAGNOSE_MAX_CONFIGS);
    returns django-q2's task id."""
    numbers = sorted(task.number for task in tasks)
    return async_task(DIAGNOSE_TASK, numbers, limit, cluster=cpu_queue(), group="diagnoses",
                      task_name=f"diagnose-{len(numbers)}-tasks-{timezone.now():%H%M%S%f}")
