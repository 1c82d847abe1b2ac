"""Claiming and withdrawing on the site, for a user signed in with GitHub (django-allauth).

The claim is made for the login GitHub vouched for at sign-in (the social account's `login`), never
for a login typed into a form. It is stored at once (source "web"). The tracking issue should say
the same thing: with GITHUB_TOKEN set the site posts `【报名】: N (for @login)` /
`【取消报名】: N (for @login)` through the REST client — the comment parser credits the named login
because the site's own account wrote it, so a later `sync_github --full` attributes it the same way;
otherwise the user is shown the exact comment to paste. The posted comment is remembered
(IssueComment) so its webhook echo changes nothing.

Each user may claim or withdraw at most SITE_CLAIM_RATE_LIMIT times per SITE_CLAIM_RATE_WINDOW
seconds (counted in the shared cache, services/throttle.py); the views answer 429 beyond that.
"""
from __future__ import annotations

from dataclasses import dataclass

from allauth.account.signals import user_logged_in
from allauth.socialaccount.signals import social_account_added, social_account_updated
from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from ..github.client import GitHubError, client_from_settings, parse_issue_ref
from ..github.logins import is_github_login
from ..selectors.accounts import proven_github_login
from ..selectors.claims import claim_comment, tracking_issue_url, withdraw_comment
from ..models import Contributor, IssueComment, Source, Task
from ..vocab import EventKind
from .claim_rules import claim_task, contributor_for, parse_github_time, remember_site_account_login, withdraw_claim
from .events import record_event
from .throttle import take_slot



@dataclass
class SiteOutcome:
    ok: bool
    message: str
    task_number: int | None = None
    comment_to_paste: str = ""  # shown when the site could not post the comment itself
    issue_url: str = ""
    posted_url: str = ""


@dataclass
class RateLimit:
    allowed: bool
    retry_after: int  # seconds until the window ends
    message: str = ""


def take_rate_limit(user) -> RateLimit:
    """Count one claim/withdraw attempt of `user`; beyond SITE_CLAIM_RATE_LIMIT per window it is refused.

    A fixed window per user, counted in the shared cache (services/throttle.py): exact across the web
    server's processes."""
    limit, window = settings.SITE_CLAIM_RATE_LIMIT, settings.SITE_CLAIM_RATE_WINDOW
    slot = take_slot(f"site-claims:{user.pk}", limit, window)
    retry_after = slot.retry_after
    if slot.allowed:
        return RateLimit(True, retry_after)
    return RateLimit(False, retry_after, _(
        "Too many claims and withdrawals: at most %(limit)s per %(minutes)s minutes. "
        "Try again in %(wait)s minutes.") % {
        "limit": limit, "minutes": max(1, window // 60), "wait": max(1, -(-retry_after // 60))})


def site_contributor(user) -> Contributor | None:
    """The Contributor of the login the user proved by signing in with GitHub, linked to the user.

    The proven login wins over an older unproven link (a login typed on the profile before sign-in
    through GitHub existed)."""
    login = proven_github_login(user)
    if not login or not is_github_login(login):
        return None
    with transaction.atomic():
        contributor = contributor_for(login)
        if contributor.user_id != user.pk:
            Contributor.objects.filter(user=user).exclude(pk=contributor.pk).update(user=None)
            contributor.user = user
            contributor.save(update_fields=["user"])
    return contributor


def _post_or_paste(outcome: SiteOutcome, kind: str, actor: str, task: Task) -> SiteOutcome:
    make = claim_comment if kind == "claim" else withdraw_comment
    outcome.issue_url = tracking_issue_url()
    if not settings.GITHUB_TOKEN:
        outcome.comment_to_paste = make(task.number)  # the user posts it: it speaks for its author
        return outcome
    body = make(task.number, actor)
    repo, number = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
    try:
        posted = client_from_settings(max_wait=5.0).post_issue_comment(repo, number, body)
    except GitHubError as error:
        outcome.comment_to_paste = make(task.number)
        outcome.message += " " + _("Posting the comment on GitHub failed (%(error)s); please paste it yourself.") % {
            "error": error.message or error.status}
        return outcome
    outcome.posted_url = posted.get("html_url", "")
    remember_site_account_login((posted.get("user") or {}).get("login", ""))
    with transaction.atomic():
        # Stored as the comment parser would store it, so the webhook / poller echo is "unchanged".
        IssueComment.objects.update_or_create(comment_id=int(posted["id"]), defaults={
            "author": (posted.get("user") or {}).get("login", ""), "url": outcome.posted_url, "body": body,
            "on_behalf_of": actor,
            "created_at": parse_github_time(posted.get("created_at")),
            "updated_at": parse_github_time(posted.get("updated_at") or posted.get("created_at")),
            "claimed": [task.number] if kind == "claim" else [], "errors": [],
        })
        record_event(task=task, kind=EventKind.COMMENT_POSTED, source=Source.WEB, source_ref=outcome.posted_url, actor=actor,
                     message=f"posted “{body}” on {settings.GITHUB_TRACKING_ISSUE} for @{actor}")
    return outcome


def claim_on_site(user, task: Task) -> SiteOutcome:
    contributor = site_contributor(user)
    if contributor is None:
        return SiteOutcome(False, _("Sign in with GitHub before claiming: a claim is made for the GitHub account you "
                                    "signed in with."), task.number)
    if task.locked:
        return SiteOutcome(False, _("Task %(number)s is locked and cannot be claimed: %(reason)s") % {
            "number": task.number, "reason": task.locked_reason}, task.number)
    with transaction.atomic():
        changed = claim_task(task, contributor, source=Source.WEB, source_ref=f"user:{user.get_username()}",
                             actor=contributor.login, data={"user": user.get_username()})
    if not changed:
        return SiteOutcome(False, _("You have already claimed task %(number)s.") % {"number": task.number},
                           task.number)
    outcome = SiteOutcome(True, _("You claimed task %(number)s.") % {"number": task.number}, task.number)
    return _post_or_paste(outcome, "claim", contributor.login, task)


def withdraw_on_site(user, task: Task) -> SiteOutcome:
    contributor = site_contributor(user)
    if contributor is None:
        return SiteOutcome(False, _("Sign in with GitHub first."), task.number)
    with transaction.atomic():
        changed = withdraw_claim(task, contributor, source=Source.WEB, source_ref=f"user:{user.get_username()}",
                                 actor=contributor.login, data={"user": user.get_username()})
    if not changed:
        return SiteOutcome(False, _("You have no claim on task %(number)s.") % {"number": task.number}, task.number)
    outcome = SiteOutcome(True, _("You withdrew from task %(number)s.") % {"number": task.number}, task.number)
    return _post_or_paste(outcome, "withdraw", contributor.login, task)


def _link_contributor(request, user, **kwargs):
    """Right after a GitHub sign-in or connect: the proven login's Contributor speaks for this user."""
    site_contributor(user)


def connect_signals() -> None:
    """Link a Contributor on every GitHub sign-in or account connect (called from the app's ready())."""
    user_logged_in.connect(_link_contributor, dispatch_uid="tracker-github-login")
    for signal in (social_account_added, social_account_updated):
        signal.connect(lambda request, sociallogin, **kw: _link_contributor(request, sociallogin.user),
                       dispatch_uid=f"tracker-github-{id(signal)}", weak=False)
