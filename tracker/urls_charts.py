from django.urls import path

app_name = "charts"

# Owned by the charts work: /charts/...
urlpatterns: list = []
