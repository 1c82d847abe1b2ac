"""Board pages (thin: queries live in tracker.selectors.board)."""
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.urls import reverse

from . import params
from .models import ClaimStatus, Contributor, Kernel, Task, TaskStatus
from .selectors import board as selectors

CONFIGS_PER_PAGE = 50


def board(request):
    filters = selectors.BoardFilters.from_params(request.GET)
    tasks = list(selectors.board_tasks(filters))
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
    categories = selectors.task_config_categories(task)
    category = params.choice(request, "category", [row["category"] for row in categories])
    gone = params.choice(request, "gone", ["0", "1"])
    paginator = Paginator(selectors.task_configs(task, category=category, gone=gone), CONFIGS_PER_PAGE)
    configs = paginator.get_page(request.GET.get("page"))
    return render(request, "tracker/task.html", {
        "task": task,
        "configs": configs,
        "categories": categories,
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
