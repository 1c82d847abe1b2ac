"""Each config's newest verdict per (task it was judged under, lane, its run's release, Paddle version): the
LatestResult rows the "latest" selectors read instead of scanning every result (issue #45); and how many results it
has per build and status: the ResultCount rows flakiness reads (selectors.flakiness).

``record`` is called by ``runs.store_result`` in the transaction that stores the verdict. Whatever writes results
another way fills the rows of the configs it touched again with ``rebuild``: a bulk write (the synthetic board, a
benchmark's or a test's fixture), the data migration (every config), and a deletion (``delete_runs``,
``delete_results``: the admin's), after which an older verdict may be the newest again.
"""
from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Max, Value
from django.db.models.functions import Coalesce, NullIf

from ..models import ConfigResult, LatestResult, ResultCount, TestRun

BATCH = 2000  # configs per rebuild step: one grouped query and one bulk insert each


def record(result: ConfigResult, run: TestRun) -> None:
    """``result`` (just stored into ``run``) is its key's newest verdict unless a later run's verdict is there. A run
judged against another Torch than the project's (``TestRun.torch``) measures the reference's drift: never a row."""
    if run.torch:
        return
    _count(_count_key(result, run), result.status, +1)
    key = {"failing_config_id": result.failing_config_id, "task_id": result.task_id, "lane": run.lane,
           "release": run.release, "version": result.paddle_version or run.paddle_version}
    newest = {"run_id": run.pk, "result_id": result.pk, "status": result.status, "exact": result.exact}
    rows = LatestResult.objects.filter(**key)
    if rows.filter(run_id__lt=run.pk).update(**newest) or rows.exists():
        return
    try:
        with transaction.atomic():
            LatestResult.objects.create(**key, **newest)
    except IntegrityError:  # another writer inserted the key meanwhile: the newer of the two stays
        rows.filter(run_id__lt=run.pk).update(**newest)


def restatus(result: ConfigResult, before: str) -> None:
    """The result's status changed from `before` (a diagnosis' implied verdict): its row, if it is a newest verdict,
    says so, and its count moves to the new status."""
    LatestResult.objects.filter(result_id=result.pk).update(status=result.status)
    run = TestRun.objects.only("lane", "release", "torch").get(pk=result.run_id)
    if not run.torch and before != result.status:
        key = _count_key(result, run)
        _count(key, before, -1)
        _count(key, result.status, +1)


def _count_key(result: ConfigResult, run: TestRun) -> dict:
    # The run's build as stored now: the executor records it with an update, so the caller's instance may predate it
    # (a build recorded again later, by a resuming executor, counts the run's results again: rebuild).
    version, commit = TestRun.objects.filter(pk=run.pk).values_list("paddle_version", "paddle_commit").get()
    return {"failing_config_id": result.failing_config_id, "task_id": result.task_id, "lane": run.lane,
            "release": run.release, "version": version, "commit": commit}


def _count(key: dict, status: str, delta: int) -> None:
    rows = ResultCount.objects.filter(**key, status=status)
    if delta < 0:
        rows.filter(n__gte=-delta).update(n=F("n") + delta)
        return
    if rows.update(n=F("n") + delta):
        return
    try:
        with transaction.atomic():
            ResultCount.objects.create(**key, status=status, n=delta)
    except IntegrityError:  # another writer counted the key's first result meanwhile
        rows.update(n=F("n") + delta)


def newest_rows(result_model, config_ids: list[int]) -> list[dict]:
    """The LatestResult fields of these configs' newest verdicts, from the results (models passed in: the data
    migration gives its historical ones). Newest = the highest run id of each key, as the readers chose."""
    results = result_model.objects.filter(failing_config_id__in=config_ids, run__torch="").order_by()
    version = Coalesce(NullIf("paddle_version", Value("")), "run__paddle_version")
    newest = (results.values("failing_config_id", "task_id", "run__lane", "run__release").annotate(version=version)
              .values("failing_config_id", "task_id", "run__lane", "run__release", "version")
              .annotate(newest=Max("run_id")))
    keys = {(row["failing_config_id"], row["newest"]): row for row in newest}
    ids = results.filter(run_id__in={run_id for _config, run_id in keys}).values_list(
        "failing_config_id", "run_id", "id", "status", "exact")
    return [{"failing_config_id": config_id, "task_id": row["task_id"], "lane": row["run__lane"],
             "release": row["run__release"], "version": row["version"] or "", "run_id": run_id, "result_id": pk,
             "status": status, "exact": exact}
            for config_id, run_id, pk, status, exact in ids if (row := keys.get((config_id, run_id)))]


def fill(result_model, latest_model, config_ids=None) -> int:
    """Replace the rows of these configs (None: every config with a result) by their newest verdicts; the count."""
    return _refill(result_model, latest_model, newest_rows, config_ids)


def _refill(result_model, model, rows_of, config_ids) -> int:
    """Replace `model`'s rows of these configs (None: every config with a result) by `rows_of(result_model, batch)`,
    a batch of configs at a time; the rows written."""
    if config_ids is None:
        config_ids = result_model.objects.order_by().values_list("failing_config_id", flat=True).distinct()
    config_ids = sorted(set(config_ids))
    written = 0
    for start in range(0, len(config_ids), BATCH):
        batch = config_ids[start:start + BATCH]
        with transaction.atomic():
            model.objects.filter(failing_config_id__in=batch).delete()
            rows = [model(**fields) for fields in rows_of(result_model, batch)]
            written += len(model.objects.bulk_create(rows, batch_size=BATCH))
    return written


def count_rows(result_model, config_ids: list[int]) -> list[dict]:
    """The ResultCount fields of these configs, from the results (models passed in, as for newest_rows)."""
    rows = (result_model.objects.filter(failing_config_id__in=config_ids, run__torch="").order_by()
            .values("failing_config_id", "task_id", "run__lane", "run__release", "run__paddle_version",
                    "run__paddle_commit", "status").annotate(n=Count("id")))
    return [{"failing_config_id": row["failing_config_id"], "task_id": row["task_id"], "lane": row["run__lane"],
             "release": row["run__release"], "version": row["run__paddle_version"],
             "commit": row["run__paddle_commit"], "status": row["status"], "n": row["n"]} for row in rows]


def fill_counts(result_model, count_model, config_ids=None) -> int:
    """Replace the counts of these configs (None: every config with a result) by their results'; the rows written."""
    return _refill(result_model, count_model, count_rows, config_ids)


def rebuild(config_ids=None) -> int:
    """The rows of these configs (None: every one) filled again from their results — newest verdicts and counts;
    the newest-verdict rows written."""
    config_ids = None if config_ids is None else sorted(set(config_ids))
    fill_counts(ConfigResult, ResultCount, config_ids)
    return fill(ConfigResult, LatestResult, config_ids)


def delete_runs(runs) -> None:
    """Delete these runs (a queryset; their results with them) and restore each affected config's newest verdict."""
    with transaction.atomic():
        affected = set(LatestResult.objects.filter(run__in=runs).values_list("failing_config_id", flat=True))
        affected |= set(LatestResult.objects.filter(run__parent__in=runs).values_list("failing_config_id", flat=True))
        runs.delete()
        rebuild(affected)


def delete_results(results) -> None:
    """Delete these results (a queryset) and restore each affected config's newest verdict."""
    with transaction.atomic():
        affected = set(results.values_list("failing_config_id", flat=True))
        results.delete()
        rebuild(affected)
