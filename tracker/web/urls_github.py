from django.urls import path

from . import github as views

app_name = "github"

# Owned by the GitHub-sync work: webhook endpoint, site claiming and the GitHub-login profile page.
urlpatterns = [
    path("webhook", views.webhook, name="webhook"),
    path("tasks/<int:number>/claim", views.site_action, {"action": "claim"}, name="claim"),
    path("tasks/<int:number>/withdraw", views.site_action, {"action": "withdraw"}, name="withdraw"),
    path("profile", views.profile, name="profile"),
]
