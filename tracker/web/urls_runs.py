from django.urls import path

from . import runs as views_runs

app_name = "runs"

# Owned by the runner work: run pages, /api/runs/<id>, regressions.
urlpatterns = [
    path("runs", views_runs.run_list, name="list"),
    path("runs/start", views_runs.start, name="start"),
    path("runs/diagnose", views_runs.diagnose, name="diagnose"),
    path("runs/<int:run_id>", views_runs.run_detail, name="detail"),
    path("runs/<int:run_id>/cancel", views_runs.cancel, name="cancel"),
    path("regressions", views_runs.regression_list, name="regressions"),
    path("flaky", views_runs.flaky_list, name="flaky"),
    path("api/runs/<int:run_id>", views_runs.api_run, name="api_run"),
    path("api/flaky", views_runs.api_flaky, name="api_flaky"),
]
