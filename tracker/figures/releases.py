"""Plotly figures of per-release verdicts (the task page's configs × releases grid, /charts/releases)."""
from __future__ import annotations

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from ..vocab import Kernel
from .charts import _LAYOUT, NO_VALIDATION
from .cells import VERDICT_COLOURS, cell_value

# One colour per verdict class, shared with the task page's configs × runs grid (figures/cells.py).
_COLOURS = VERDICT_COLOURS


def _num(value) -> str:
    return "" if value is None else f"{value:.3g}"


def release_grid_figure(releases: list[str], rows: list) -> go.Figure:
    """configs × releases: pass / fail / error colours; hover: status, max abs and rel diff, build."""
    y = [f"{i + 1}. {fc.config[:45]}" for i, (fc, _cells) in enumerate(rows)]
    z, hover = [], []
    for fc, cells in rows:
        z.append([cell_value(cells[r].status) if r in cells else None for r in releases])
        hover.append([
            f"{fc.config[:200]}<br>Paddle {r}: <b>{cells[r].status}</b><br>max abs {_num(cells[r].max_abs)} · "
            f"max rel {_num(cells[r].max_rel)}<br>{cells[r].paddle_commit[:10]} · torch {cells[r].torch_version}"
            if r in cells else f"{fc.config[:200]}<br>Paddle {r}: " + _("not tested")
            for r in releases])
    for i, (fc, cells) in enumerate(rows):
        for j, r in enumerate(releases):
            if r in cells and cells[r].inferred:
                hover[i][j] = (f"{fc.config[:200]}<br>Paddle {r}: <b>{cells[r].status}</b> · "
                               + _("inferred from %(r)s (not run)") % {"r": cells[r].inferred_from})
    fig = go.Figure(**NO_VALIDATION, data=go.Heatmap(
        **NO_VALIDATION, z=z, x=releases, y=y, text=hover, zmin=0, zmax=1, colorscale=_COLOURS, showscale=False,
        hovertemplate="%{text}<extra></extra>", xgap=2, ygap=1))
    marks = [(r, y[i]) for i, (fc, cells) in enumerate(rows) for r in releases if r in cells and cells[r].inferred]
    if marks:
        fig.add_trace(inferred_marks(marks))
    fig.update_layout(title=_("Configs × Paddle releases (green: pass, red: fail, orange: error/crash, purple: differs from Torch, "
                            "grey: no verdict)"),
                      height=max(180, 18 * len(y) + 120), xaxis=dict(type="category"),
                      yaxis=dict(autorange="reversed", tickfont=dict(size=9), automargin=True), **_LAYOUT)
    return fig


def inferred_marks(cells: list[tuple[str, str]]) -> go.Scatter:
    """A light cross over each inferred cell (bisection did not run it), with its legend entry."""
    return go.Scatter(**NO_VALIDATION, x=[x for x, _y in cells], y=[y for _x, y in cells], mode="markers",
                      name=_("inferred (not run)"), showlegend=True, hoverinfo="skip",
                      marker=dict(symbol="x-thin-open", size=12, line=dict(width=2, color="rgba(255,255,255,0.85)")))


def fixed_per_release_figure(matrix: dict) -> go.Figure:
    releases = matrix["releases"]
    fig = go.Figure(**NO_VALIDATION, data=[
        go.Bar(**NO_VALIDATION, name=kernel, x=releases, y=[matrix["fixed"][kernel][r] for r in releases])
        for kernel in Kernel.values])
    fig.update_layout(title=_("Tasks fixed per release"), barmode="stack", xaxis=dict(type="category"), **_LAYOUT)
    return fig


def configs_passing_figure(matrix: dict) -> go.Figure:
    releases = matrix["releases"]
    fig = go.Figure(**NO_VALIDATION, data=[
        go.Bar(**NO_VALIDATION, name=_("configs passing"), x=releases, y=[matrix["passing_configs"][r] for r in releases]),
        go.Bar(**NO_VALIDATION, name=_("configs judged"), x=releases, y=[matrix["judged_configs"][r] for r in releases]),
    ])
    fig.update_layout(title=_("Configs passing per release"), barmode="group", xaxis=dict(type="category"), **_LAYOUT)
    return fig


def task_release_heatmap(matrix: dict) -> go.Figure:
    """tasks × releases: fraction of the task's judged configs passing; a click opens the task."""
    releases, tasks = matrix["releases"], matrix["tasks"]
    y = [f"{t['kernel']} No.{t['number']}" for t in tasks]
    customdata = [[[t["number"], t["fixed_in"]["text"]] for _r in releases] for t in tasks]
    fig = go.Figure(**NO_VALIDATION, data=go.Heatmap(
        **NO_VALIDATION, z=[t["fractions"] for t in tasks], x=releases, y=y, customdata=customdata, zmin=0, zmax=1,
        colorscale=[[0, "#e74c3c"], [1, "#2ecc71"]], colorbar=dict(title=_("passing")),
        hovertemplate="%{y} · Paddle %{x}<br>" + _("passing fraction") + ": %{z}<br>%{customdata[1]}<extra></extra>",
        xgap=2, ygap=1))
    marks = [(r, y[i]) for i, t in enumerate(tasks) for r, inferred in zip(releases, t.get("inferred", [])) if inferred]
    if marks:
        fig.add_trace(inferred_marks(marks))
    fig.update_layout(title=_("Tasks × Paddle releases"), height=max(300, 16 * len(y) + 120),
                      xaxis=dict(type="category"), yaxis=dict(autorange="reversed", automargin=True), **_LAYOUT)
    return fig
