"""Read paths for site accounts: the GitHub login a user proved by signing in with GitHub."""
from __future__ import annotations

from allauth.socialaccount.models import SocialAccount


def proven_github_login(user) -> str:
    """The GitHub login the user signed in with ("" when they never signed in with GitHub)."""
    if not getattr(user, "is_authenticated", False):
        return ""
    account = SocialAccount.objects.filter(user=user, provider="github").order_by("-last_login", "-pk").first()
    return str((account.extra_data or {}).get("login") or "") if account else ""
