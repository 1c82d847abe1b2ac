"""Sign-in through GitHub (django-allauth's GitHub provider): the login a site claim is made for is
the one GitHub vouched for, never one typed into a form.

* Password sign-ups are closed (staff accounts come from `createsuperuser`); a GitHub sign-in creates
  the site account.
* GitHub's endpoints come from settings: GITHUB_OAUTH_URL (authorize / access_token) and
  GITHUB_OAUTH_API_URL (`/user`), so GitHub Enterprise or a local stand-in can play GitHub. allauth
  computes them once when its GitHub views are imported (and only knows the Enterprise layout
  `<url>/api/v3`), so they are set here at start-up and again when a test overrides the settings.
"""
from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.shortcuts import render

from ..github.logins import login_problem

ENDPOINT_SETTINGS = {"GITHUB_OAUTH_URL", "GITHUB_OAUTH_API_URL"}


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        return False  # no password sign-ups: a site account comes from signing in with GitHub

    def get_client_ip(self, request) -> str:
        """The client address the sign-in limits count (allauth's rule), never a 500 for a header.

        With fewer X-Forwarded-For entries than DJANGO_TRUSTED_PROXY_COUNT allauth raises
        ImproperlyConfigured: the request did not pass every proxy the setting counts (a proxy that does not
        append, or a client reaching an inner one). Only the peer's address is then known; counting by it is
        stricter, never looser, than by the header's claim.
        """
        try:
            return super().get_client_ip(request)
        except ImproperlyConfigured:
            return request.META.get("REMOTE_ADDR") or "unknown"


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def is_open_for_signup(self, request, sociallogin) -> bool:
        return True

    def populate_user(self, request, sociallogin, data):
        # The first hook after GitHub's /user answer and before allauth stores or updates anything: a
        # login that is not a GitHub login (a stand-in or a compromised GitHub Enterprise) signs nobody in.
        problem = login_problem((sociallogin.account.extra_data or {}).get("login"))
        if problem:
            raise ImmediateHttpResponse(render(request, "tracker/github_sign_in_refused.html",
                                               {"problem": problem}, status=400))
        return super().populate_user(request, sociallogin, data)


def configure_github_endpoints() -> None:
    from allauth.socialaccount.providers.github.views import GitHubOAuth2Adapter

    web_url = settings.GITHUB_OAUTH_URL.rstrip("/")
    api_url = settings.GITHUB_OAUTH_API_URL.rstrip("/")
    GitHubOAuth2Adapter.web_url, GitHubOAuth2Adapter.api_url = web_url, api_url
    GitHubOAuth2Adapter.access_token_url = f"{web_url}/login/oauth/access_token"
    GitHubOAuth2Adapter.authorize_url = f"{web_url}/login/oauth/authorize"
    GitHubOAuth2Adapter.profile_url = f"{api_url}/user"
    GitHubOAuth2Adapter.emails_url = f"{api_url}/user/emails"


@receiver(setting_changed)
def _endpoints_changed(*, setting, **kwargs):
    if setting in ENDPOINT_SETTINGS:
        configure_github_endpoints()


