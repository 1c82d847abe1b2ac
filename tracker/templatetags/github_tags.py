"""Whether the "Sign in with GitHub" button is shown (templates/tracker/partials/github_signin.html).

The task page's claim panel is read by selectors.claims.task_claim_state, which the view hands in."""
from django import template
from django.conf import settings

register = template.Library()


@register.simple_tag
def github_sign_in_configured() -> bool:
    """An OAuth app is configured (GITHUB_OAUTH_CLIENT_ID): otherwise no "Sign in with GitHub" button."""
    app = (settings.SOCIALACCOUNT_PROVIDERS.get("github") or {}).get("APP") or {}
    return bool(app.get("client_id"))
