"""Password sign-in of staff accounts (/accounts/login/ and /admin/login/): failed attempts are throttled
per account and per client address; password reset only where the site can send mail.

Staff start runs and edit configs, so a password is worth guessing. Every password check first takes a
slot of two windows (services/throttle.py, in the shared cache, so every web process counts together):
the (account, client address) pair's — LOGIN_FAILURES_PER_ACCOUNT failures — and the address's —
LOGIN_FAILURES_PER_ADDRESS failures — per LOGIN_FAILURE_WINDOW seconds. A successful sign-in gives its
slots back; when a window is full the password is not even checked from that address — the right one is
refused too until the window ends, so guessing gains nothing. No window is per account alone: a stranger
who knows a staff name can throttle only their own address, never lock the account out from another
one. Contributors sign in with GitHub (allauth, with allauth's own ACCOUNT_RATE_LIMITS).

Password change (Django's /accounts/password_change/, allauth's /accounts/password/change/, the admin's) checks the
current password under the same kind of windows; only an account that already has a password may change it, and
none is set on the site (allauth's /accounts/password/set/ is off): a GitHub-only account never gains a password,
which would be a way into it that GitHub's sign-in protections (2FA, revoked access) do not guard.
"""
from __future__ import annotations

from allauth.account.adapter import get_adapter
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib import admin
from django.contrib.admin import forms as admin_forms
from django.contrib.auth.forms import PasswordChangeForm
from django.contrib.auth.views import LoginView, PasswordChangeView
from django.urls import reverse
from django.shortcuts import render
from django.utils.translation import gettext as _

from ..services.throttle import take_slot


def client_address(request) -> str:
    """The client's address as allauth's limits see it (REMOTE_ADDR, or X-Forwarded-For's entry the
    ALLAUTH_TRUSTED_PROXY_COUNT-th from the end behind a proxy)."""
    return get_adapter().get_client_ip(request)


class ThrottledLogin:
    """Mixin for an AuthenticationForm: the throttle around its clean()."""

    throttled_message = ""

    def clean(self):
        username = self.cleaned_data.get("username")
        if username is None or not self.cleaned_data.get("password"):
            return super().clean()
        window = settings.LOGIN_FAILURE_WINDOW
        address = client_address(self.request)
        # "\n" cannot be in an address: the pair's name is unambiguous whatever the typed user name holds.
        slots = [take_slot(f"login-failed:account-from:{address}\n{username.lower()}",
                           settings.LOGIN_FAILURES_PER_ACCOUNT, window),
                 take_slot(f"login-failed:address:{address}", settings.LOGIN_FAILURES_PER_ADDRESS, window)]
        if not all(slot.allowed for slot in slots):
            for slot in slots:
                slot.release()
            wait = max(slot.retry_after for slot in slots)
            self.throttled_message = _(
                "Too many failed sign-in attempts for this account or from this address. "
                "Try again in %(minutes)s minutes.") % {"minutes": max(1, -(-wait // 60))}
            raise forms.ValidationError(self.throttled_message, code="throttled")
        cleaned = super().clean()  # a wrong password raises here and keeps its slots: it counts
        for slot in slots:
            slot.release()
        return cleaned


class StaffLoginForm(ThrottledLogin, AuthenticationForm):
    pass


class AdminLoginForm(ThrottledLogin, AdminAuthenticationForm):
    pass


class StaffLoginView(LoginView):
    authentication_form = StaffLoginForm

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.throttled_message:
            response.status_code = 429
        return response


def _password_change_slots(request, user):
    """A wrong current password on the change form is a password guess: it counts per account (the session holder
    can only lock themself out) and, with failed sign-ins, per client address."""
    window, address = settings.LOGIN_FAILURE_WINDOW, client_address(request)
    return [take_slot(f"password-change-failed:user:{user.pk}", settings.LOGIN_FAILURES_PER_ACCOUNT, window),
            take_slot(f"login-failed:address:{address}", settings.LOGIN_FAILURES_PER_ADDRESS, window)]


class ThrottledPasswordChange:
    """Mixin for a PasswordChangeForm: the throttle around the check of the current password (allauth's own change
    form has ACCOUNT_RATE_LIMITS; Django's and the admin's had none — a stolen session could guess the password)."""

    request = None
    throttled_message = ""

    def clean_old_password(self):
        slots = _password_change_slots(self.request, self.user)
        if not all(slot.allowed for slot in slots):
            for slot in slots:
                slot.release()
            wait = max(slot.retry_after for slot in slots)
            self.throttled_message = _(
                "Too many wrong passwords for this account or from this address. "
                "Try again in %(minutes)s minutes.") % {"minutes": max(1, -(-wait // 60))}
            raise forms.ValidationError(self.throttled_message, code="throttled")
        value = super().clean_old_password()  # a wrong password raises here and keeps its slots: it counts
        for slot in slots:
            slot.release()
        return value


class StaffPasswordChangeForm(ThrottledPasswordChange, PasswordChangeForm):
    pass


class AdminPasswordChangeForm(ThrottledPasswordChange, admin_forms.AdminPasswordChangeForm):
    pass


def no_password_here(request, status: int = 404):
    """No password is set on the site: a GitHub-only account never gains one (allauth's /accounts/password/set/)."""
    return render(request, "registration/no_password_here.html", status=status)


class StaffPasswordChangeView(PasswordChangeView):
    """Change a password the account already has (staff, from createsuperuser), throttled; an account without one
    (signed in with GitHub) gets none here (403)."""

    form_class = StaffPasswordChangeForm

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and not request.user.has_usable_password():
            return no_password_here(request, status=403)
        return super().dispatch(request, *args, **kwargs)

    def get_form(self, form_class=None):
        form = super().get_form(form_class)
        form.request = self.request
        return form

    def form_invalid(self, form):
        response = super().form_invalid(form)
        if form.throttled_message:
            response.status_code = 429
        return response


def admin_password_change(request, extra_context=None):
    """The admin's /admin/password_change/ (AdminSite.password_change's own steps) with the throttled form."""
    url = reverse("admin:password_change_done", current_app=admin.site.name)
    request.current_app = admin.site.name
    return StaffPasswordChangeView.as_view(
        form_class=AdminPasswordChangeForm, success_url=url, template_name="registration/password_change_form.html",
        extra_context={**admin.site.each_context(request), **(extra_context or {})})(request)


def password_reset_unless_no_mail(view):
    """`view` when the site can send mail (settings.PASSWORD_RESET_ENABLED); otherwise a page that says
    password reset is off (404), instead of a reset mail that fails with a 500."""

    def gate(request, *args, **kwargs):
        if not settings.PASSWORD_RESET_ENABLED:
            return render(request, "registration/password_reset_off.html", status=404)
        return view(request, *args, **kwargs)

    return gate
