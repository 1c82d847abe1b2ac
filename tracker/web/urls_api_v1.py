from django.urls import path

from . import alignment, api
from . import runs as views_runs

app_name = "api_v1"

# The versioned JSON API (docs/api.md): the same view functions as the unversioned /api/... paths, which keep
# answering as they do. A field or value renamed or removed is a new version (/api/v2/...) beside this one.
urlpatterns = [
    path("tasks", api.tasks, name="tasks"),
    path("tasks/<int:number>", api.task, name="task"),
    path("runs/<int:run_id>", views_runs.api_run, name="run"),
    path("alignment", alignment.api_alignment, name="alignment"),
    path("flaky", views_runs.api_flaky, name="flaky"),
]
