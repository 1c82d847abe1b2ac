from django.urls import path

app_name = "runs"

# Owned by the runner work: run pages, /api/runs/<id>, regressions.
urlpatterns: list = []
