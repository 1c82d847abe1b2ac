"""Context for the claim partial on the task page (templates/tracker/partials/task_claim.html)."""
from django import template
from django.conf import settings

from ..selectors.accounts import proven_github_login
from ..services.site_claims import active_claim_of, claim_comment, tracking_issue_url, withdraw_comment

register = template.Library()


@register.simple_tag
def task_claim_state(task, request):
    user = getattr(request, "user", None)
    signed_in = bool(user and user.is_authenticated)
    login = proven_github_login(user) if signed_in else ""  # the login GitHub vouched for at sign-in
    claim = active_claim_of(user, task) if login else None
    pasted = request.session.get("github_comment_to_paste") if signed_in and hasattr(request, "session") else None
    if pasted and pasted.get("task") != task.number:
        pasted = None
    return {
        "signed_in": signed_in,
        "login": login,
        "claim": claim,
        "can_claim": bool(login) and claim is None and not task.locked,
        "can_withdraw": claim is not None,
        "claim_comment": claim_comment(task.number),
        "withdraw_comment": withdraw_comment(task.number),
        "posted_claim_comment": claim_comment(task.number, login),
        "comment_to_paste": pasted["body"] if pasted else "",
        "issue_url": tracking_issue_url(),
        "posts_comment": bool(settings.GITHUB_TOKEN),
    }


@register.simple_tag
def github_sign_in_configured() -> bool:
    """An OAuth app is configured (GITHUB_OAUTH_CLIENT_ID): otherwise no "Sign in with GitHub" button."""
    app = (settings.SOCIALACCOUNT_PROVIDERS.get("github") or {}).get("APP") or {}
    return bool(app.get("client_id"))
