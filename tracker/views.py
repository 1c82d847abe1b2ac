"""Board pages (thin: queries live in tracker.selectors.board)."""
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse

from .models import ClaimStatus, Contributor, Kernel, Task, TaskStatus
from .selectors import board as selectors
from .selectors.releases import fixed_in_by_task

CONFIGS_PER_PAGE = 50


def board(request):
    filters = selectors.BoardFilters.from_params(request.GET)
    tasks = list(selectors.board_tasks(filters))
    fixed_in = fixed_in_by_task()
    for task in tasks:
        task.fixed_in = fixed_in.get(task.id)
    return render(request, "tracker/board.html", {
        "tasks": tasks,
        "filters": filters,
        "totals": selectors.board_totals(),
        "report_import": selectors.latest_report_import(),
        "kernels": Kernel.choices,
        "statuses": TaskStatus.choices,
        "contributors": Contributor.objects.order_by("login").values_list("login", flat=True),
        # URL prefixes reversed once: ~600 {% url %} calls would be a third of the board's render time.
        "task_url": reverse("tracker:task", args=[0])[:-1],
        "contributor_url": reverse("tracker:contributor", args=["_"])[:-1],
    })


def task_page(request, number: int):
    try:
        task = selectors.task_detail(number)
    except Task.DoesNotExist:
        raise Http404(f"No task No.{number}")
    category = request.GET.get("category", "")
    gone = request.GET.get("gone", "")
    paginator = Paginator(selectors.task_configs(task, category=category, gone=gone), CONFIGS_PER_PAGE)
    configs = paginator.get_page(request.GET.get("page"))
    return render(request, "tracker/task.html", {
        "task": task,
        "configs": configs,
        "categories": selectors.task_config_categories(task),
        "category": category,
        "gone": gone,
        "events": selectors.task_events(task),
    })


def contributor_page(request, login: str):
    try:
        contributor, groups, withdrawn, prs = selectors.contributor_detail(login)
    except Contributor.DoesNotExist:
        raise Http404(f"No contributor @{login}")
    labelled = [(status, ClaimStatus(status).label if status in ClaimStatus.values else status, claims) for status, claims in groups]
    return render(request, "tracker/contributor.html", {
        "contributor": contributor, "groups": labelled, "withdrawn": withdrawn, "prs": prs,
    })
