"""What the task page shows about claiming a task: the viewer's claim state and the comments that claim or
withdraw on the tracking issue (one definition: services/site_claims.py posts the same comments)."""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from ..github.client import parse_issue_ref
from ..models import Claim, Task
from .accounts import proven_github_login


def claim_comment(number: int, for_login: str = "") -> str:
    """The claim comment; `for_login` when the site's account posts it for someone."""
    return f"【报名】: {number}" + (f" (for @{for_login})" if for_login else "")


def withdraw_comment(number: int, for_login: str = "") -> str:
    return f"【取消报名】: {number}" + (f" (for @{for_login})" if for_login else "")


def tracking_issue_url() -> str:
    repo, number = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
    return f"https://github.com/{repo}/issues/{number}"


def active_claim_of(user, task: Task) -> Claim | None:
    """The user's standing claim on the task, through the GitHub login they proved (None without one)."""
    login = proven_github_login(user)
    if not login:
        return None
    return Claim.objects.filter(task=task, contributor__login__iexact=login, withdrawn_at__isnull=True).first()


@dataclass(frozen=True)
class TaskClaimState:
    """The task page's claim panel (templates/tracker/partials/task_claim.html) for one viewer."""
    signed_in: bool
    login: str  # the login GitHub vouched for at sign-in; "" without one
    claim: Claim | None
    can_claim: bool
    can_withdraw: bool
    claim_comment: str
    withdraw_comment: str
    posted_claim_comment: str  # what the site posts for `login` (with GITHUB_TOKEN)
    comment_to_paste: str  # the comment the site could not post itself, for this task
    issue_url: str
    posts_comment: bool


def task_claim_state(task: Task, user, pasted: dict | None = None) -> TaskClaimState:
    """The claim panel for `user` (anonymous or signed in). `pasted` is the session's note of a comment the
    site could not post ({"task": number, "body": comment}); it is shown on its own task's page only."""
    signed_in = bool(user is not None and user.is_authenticated)
    login = proven_github_login(user) if signed_in else ""
    claim = active_claim_of(user, task) if login else None
    to_paste = pasted.get("body", "") if signed_in and isinstance(pasted, dict) and pasted.get("task") == task.number \
        else ""
    return TaskClaimState(
        signed_in=signed_in, login=login, claim=claim,
        can_claim=bool(login) and claim is None and not task.locked, can_withdraw=claim is not None,
        claim_comment=claim_comment(task.number), withdraw_comment=withdraw_comment(task.number),
        posted_claim_comment=claim_comment(task.number, login), comment_to_paste=to_paste,
        issue_url=tracking_issue_url(), posts_comment=bool(settings.GITHUB_TOKEN),
    )
