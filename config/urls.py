from allauth.account import views as allauth_views
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from tracker.web.staff_login import (AdminLoginForm, StaffLoginView, StaffPasswordChangeView, admin_password_change,
                                     no_password_here, password_reset_unless_no_mail)

# The admin's own login and password-change forms count wrong passwords like /accounts/login/
# (tracker/web/staff_login.py).
admin.site.login_form = AdminLoginForm
admin.site.password_change = admin_password_change

urlpatterns = [
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    # Staff password sign-in, throttled; matched before django.contrib.auth.urls' own login/ below.
    path("accounts/login/", StaffLoginView.as_view(), name="login"),
    # Both password resets (Django's and allauth's) send mail: off unless the site can send it.
    path("accounts/password_reset/", password_reset_unless_no_mail(auth_views.PasswordResetView.as_view()),
         name="password_reset"),
    path("accounts/password/reset/", password_reset_unless_no_mail(allauth_views.password_reset),
         name="account_reset_password"),
    # Password change: only of a password the account has, throttled (Django's and allauth's path); none is set here.
    path("accounts/password_change/", StaffPasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/change/", StaffPasswordChangeView.as_view(), name="account_change_password"),
    path("accounts/password/set/", no_password_here, name="account_set_password"),
    path("accounts/", include("django.contrib.auth.urls")),
    # Sign-in with GitHub: /accounts/github/login/ and its callback (django-allauth). Django's own
    # password login above keeps /accounts/login/ for staff accounts.
    path("accounts/", include("allauth.urls")),
    path("github/", include("tracker.web.urls_github")),
    path("api/v1/", include("tracker.web.urls_api_v1")),
    path("", include("tracker.web.urls_runs")),
    path("", include("tracker.web.urls_charts")),
    path("", include("tracker.web.urls")),
]
