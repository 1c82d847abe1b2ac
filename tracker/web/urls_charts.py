from django.urls import path
from django.views.generic import RedirectView

from . import charts as views_charts

app_name = "charts"

urlpatterns = [
    path("charts/", views_charts.overview, name="index"),
    path("charts/overview", views_charts.overview, name="overview"),
    path("charts/heatmap", views_charts.heatmap, name="heatmap"),
    path("charts/contributors", views_charts.contributors, name="contributors"),
    path("charts/releases", views_charts.releases, name="releases"),
    path("charts/pass-fail-transitions", views_charts.pass_fail_transitions, name="pass_fail_transitions"),
    # The page's old address, from when it was called "Regressions" (the regressions are /regressions).
    path("charts/regressions", RedirectView.as_view(pattern_name="charts:pass_fail_transitions", permanent=True)),
    path("tasks/<int:number>/results/<int:result_id>/diff", views_charts.diff_map, name="diff_map"),
]
