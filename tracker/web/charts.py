"""Chart pages: thin views over tracker.selectors.charts and tracker.figures."""
from django.http import Http404
from django.shortcuts import get_object_or_404, render

from ..figures import charts
from ..figures.releases import configs_passing_figure, fixed_per_release_figure, task_release_heatmap
from ..models import ConfigResult, Kernel, Task
from ..selectors import board as board_sel
from ..selectors import charts as sel
from ..selectors.releases import release_matrix
from . import params
from .conditional import public_page


# The timeline shows every pass → fail transition; the table lists the newest ones (the page must stay fast).
TRANSITION_TABLE_ROWS = 200


@public_page()
def overview(request):
    funnel = sel.funnel()
    burndown = sel.burndown_from_events()
    history = sel.report_history()
    # Offline (no PR state from GitHub) "completed" is unknown, not 0: shown beside the tracking issue's own figure.
    completed_known = board_sel.pr_states_known()
    stages = [(stage, charts.stage_label(stage)) for stage in sel.FUNNEL_STAGES]
    return render(request, "charts/overview.html", {
        "funnel": funnel,
        "funnel_rows": [(stage, label, [funnel[scope][stage] for scope in sel.FUNNEL_SCOPES]
                                 if completed_known or stage != "completed" else None) for stage, label in stages],
        "funnel_json": charts.figure_json(charts.funnel_figure(funnel, completed_known=completed_known)),
        "completed_known": completed_known,
        "tracking_summary": board_sel.tracking_summary(),
        "burndown": burndown,
        "burndown_rows": list(zip(burndown["days"], burndown["unclaimed"], burndown["claims"], burndown["prs"],
                                  burndown["merged"], burndown["verified"])),
        "history_rows": [(kernel, day, n) for kernel, series in history.items()
                         for day, n in zip(series["days"], series["configs"])],
        "burndown_json": charts.figure_json(charts.burndown_figure(burndown, history)),
    })


@public_page("metric")
def heatmap(request):
    metric = params.choice(request, "metric", ["fraction", "log10rel", "reported"], default="fraction")
    matrix = sel.task_report_matrix() if metric == "reported" else sel.task_run_matrix()
    values = {"fraction": matrix.fail_fraction, "log10rel": matrix.log10_rel, "reported": matrix.reported_configs}[metric]
    return render(request, "charts/heatmap.html", {
        "metric": metric,
        "matrix": matrix,
        "table_body": charts.heatmap_table_body(matrix, values),
        "figure_json": charts.figure_json(charts.task_run_heatmap(matrix, metric)) if matrix.columns else "",
    })


@public_page()
def contributors(request):
    rows = sel.contributor_stats()
    return render(request, "charts/contributors.html", {
        "rows": rows,
        "figure_json": charts.figure_json(charts.contributors_figure(rows)),
    })


@public_page()
def pass_fail_transitions(request):
    items = sel.pass_fail_transitions()
    return render(request, "charts/pass_fail_transitions.html", {
        "items": items[:TRANSITION_TABLE_ROWS],
        "total": len(items),
        "figure_json": charts.figure_json(charts.pass_fail_transitions_timeline(items)) if items else "",
    })


@public_page()
def releases(request):

    matrix = release_matrix()
    has = bool(matrix["releases"])
    return render(request, "charts/releases.html", {
        "matrix": matrix,
        "fixed_rows": [(r, matrix["fixed"][Kernel.CPU][r], matrix["fixed"][Kernel.GPU][r], matrix["passing_configs"][r],
                        matrix["judged_configs"][r]) for r in matrix["releases"]],
        "fixed_json": charts.figure_json(fixed_per_release_figure(matrix)) if has else "",
        "passing_json": charts.figure_json(configs_passing_figure(matrix)) if has else "",
        "heatmap_json": charts.figure_json(task_release_heatmap(matrix)) if has else "",
    })


def diff_map(request, number: int, result_id: int):
    task = get_object_or_404(Task, number=number)
    result = get_object_or_404(ConfigResult.objects.select_related("failing_config", "run"), id=result_id, task=task)
    if not result.diff_map:
        raise Http404("this result has no diff map")
    figure = charts.diff_map_heatmap(result.diff_map, f"|paddle − torch| · run #{result.run_id}")
    return render(request, "charts/diff_map.html", {
        "task": task, "result": result, "figure_json": charts.figure_json(figure),
        "values": charts.normalise_diff_map(result.diff_map)[0],
    })
