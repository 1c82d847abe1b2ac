"""The claim rules every source of a claim shares: the comment reader (services/claims.py), pull requests
(services/pull_requests.py) and the site's claim buttons (services/site_claims.py) — who a login is (one Contributor
per case-insensitive login; the site's own account), one claim or withdrawal with its Event and the task's
refreshed status, GitHub's timestamps, and what one change did (ApplyResult).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db.models import Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..github.client import client_from_settings
from ..models import UNDATED_SOURCES, Claim, ClaimStatus, Contributor, IssueComment, PullRequest, Task
from ..vocab import EventKind
from .events import record_event
from .status import refresh_task_status


@dataclass
class ApplyResult:
    """What one comment / PR / delivery did; `changes` counts stored changes (0 → nothing new)."""

    changes: int = 0
    claimed: list[int] = field(default_factory=list)
    withdrawn: list[int] = field(default_factory=list)
    errors: list[dict] = field(default_factory=list)
    skipped: str = ""  # why nothing was applied (bot author, stale event, other issue…)
    held: bool = False  # the comment waits on GitHub: a later read of it (the next poll) applies it

    def as_dict(self) -> dict:
        return {"changes": self.changes, "claimed": self.claimed, "withdrawn": self.withdrawn,
                "errors": self.errors, "skipped": self.skipped}


def parse_github_time(value) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    return parse_datetime(value)


def site_account_login() -> str:
    """The GitHub login of the account the site posts comments with ("" when the site posts nothing).

    settings.GITHUB_BOT_LOGIN, or asked once from GitHub (`GET /user` with GITHUB_TOKEN) and cached.
    GitHubError when GitHub cannot be asked (nothing cached: asked again next time).
    """
    if settings.GITHUB_BOT_LOGIN:
        return settings.GITHUB_BOT_LOGIN
    if not settings.GITHUB_TOKEN:
        return ""

    key = _site_login_cache_key()
    login = cache.get(key)
    if login is None:
        login = str(client_from_settings(max_wait=5.0).get_user().get("login") or "")
        cache.set(key, login, 24 * 3600)
    return login


def _site_login_cache_key() -> str:
    return "github:site-login:" + hashlib.sha256(f"{settings.GITHUB_API_URL} {settings.GITHUB_TOKEN}".encode()).hexdigest()


def remember_site_account_login(login: str) -> None:
    """The author of a comment the site just posted is its account: no need to ask GitHub."""
    if login and settings.GITHUB_TOKEN and not settings.GITHUB_BOT_LOGIN:
        cache.set(_site_login_cache_key(), login, 24 * 3600)


def is_site_account(login: str) -> bool:
    site = site_account_login()
    return bool(login and site and login.lower() == site.lower())


def contributor_for(login: str) -> Contributor:
    """GitHub logins are case-insensitive: `Co63oc` and `co63oc` are one person. Created on the first claim or PR
    only (`existing_contributor` for any other lookup): a commenter who claims nothing is no contributor."""
    return existing_contributor(login) or Contributor.objects.create(login=login)


def existing_contributor(login: str) -> Contributor | None:
    """The Contributor of this login (any case), or None: never creates one."""
    return Contributor.objects.filter(login__iexact=login).first() if login else None


# --- single claim operations (shared by comments, PRs and the site) ---------------------------

def claim_task(task: Task, contributor: Contributor, *, source: str, source_ref: str = "", when=None,
               actor: str = "", data: dict | None = None, status: str = ClaimStatus.CLAIMED) -> bool:
    """Make `contributor` an active claimant of `task`; True when something changed.

    Locked tasks are never claimed here; callers report why.
    """
    if task.locked:
        return False
    when = when or timezone.now()
    claim = Claim.objects.filter(task=task, contributor=contributor).first()
    if claim is not None and claim.withdrawn_at is None:
        return _date_imported_claim(claim, source=source, source_ref=source_ref, when=when, actor=actor, data=data)
    if claim is None:
        Claim.objects.create(task=task, contributor=contributor, status=status, source=source,
                             source_ref=source_ref, created=when)
        message = f"@{contributor.login} claimed No.{task.number}"
    else:
        claim.withdrawn_at, claim.withdrawn_source = None, ""
        claim.source, claim.source_ref = source, source_ref
        claim.save(update_fields=["withdrawn_at", "withdrawn_source", "source", "source_ref", "updated"])
        message = f"@{contributor.login} claimed No.{task.number} again"
    record_event(task=task, kind=EventKind.CLAIMED, source=source, source_ref=source_ref, actor=actor or contributor.login,
                 message=message, data=data, when=when)
    refresh_task_status(task)
    return True


def _date_imported_claim(claim: Claim, *, source: str, source_ref: str, when, actor: str, data: dict | None) -> bool:
    """A claim imported from the tracking issue's text has no date of its own (its `created` is the import's time):
    a dated source saying the same claim no later than that gives it its date — the claim's source and `created`
    become the comment's, with a dated `claimed` Event, so the burn-down counts it on its day. True when dated."""
    if claim.source not in UNDATED_SOURCES or source in UNDATED_SOURCES or when > claim.created:
        return False
    imported = claim.created
    claim.created, claim.source, claim.source_ref = when, source, source_ref
    claim.save(update_fields=["created", "source", "source_ref", "updated"])
    record_event(task=claim.task, kind=EventKind.CLAIMED, source=source, source_ref=source_ref,
                 actor=actor or claim.contributor.login, data={**(data or {}), "imported": imported.isoformat()},
                 message=f"@{claim.contributor.login} claimed No.{claim.task.number} (imported undated, dated now)", when=when)
    return True


def withdraw_claim(task: Task, contributor: Contributor, *, source: str, source_ref: str = "", when=None,
                   actor: str = "", data: dict | None = None, reason: str = "") -> bool:
    claim = Claim.objects.filter(task=task, contributor=contributor, withdrawn_at__isnull=True).first()
    if claim is None:
        return False
    when = when or timezone.now()
    claim.withdrawn_at, claim.withdrawn_source = when, source
    claim.save(update_fields=["withdrawn_at", "withdrawn_source", "updated"])
    message = f"@{contributor.login} withdrew from No.{task.number}" + (f" ({reason})" if reason else "")
    record_event(task=task, kind=EventKind.WITHDRAWN, source=source, source_ref=source_ref, actor=actor or contributor.login,
                 message=message, data=data, when=when)
    refresh_task_status(task)
    return True


def comments_of(login: str):
    """Comments that speak for `login`: their own, and the site's "(for @login)" comments."""
    return IssueComment.objects.filter(Q(author__iexact=login, on_behalf_of="") | Q(on_behalf_of__iexact=login))


def claims_backed_elsewhere(contributor: Contributor, task: Task, comment_id: int = 0) -> str:
    """Why a claim stays although this comment (or a PR's title) no longer makes it ("" when nothing backs it):
    another comment of the person, or a pull request of theirs linked to the task."""
    for other in comments_of(contributor.login).filter(deleted=False).exclude(comment_id=comment_id):
        if task.number in (other.claimed or []):
            return f"still claimed in {other.url or other.comment_id}"
    if PullRequest.objects.filter(author=contributor, tasks=task).exists():
        return "backed by the person's pull request"
    return ""
