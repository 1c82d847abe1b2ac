from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("accounts/", include("django.contrib.auth.urls")),
    # Sign-in with GitHub: /accounts/github/login/ and its callback (django-allauth). Django's own
    # password login above keeps /accounts/login/ for staff accounts.
    path("accounts/", include("allauth.urls")),
    path("github/", include("tracker.web.urls_github")),
    path("", include("tracker.web.urls_runs")),
    path("", include("tracker.web.urls_charts")),
    path("", include("tracker.web.urls")),
]
