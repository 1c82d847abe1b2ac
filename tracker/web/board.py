"""Board pages (thin: queries live in tracker.selectors.board)."""
import hashlib

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import get_language
from django.utils.translation import gettext as _

from . import params
from .conditional import cached, conditional_answer, page_etag, public_page, shared_page, visitor_version, with_etag
from ..models import ClaimStatus, Contributor, Kernel, Task, TaskStatus
from ..selectors import alignment as alignment_selectors
from ..selectors import board as selectors
from ..selectors import charts as chart_selectors
from ..selectors import claims as claim_selectors
from ..selectors import cpu_evidence as cpu_evidence_selectors
from ..selectors import diagnoses as diagnosis_selectors
from ..selectors import provenance as provenance_selectors
from ..selectors import releases as release_selectors
from ..selectors import external as external_selectors
from ..selectors import reported as reported_selectors
from ..selectors import runs as run_selectors
from ..selectors import summary as summary_selectors
from ..selectors import versions
from ..selectors import visibility

CONFIGS_PER_PAGE = 50
# The task page reads these query parameters and no other (params.only drops the rest before the cache key).
TASK_PARAMS = ("category", "gone", "page")


def board(request):
    params.only(request, selectors.BoardFilters.PARAMS)
    filters = selectors.BoardFilters.from_params(request.GET)
    version = visitor_version(request, versions.board_version)
    language = get_language()
    etag = page_etag(request, "board", version, language)
    if not_modified := conditional_answer(request, etag):
        return not_modified
    # Everything but the user, the CSRF token and one-time messages depends only on the data, the filters
    # and the language: anonymous visitors share one rendering per data version (any write changes the
    # version), and signed-in users share the rows.
    key = "board:" + hashlib.sha256(repr((version, language, filters.cache_key())).encode()).hexdigest()

    def render_page(extra):
        return render(request, "tracker/board.html", {
            "board": _board_data(key, filters, version), "filters": filters,
            "kernels": Kernel.choices, "statuses": TaskStatus.choices, "exact_kinds": alignment_selectors.exact_kinds(),
            "run_actions": run_selectors.board_run_actions(), **extra,
        })

    path_key = key + ":page:" + hashlib.sha256(request.get_full_path().encode()).hexdigest()
    latest_key = "board-latest:" + hashlib.sha256(repr((language, request.get_full_path())).encode()).hexdigest()
    response = shared_page(request, path_key, render_page, latest_key) or render_page({})
    return with_etag(response, etag)


def _board_data(key: str, filters, version: str) -> dict:
    board_data = cached(key, lambda: _read_board_data(filters, version))
    return {**board_data, "rows_html": mark_safe(board_data["rows_html"])}


def _read_board_data(filters, version: str) -> dict:
    tasks = list(selectors.board_tasks(filters))
    # Read once per data version, whatever the filters: the "fixed in" and the exact-rule columns (every task's
    # newest verdict per config and release, seconds on a year-old board).
    grids = cached("board-grids:" + version, release_selectors.release_grids)
    fixed_in = release_selectors.release_answers(grids)
    progress_run = run_selectors.active_run()
    progress = run_selectors.task_progress(progress_run) if progress_run else {}
    distinct = diagnosis_selectors.distinct_failure_counts()
    exact = alignment_selectors.exact_answers(grids)
    for task in tasks:
        task.fixed_in = fixed_in.get(task.id)
        task.exact_answer = exact.get(task.id)
        task.distinct_failures = distinct.get(task.id)
        task.run_progress = progress.get(task.number)
    totals = selectors.board_totals()
    # Offline (GitHub never told the board a PR state) "completed" is unknown (None), not 0: the chip says so
    # beside the tracking issue's own figures.
    totals["completed_known"] = selectors.pr_states_known()
    totals["status_rows"] = [(value, str(label), n if totals["completed_known"] or value != TaskStatus.COMPLETED else None)
                             for value, label, n in totals["status_rows"]]
    totals["tracking_summary"] = selectors.tracking_summary()
    totals.update(selectors.fix_counts(fixed_in))
    board_data = {
        "rows_html": render_to_string("tracker/partials/board_rows.html", {
            "tasks": tasks,
            "progress_run": progress_run,
            # URL prefixes reversed once: ~600 {% url %} calls would be a third of the rows' render time.
            "task_url": reverse("tracker:task", args=[0])[:-1],
            "contributor_url": reverse("tracker:contributor", args=["_"])[:-1],
        }),
        "n_shown": len(tasks),
        "totals": totals,
        "report_import": selectors.latest_report_import(),
        "contributors": list(Contributor.objects.order_by("login").values_list("login", flat=True)),
    }
    return board_data


def task_page(request, number: int):
    params.only(request, TASK_PARAMS)
    task_id = Task.objects.filter(number=number).values_list("pk", flat=True).first()
    if task_id is None:
        raise Http404(f"No task No.{number}")
    version = visitor_version(request, versions.task_version, task_id)
    language = get_language()
    etag = page_etag(request, "task", version, language)
    if not_modified := conditional_answer(request, etag):
        return not_modified

    def render_page(extra):
        task = selectors.task_detail(number)
        categories = selectors.task_config_categories(task)
        category = params.choice(request, "category", [row["category"] for row in categories])
        gone = params.choice(request, "gone", ["0", "1"])
        paginator = Paginator(selectors.task_configs(task, category=category, gone=gone), CONFIGS_PER_PAGE)
        page = request.GET.get("page", "")
        configs = paginator.get_page(page)
        configs.object_list = reported_selectors.annotate_reported(configs.object_list)
        if page and page != str(configs.number):
            messages.warning(request, _("Ignored page=%(value)r: showing page %(number)s of %(pages)s.") % {
                "value": params.shown(page), "number": configs.number, "pages": paginator.num_pages})
        releases_panel = release_selectors.task_releases_panel(task)
        latest = run_selectors.task_latest(task)  # read once, passed to every panel that shows a newest verdict
        diagnosis = diagnosis_selectors.task_diagnosis(task, latest.cpu)
        cpu_evidence = cpu_evidence_selectors.task_cpu_evidence(task, latest.cpu)
        runs_panel = run_selectors.task_runs_panel(task, latest)
        return render(request, "tracker/task.html", {
            "task": task,
            "configs": configs,
            "categories": categories,
            "category": category,
            "gone": gone,
            "events": selectors.task_events(task),
            # The runner's, the charts' and the releases' panels (drawn by their template tags).
            "runs_panel": runs_panel,
            "task_matrix": chart_selectors.task_config_matrix(task),
            "releases_panel": releases_panel,
            "reproduction": reported_selectors.task_reproduction(task, releases_panel["rows"]),
            "diagnosis": diagnosis,
            "cpu_evidence": cpu_evidence,
            "external_runs": external_selectors.task_external_runs(task),  # PaddleAPITest's, labelled
            "exact_summary": alignment_selectors.task_exact_summary(task, releases_panel["grid"]),
            "summary": summary_selectors.task_summary(  # the card (#summary)
                task, releases_panel=releases_panel, diagnosis=diagnosis, cpu_evidence=cpu_evidence,
                verification=runs_panel["verification"], latest=latest),
            **_provenance_context(request, task),
            # The claim panel for this viewer (a shared anonymous copy only ever shows the signed-out state).
            "claim_state": claim_selectors.task_claim_state(
                task, request.user, getattr(request, "session", {}).get("github_comment_to_paste")),
            **extra,
        })

    # An ignored parameter's note is a message: such a page is rendered for this request only.
    key = "task:" + hashlib.sha256(repr((version, language, request.get_full_path())).encode()).hexdigest()
    latest_key = "task-latest:" + hashlib.sha256(repr((language, request.get_full_path())).encode()).hexdigest()
    response = (None if _has_unknown_choice(request) else shared_page(request, key, render_page, latest_key)
                ) or render_page({})
    return with_etag(response, None if _has_unknown_choice(request) else etag)


def _provenance_context(request, task) -> dict:
    """Under which builds, threads and CPU a task's verdicts were given (issue #46); the host for staff only."""
    return {
        "provenance_rows": visibility.shown_provenance(provenance_selectors.task_provenance(task),
                                                       staff=request.user.is_staff),
        "show_host": request.user.is_staff,
        "thread_sensitive": provenance_selectors.task_thread_sensitive(task),
    }


def _has_unknown_choice(request) -> bool:
    """Parameters that may add a note (a message) to the page: such a page is not shared."""
    return (request.GET.get("gone", "") not in ("", "0", "1") or bool(request.GET.get("category"))
            or request.GET.get("page", "") not in ("", "1"))


@public_page()
def contributor_page(request, login: str):
    try:
        contributor, groups, withdrawn, prs = selectors.contributor_detail(login)
    except Contributor.DoesNotExist:
        raise Http404(f"No contributor @{login}")
    labelled = [(status, ClaimStatus(status).label if status in ClaimStatus.values else status, claims) for status, claims in groups]
    return render(request, "tracker/contributor.html", {
        "contributor": contributor, "groups": labelled, "withdrawn": withdrawn, "prs": prs,
    })
