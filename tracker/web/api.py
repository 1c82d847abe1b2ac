"""JSON read API: GET /api/tasks (same filters as the board) and GET /api/tasks/<number>.

Both bodies are cached per data version (selectors.versions: any change to what they show changes it) and the
parameters they read; any other query parameter is dropped first (params.only), so it cannot bust the cache.
"""
import hashlib
import json

from django.core.serializers.json import DjangoJSONEncoder
from django.http import JsonResponse
from django.utils.translation import get_language
from django.views.decorators.http import require_GET

from . import params, serializers
from .conditional import answer, conditional_answer, page_etag, visitor_cached, visitor_version, with_etag
from ..models import Task
from ..selectors import board as selectors
from ..selectors import versions

TASK_PARAMS = ("configs_page",)


@require_GET
def tasks(request):
    params.only(request, selectors.BoardFilters.PARAMS)
    filters = selectors.BoardFilters.from_params(request.GET)
    if filters.errors:
        return JsonResponse({"errors": filters.errors}, status=400)
    version = visitor_version(request, versions.board_version)
    etag = page_etag(request, "api_tasks", version, "")
    if not_modified := conditional_answer(request, etag):
        return not_modified
    key = "api_tasks:" + hashlib.sha256(repr((version, filters.cache_key())).encode()).hexdigest()
    latest_key = "api_tasks-latest:" + hashlib.sha256(repr(filters.cache_key()).encode()).hexdigest()
    body, refresh = visitor_cached(request, key, latest_key, lambda: _tasks_body(filters))
    return with_etag(answer(body, refresh, "application/json"), etag)


def _tasks_body(filters) -> str:
    rows = [serializers.task(task) for task in selectors.board_tasks(filters)]
    return json.dumps({"count": len(rows), "tasks": rows}, ensure_ascii=False)


@require_GET
def task(request, number: int):
    params.only(request, TASK_PARAMS)
    task_id = Task.objects.filter(number=number).values_list("pk", flat=True).first()
    if task_id is None:
        return JsonResponse({"errors": [f"no task No.{number}"]}, status=404)
    page = request.GET.get("configs_page", "1")
    # ASCII digits only ("²".isdigit() is True) and short (a 5,000-digit page would not even convert).
    if not (page.isascii() and page.isdigit() and len(page) <= 9) or int(page) < 1:
        return JsonResponse({"errors": [f"configs_page={page[:40]!r}: a page number (1, 2, …) is needed"]}, status=400)
    version, language, staff = (visitor_version(request, versions.task_version, task_id), get_language(),
                                request.user.is_staff)
    etag = page_etag(request, "api_task", version, language)
    if not_modified := conditional_answer(request, etag):
        return not_modified
    # Staff see site user names (selectors.visibility): their body is another entry.
    page_identity = repr((language, staff, number, int(page)))
    key = "api_task:" + hashlib.sha256((version + page_identity).encode()).hexdigest()
    latest_key = "api_task-latest:" + hashlib.sha256(page_identity.encode()).hexdigest()
    body, refresh = visitor_cached(request, key, latest_key, lambda: _task_body(number, staff, int(page)))
    return with_etag(answer(body, refresh, "application/json"), etag)


def _task_body(number: int, staff: bool, configs_page: int) -> str:
    data = serializers.task_detail(selectors.task_detail(number), staff=staff, configs_page=configs_page)
    return json.dumps(data, ensure_ascii=False, cls=DjangoJSONEncoder)
