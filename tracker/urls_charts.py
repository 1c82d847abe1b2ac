from django.urls import path

from . import views_charts

app_name = "charts"

urlpatterns = [
    path("charts/", views_charts.overview, name="index"),
    path("charts/overview", views_charts.overview, name="overview"),
    path("charts/heatmap", views_charts.heatmap, name="heatmap"),
    path("charts/contributors", views_charts.contributors, name="contributors"),
    path("charts/releases", views_charts.releases, name="releases"),
    path("charts/regressions", views_charts.regressions, name="regressions"),
    path("tasks/<int:number>/results/<int:result_id>/diff", views_charts.diff_map, name="diff_map"),
]
