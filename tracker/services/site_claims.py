"""Claiming and withdrawing on the site, for a signed-in user whose profile names a GitHub login.

The claim is stored at once (source "web"). The tracking issue should say the same thing: with
GITHUB_TOKEN set the site posts the matching `【报名】: N` / `【取消报名】: N` comment through the REST
client; otherwise the user is shown the exact comment to paste. The posted comment is remembered
(IssueComment) so its webhook echo changes nothing — the claim belongs to the user, not to the
account that owns the token.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from ..github.client import GitHubError, client_from_settings, parse_issue_ref
from ..models import Claim, Contributor, IssueComment, Source, Task
from .claims import claim_task, parse_github_time, withdraw_claim
from .events import record_event

GITHUB_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$")


@dataclass
class SiteOutcome:
    ok: bool
    message: str
    task_number: int | None = None
    comment_to_paste: str = ""  # shown when the site could not post the comment itself
    issue_url: str = ""
    posted_url: str = ""


def claim_comment(number: int) -> str:
    return f"【报名】: {number}"


def withdraw_comment(number: int) -> str:
    return f"【取消报名】: {number}"


def tracking_issue_url() -> str:
    repo, number = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
    return f"https://github.com/{repo}/issues/{number}"


def _post_or_paste(outcome: SiteOutcome, body: str, actor: str, task: Task) -> SiteOutcome:
    outcome.issue_url = tracking_issue_url()
    if not settings.GITHUB_TOKEN:
        outcome.comment_to_paste = body
        return outcome
    repo, number = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
    try:
        posted = client_from_settings(max_wait=5.0).post_issue_comment(repo, number, body)
    except GitHubError as error:
        outcome.comment_to_paste = body
        outcome.message += " " + _("Posting the comment on GitHub failed (%(error)s); please paste it yourself.") % {
            "error": error.message or error.status}
        return outcome
    outcome.posted_url = posted.get("html_url", "")
    with transaction.atomic():
        IssueComment.objects.update_or_create(comment_id=int(posted["id"]), defaults={
            "author": (posted.get("user") or {}).get("login", ""), "url": outcome.posted_url, "body": body,
            "created_at": parse_github_time(posted.get("created_at")),
            "updated_at": parse_github_time(posted.get("updated_at") or posted.get("created_at")),
            "claimed": [], "errors": [],
        })
        record_event(task=task, kind="comment_posted", source=Source.WEB, source_ref=outcome.posted_url, actor=actor,
                     message=f"posted “{body}” on {settings.GITHUB_TRACKING_ISSUE} for @{actor}")
    return outcome


def claim_on_site(user, task: Task) -> SiteOutcome:
    contributor = Contributor.objects.filter(user=user).first()
    if contributor is None:
        return SiteOutcome(False, _("Set your GitHub login on your profile before claiming."), task.number)
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
    return _post_or_paste(outcome, claim_comment(task.number), contributor.login, task)


def withdraw_on_site(user, task: Task) -> SiteOutcome:
    contributor = Contributor.objects.filter(user=user).first()
    if contributor is None:
        return SiteOutcome(False, _("Set your GitHub login on your profile first."), task.number)
    with transaction.atomic():
        changed = withdraw_claim(task, contributor, source=Source.WEB, source_ref=f"user:{user.get_username()}",
                                 actor=contributor.login, data={"user": user.get_username()})
    if not changed:
        return SiteOutcome(False, _("You have no claim on task %(number)s.") % {"number": task.number}, task.number)
    outcome = SiteOutcome(True, _("You withdrew from task %(number)s.") % {"number": task.number}, task.number)
    return _post_or_paste(outcome, withdraw_comment(task.number), contributor.login, task)


def active_claim_of(user, task: Task) -> Claim | None:
    if not getattr(user, "is_authenticated", False):
        return None
    return Claim.objects.filter(task=task, contributor__user=user, withdrawn_at__isnull=True).first()


@transaction.atomic
def set_github_login(user, login: str) -> SiteOutcome:
    login = login.strip().lstrip("@")
    if not GITHUB_LOGIN.match(login):
        return SiteOutcome(False, _("“%(login)s” is not a valid GitHub login.") % {"login": login})
    existing = Contributor.objects.filter(login__iexact=login).first()
    if existing is not None and existing.user_id not in (None, user.pk):
        return SiteOutcome(False, _("The GitHub login %(login)s is already linked to another account.") % {
            "login": existing.login})
    Contributor.objects.filter(user=user).exclude(pk=getattr(existing, "pk", None)).update(user=None)
    if existing is None:
        existing = Contributor.objects.create(login=login, user=user)
    elif existing.user_id != user.pk:
        existing.user = user
        existing.save(update_fields=["user"])
    return SiteOutcome(True, _("Your GitHub login is now %(login)s.") % {"login": existing.login})
