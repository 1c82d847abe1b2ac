from django.urls import path

from . import alignment
from . import api
from . import board as views
from . import health

app_name = "tracker"

urlpatterns = [
    path("", views.board, name="board"),
    path("tasks/<int:number>", views.task_page, name="task"),
    path("contributors/<str:login>", views.contributor_page, name="contributor"),
    path("api/tasks", api.tasks, name="api_tasks"),
    path("api/tasks/<int:number>", api.task, name="api_task"),
    path("alignment", alignment.alignment_page, name="alignment"),
    path("api/alignment", alignment.api_alignment, name="api_alignment"),
    path("healthz", health.healthz, name="healthz"),
]
