"""Plotly figures for the chart pages, built server-side from tracker.selectors.charts.

Each builder returns a plotly Figure; `figure_json` serialises it for the page, where the plotly.js
shipped inside the installed plotly package draws it (served as a static file: no CDN).
"""
from __future__ import annotations

import math

import plotly.graph_objects as go
import plotly.io as pio
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ..selectors import charts as sel
from .cells import VERDICT_COLOURS, cell_value

STAGE_LABELS = {
    # Not "open": on the board "open" means unclaimed, while this stage counts every unlocked task.
    "open": gettext_noop("not locked"),
    "claimed": gettext_noop("claimed"),
    "pr_submitted": gettext_noop("PR submitted"),
    "completed": gettext_noop("completed"),
    "verified": gettext_noop("fix verified"),
    "harness_fix": gettext_noop("fixed in the test engine"),
}
# The figures are built here from values we produced, so plotly's per-property validation only costs
# page time (≈140 ms for a 183×20 heatmap against ≈4 ms without it).
NO_VALIDATION = {"_validate": False}
_LAYOUT = dict(margin=dict(l=60, r=20, t=40, b=40), template="plotly_white", font=dict(size=12))


def heatmap_table_body(matrix: sel.TaskRunMatrix, values: list[list]) -> str:
    """The heatmap's numbers as table rows. Built here rather than in the template: the template
    language spends ~30 µs per cell, which is 100 ms for 183 tasks × 20 runs."""
    rows = []
    for i, task in enumerate(matrix.tasks):
        if all(v is None for v in values[i]):
            continue
        cells = "".join(
            f"<td>{escape(v)} <small>({escape(count)})</small></td>" if v is not None else "<td></td>"
            for v, count in zip(values[i], matrix.counts[i])
        )
        rows.append(
            f'<tr><th><a href="/tasks/{task["number"]}">No.{task["number"]}</a> {escape(task["api"])} '
            f"{escape(task['kernel'])}</th>{cells}</tr>"
        )
    return mark_safe("".join(rows))


def _title_objects(node):
    """plotly.js 3+ dropped string titles ({"title": "x"} draws nothing); figures built without
    validation keep the strings, so turn every title into {"text": …} here."""
    if isinstance(node, dict):
        return {key: ({"text": value} if key == "title" and isinstance(value, str) else _title_objects(value))
                for key, value in node.items()}
    if isinstance(node, list):
        return [_title_objects(item) for item in node]
    return node


def figure_json(fig: go.Figure) -> str:
    text = pio.to_json(_title_objects(fig.to_plotly_json()), validate=False)
    # The JSON is embedded in a <script> element: config strings must not be able to close it.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def stage_label(stage: str) -> str:
    return _(STAGE_LABELS[stage])


def funnel_figure(funnel: dict[str, dict[str, int]], *, completed_known: bool = True) -> go.Figure:
    """The funnel; without PR states from GitHub the "completed" stage is unknown and left out (not drawn as 0)."""
    fig = go.Figure(**NO_VALIDATION)
    stages = [s for s in sel.FUNNEL_STAGES if completed_known or s != "completed"]
    labels = [stage_label(s) for s in stages]
    for scope in sel.FUNNEL_SCOPES:
        name = _("all tasks") if scope == sel.ALL_KERNELS else scope
        fig.add_trace(
            go.Funnel(**NO_VALIDATION,
                name=name, y=labels, x=[funnel[scope][s] for s in stages],
                textinfo="value+percent initial",
            )
        )
    fig.update_layout(title=_("Task funnel (locked tasks excluded)"), yaxis=dict(automargin=True), **_LAYOUT)
    return fig


def burndown_figure(burndown: dict[str, list], history: dict[str, dict[str, list]]) -> go.Figure:
    fig = go.Figure(**NO_VALIDATION)
    names = {
        # With claims the import knows only undated, the line counts the tasks without a dated claim (an upper bound).
        "unclaimed": _("tasks without a dated claim") if burndown.get("before_import") else _("tasks without a claim"),
        "claims": _("tasks claimed"),
        "prs": _("tasks with a PR"),
        "merged": _("tasks with a merged PR"),
        "verified": _("tasks with a verified fix"),
    }
    for key, name in names.items():
        if burndown.get("days"):
            fig.add_trace(go.Scatter(**NO_VALIDATION, x=burndown["days"], y=burndown[key], name=name, mode="lines+markers",
                                     line_shape="hv"))
    for kernel, series in history.items():
        if series["days"]:
            fig.add_trace(
                go.Scatter(**NO_VALIDATION, x=series["days"], y=series["configs"], name=_("failing configs in the %(kernel)s report")
                           % {"kernel": kernel}, mode="lines+markers", yaxis="y2")
            )
    if before := burndown.get("before_import"):
        # The tracking issue's text dates none of its claims or PRs: one labelled note, not a step on the import day.
        fig.add_annotation(text=before_import_note(before), xref="paper", yref="paper", x=0, y=1.0, xanchor="left",
                           yanchor="bottom", showarrow=False, align="left", font=dict(size=11, color="#656d76"))
    fig.update_layout(
        title=_("Burn-down: board events and the report history"),
        yaxis=dict(title=_("tasks")),
        yaxis2=dict(title=_("failing configs"), overlaying="y", side="right", rangemode="tozero", automargin=True),
        legend=dict(orientation="h", y=-0.2),
        **_LAYOUT,
    )
    return fig


def before_import_note(before: dict) -> str:
    """The burn-down's label of what the tracking issue's text says without a date."""
    return _("Before import (undated, not drawn): %(claims)s tasks claimed, %(prs)s with a PR") % before


# metric → (cells, colour scale, fixed range, what a cell's number is, what the hover's second number is, title)
def _heatmap_metric(matrix: sel.TaskRunMatrix, metric: str) -> tuple:
    if metric == "reported":
        return (matrix.reported_configs, "Blues", (0, None), _("configs reported failing"), _("worst reported rel diff"),
                _("Tasks × PaddleAPITest reports (the reports' own diffs)"))
    if metric == "log10rel":
        return matrix.log10_rel, "Viridis", (None, None), _("log10 worst rel diff"), _("failing/total"), _("Tasks × re-test runs")
    return matrix.fail_fraction, "Reds", (0, 1), _("failing fraction"), _("failing/total"), _("Tasks × re-test runs")


def task_run_heatmap(matrix: sel.TaskRunMatrix, metric: str = "fraction") -> go.Figure:
    z, colours, (zmin, zmax), hover_value, hover_count, title = _heatmap_metric(matrix, metric)
    y = [f"{t['kernel']} No.{t['number']} {t['api']}" for t in matrix.tasks]
    x = [c["label"] for c in matrix.columns]
    customdata = [
        [[t["number"], matrix.counts[r][c], matrix.columns[c]["paddle_version"]] for c in range(len(matrix.columns))]
        for r, t in enumerate(matrix.tasks)
    ]
    fig = go.Figure(
        **NO_VALIDATION, data=go.Heatmap(**NO_VALIDATION,
            z=z, x=x, y=y, customdata=customdata, colorscale=colours, zmin=zmin, zmax=zmax,
            hovertemplate=(
                "%{y}<br>%{x} (" + ("" if metric == "reported" else "Paddle ") + "%{customdata[2]})<br>" + hover_value
                + ": %{z}<br>" + hover_count + ": %{customdata[1]}<extra></extra>"
            ),
            colorbar=dict(title=hover_value),
            xgap=1, ygap=1,
        )
    )
    fig.update_layout(
        title=title, height=max(400, 14 * len(y) + 120),
        yaxis=dict(autorange="reversed", tickfont=dict(size=9), automargin=True), **_LAYOUT,
    )
    return fig


def task_config_heatmap(matrix: dict) -> go.Figure:
    # Short tick labels (a config is often 150+ characters); the whole config is in the hover.
    y = [f"{i + 1}. {c['config'][:45]}" for i, c in enumerate(matrix["configs"])]
    full = [[c["config"][:300]] * len(matrix["runs"]) for c in matrix["configs"]]
    x = [r["label"] for r in matrix["runs"]]
    fig = go.Figure(
        **NO_VALIDATION, data=go.Heatmap(**NO_VALIDATION,
            z=[[cell_value(status) for status in row] for row in matrix["status"]], x=x, y=y, text=matrix["status"],
            customdata=full, zmin=0, zmax=1, colorscale=VERDICT_COLOURS, showscale=False,
            hovertemplate="%{customdata}<br>%{x}<br>%{text}<extra></extra>", xgap=1, ygap=1,
        )
    )
    fig.update_layout(title=_("Configs × runs (red: failing, orange: Paddle error or crash, green: pass, "
                              "purple: differs by design or Torch suspect, grey: no verdict)"),
                      height=max(160, 18 * len(y) + 110), yaxis=dict(autorange="reversed", tickfont=dict(size=9), automargin=True),
                      **_LAYOUT)
    return fig


def _decode_diff_cell(value):
    if isinstance(value, str):  # NaN/inf are JSON-encoded as strings by apitester
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}.get(value.lower(), math.nan)
    return value


def diff_map_heatmap(diff_map, title: str) -> go.Figure:
    """|paddle − torch| of one config's first mismatching output; NaN/inf mismatches marked."""
    values, mask = normalise_diff_map(diff_map)
    fig = go.Figure(**NO_VALIDATION, data=go.Heatmap(**NO_VALIDATION, z=values, colorscale="Magma", colorbar=dict(title="|Δ|"),
                               hovertemplate="row %{y}, col %{x}<br>|paddle − torch| = %{z}<extra></extra>"))
    marked = [(r, c) for r, row in enumerate(mask) for c, flag in enumerate(row) if flag]
    if marked:
        fig.add_trace(go.Scatter(**NO_VALIDATION, x=[c for _, c in marked], y=[r for r, _ in marked], mode="markers",
                                 marker=dict(symbol="x", color="cyan", size=8), name=_("NaN/inf mismatch"),
                                 hovertemplate="row %{y}, col %{x}: NaN/inf mismatch<extra></extra>"))
    fig.update_layout(title=title, yaxis=dict(autorange="reversed"), height=420, **_LAYOUT)
    return fig


def normalise_diff_map(diff_map) -> tuple[list[list], list[list]]:
    """Accept apitester's diff map forms: {"values"|"cells": 2-D, "mask"|"nonfinite": 2-D} or a bare 2-D list."""
    if isinstance(diff_map, dict):
        values = diff_map.get("values") or diff_map.get("cells") or diff_map.get("map") or []
        mask = diff_map.get("mask") or diff_map.get("nonfinite") or diff_map.get("nan_inf_mask") or []
    else:
        values, mask = diff_map or [], []
    if values and not isinstance(values[0], list):
        values = [values]
    values = [[_decode_diff_cell(v) for v in row] for row in values]
    clean = [[None if (v is None or (isinstance(v, float) and not math.isfinite(v))) else v for v in row]
             for row in values]
    if not mask:
        mask = [[isinstance(v, float) and not math.isfinite(v) for v in row] for row in values]
    elif mask and not isinstance(mask[0], list):
        mask = [mask]
    return clean, [[bool(flag) for flag in row] for row in mask]


def contributors_figure(rows: list[dict]) -> go.Figure:
    logins = [r["login"] for r in rows]
    fig = go.Figure(**NO_VALIDATION)
    for key, name in (("claimed", _("claimed")), ("pr_submitted", _("PR submitted")),
                      ("completed", _("completed")), ("verified", _("fix verified"))):
        fig.add_trace(go.Bar(**NO_VALIDATION, name=name, x=logins, y=[r[key] for r in rows]))
    fig.update_layout(barmode="group", title=_("Tasks per contributor"), **_LAYOUT)
    return fig


def pass_fail_transitions_timeline(items: list[sel.PassFailTransition]) -> go.Figure:
    fig = go.Figure(**NO_VALIDATION)
    for lane in sorted({r.lane for r in items}):
        lane_items = [r for r in items if r.lane == lane]
        fig.add_trace(
            go.Scatter(**NO_VALIDATION,
                x=[r.failed_at.isoformat() for r in lane_items],
                y=[f"No.{r.task_number} {r.api}" for r in lane_items],
                customdata=[[r.task_number, r.passed_version, r.failed_version, r.status, r.config[:80]]
                            for r in lane_items],
                mode="markers", name=lane.upper(), marker=dict(size=10, symbol="triangle-down"),
                hovertemplate=("%{y}<br>%{customdata[4]}<br>pass on Paddle %{customdata[1]} → "
                               "%{customdata[3]} on Paddle %{customdata[2]}<extra></extra>"),
            )
        )
    fig.update_layout(title=_("Pass → fail transitions over time"),
                      height=max(300, 24 * len({r.task_number for r in items}) + 150), **_LAYOUT)
    return fig
