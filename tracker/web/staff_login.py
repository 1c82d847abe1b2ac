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
"""
from __future__ import annotations

from allauth.account.adapter import get_adapter
from django import forms
from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
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


def password_reset_unless_no_mail(view):
    """`view` when the site can send mail (settings.PASSWORD_RESET_ENABLED); otherwise a page that says
    password reset is off (404), instead of a reset mail that fails with a 500."""

    def gate(request, *args, **kwargs):
        if not settings.PASSWORD_RESET_ENABLED:
            return render(request, "registration/password_reset_off.html", status=404)
        return view(request, *args, **kwargs)

    return gate
