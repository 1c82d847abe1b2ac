"""JSON read API: GET /api/tasks (same filters as the board) and GET /api/tasks/<number>."""
import hashlib
import json

from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from .conditional import PAGE_CACHE_SECONDS, conditional_answer, page_cache, page_etag, with_etag
from .models import Task
from .selectors import board as selectors
from .selectors import releases as release_selectors
from .selectors import runs as run_selectors
from .selectors import versions


@require_GET
def tasks(request):
    filters = selectors.BoardFilters.from_params(request.GET)
    if filters.errors:
        return JsonResponse({"errors": filters.errors}, status=400)
    version = versions.board_version()
    etag = page_etag(request, "api_tasks", version, "")
    if not_modified := conditional_answer(request, etag):
        return not_modified
    key = "api_tasks:" + hashlib.sha256(repr((version, filters.cache_key())).encode()).hexdigest()
    body = page_cache.get(key)
    if body is None:
        rows = [selectors.task_as_json(task) for task in selectors.board_tasks(filters)]
        body = json.dumps({"count": len(rows), "tasks": rows}, ensure_ascii=False)
        page_cache.set(key, body, PAGE_CACHE_SECONDS)
    return with_etag(HttpResponse(body, content_type="application/json"), etag)


@require_GET
def task(request, number: int):
    try:
        task = selectors.task_detail(number)
    except Task.DoesNotExist:
        return JsonResponse({"errors": [f"no task No.{number}"]}, status=404)
    data = selectors.task_as_json(task)
    data["failing_configs_in_latest_report"] = task.n_current_configs
    data["claims"] = [
        {
            "login": claim.contributor.login, "status": claim.status, "source": claim.source,
            "source_ref": claim.source_ref, "created": claim.created.isoformat(),
            "withdrawn_at": claim.withdrawn_at.isoformat() if claim.withdrawn_at else None,
        }
        for claim in task.claims.all()
    ]
    releases, rows = release_selectors.task_release_grid(task)
    data["releases"] = {
        "releases": releases,
        "verdicts": [
            {"config": fc.config, "failing_config": fc.id,
             "by_release": {r: {"status": c.status, "max_abs": c.max_abs, "max_rel": c.max_rel, "run": c.run_id,
                                "paddle_commit": c.paddle_commit, "torch_version": c.torch_version}
                            for r, c in cells.items()}}
            for fc, cells in rows
        ],
        "fixed_in": release_selectors.fixed_in({fc.id: {r: c.status for r, c in cells.items()} for fc, cells in rows}).as_dict(),
    }
    data["config_categories"] = {row["category"]: row["n"] for row in selectors.task_config_categories(task)}
    data["retest"] = run_selectors.task_verdicts_json(task)
    return JsonResponse(data, json_dumps_params={"ensure_ascii": False})
