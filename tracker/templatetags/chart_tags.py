"""Task-page charts as an inclusion tag: it draws the figure from the matrix the view read
(selectors.charts.task_config_matrix).

The heatmap sits inside the runner's re-test panel, above its one latest-verdict table."""
from django import template

from ..figures import charts
from ..selectors import summary as summary_selectors

register = template.Library()


@register.inclusion_tag("charts/_task_charts.html", takes_context=True)
def task_charts(context, task, matrix: dict):
    return {
        "task": task,
        "matrix": matrix,
        "figure_json": charts.figure_json(charts.task_config_heatmap(matrix)) if matrix["runs"] else "",
        "request": context.get("request"),
    }


@register.simple_tag
def repro_command(config: str, draw: str = "") -> str:
    """The command a contributor runs locally to reproduce a config (PaddleAPITest's flags), with the input
    draw the verdict came from when it is not the typical one (one definition: selectors.summary)."""
    return summary_selectors.config_command(config, draw)
