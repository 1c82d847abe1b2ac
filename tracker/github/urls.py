from django.urls import path

app_name = "github"

# Owned by the GitHub-sync work: webhook endpoint and site claiming views.
urlpatterns: list = []
