"""JSON read API: GET /api/tasks (same filters as the board) and GET /api/tasks/<number>."""
import hashlib
import json

from django.http import HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from . import serializers
from .conditional import PAGE_CACHE_SECONDS, conditional_answer, page_cache, page_etag, with_etag
from ..models import Task
from ..selectors import board as selectors
from ..selectors import versions


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
        rows = [serializers.task(task) for task in selectors.board_tasks(filters)]
        body = json.dumps({"count": len(rows), "tasks": rows}, ensure_ascii=False)
        page_cache.set(key, body, PAGE_CACHE_SECONDS)
    return with_etag(HttpResponse(body, content_type="application/json"), etag)


@require_GET
def task(request, number: int):
    try:
        task = selectors.task_detail(number)
    except Task.DoesNotExist:
        return JsonResponse({"errors": [f"no task No.{number}"]}, status=404)
    page = request.GET.get("configs_page", "1")
    # ASCII digits only ("²".isdigit() is True) and short (a 5,000-digit page would not even convert).
    if not (page.isascii() and page.isdigit() and len(page) <= 9) or int(page) < 1:
        return JsonResponse({"errors": [f"configs_page={page[:40]!r}: a page number (1, 2, …) is needed"]}, status=400)
    data = serializers.task_detail(task, staff=request.user.is_staff, configs_page=int(page))
    return JsonResponse(data, json_dumps_params={"ensure_ascii": False})
