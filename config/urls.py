from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    path("accounts/", include("django.contrib.auth.urls")),
    path("github/", include("tracker.github.urls")),
    path("", include("tracker.urls_runs")),
    path("", include("tracker.urls_charts")),
    path("", include("tracker.urls")),
]
