"""Apply claims and withdrawals: from tracking-issue comments (webhook or poller) and from the site.

Every change writes an Event with its source (the comment URL; the webhook delivery id in the data)
and refreshes the task's board status. Callers wrap one comment / one delivery in transaction.atomic.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..github.comments import parse_comment
from ..models import Claim, ClaimStatus, Contributor, IssueComment, PullRequest, Source, Task
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

    def as_dict(self) -> dict:
        return {"changes": self.changes, "claimed": self.claimed, "withdrawn": self.withdrawn,
                "errors": self.errors, "skipped": self.skipped}


def parse_github_time(value) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    return parse_datetime(value)


def is_bot_account(login: str) -> bool:
    bots = {b.strip().lower() for b in settings.GITHUB_BOT_ACCOUNTS if b.strip()}
    return login.lower() in bots or login.lower().endswith("[bot]")


def contributor_for(login: str) -> Contributor:
    """GitHub logins are case-insensitive: `Co63oc` and `co63oc` are one person."""
    existing = Contributor.objects.filter(login__iexact=login).first()
    return existing or Contributor.objects.create(login=login)


def board_limits() -> tuple[int | None, dict[int, str]]:
    """(highest task number, {locked task number: reason}) for the comment parser."""
    top = Task.objects.aggregate(top=Max("number"))["top"]
    locked = dict(Task.objects.exclude(locked_reason="").values_list("number", "locked_reason"))
    return top, locked


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
        return False
    if claim is None:
        Claim.objects.create(task=task, contributor=contributor, status=status, source=source,
                             source_ref=source_ref, created=when)
        message = f"@{contributor.login} claimed No.{task.number}"
    else:
        claim.withdrawn_at = None
        claim.source, claim.source_ref = source, source_ref
        claim.save(update_fields=["withdrawn_at", "source", "source_ref", "updated"])
        message = f"@{contributor.login} claimed No.{task.number} again"
    record_event(task=task, kind="claimed", source=source, source_ref=source_ref, actor=actor or contributor.login,
                 message=message, data=data, when=when)
    refresh_task_status(task)
    return True


def withdraw_claim(task: Task, contributor: Contributor, *, source: str, source_ref: str = "", when=None,
                   actor: str = "", data: dict | None = None, reason: str = "") -> bool:
    claim = Claim.objects.filter(task=task, contributor=contributor, withdrawn_at__isnull=True).first()
    if claim is None:
        return False
    when = when or timezone.now()
    claim.withdrawn_at = when
    claim.save(update_fields=["withdrawn_at", "updated"])
    message = f"@{contributor.login} withdrew from No.{task.number}" + (f" ({reason})" if reason else "")
    record_event(task=task, kind="withdrawn", source=source, source_ref=source_ref, actor=actor or contributor.login,
                 message=message, data=data, when=when)
    refresh_task_status(task)
    return True


# --- comments -------------------------------------------------------------------------------

def _claims_backed_elsewhere(contributor: Contributor, task: Task, comment_id: int) -> str:
    """Why a claim stays although this comment no longer makes it ("" when nothing backs it)."""
    for other in IssueComment.objects.filter(author__iexact=contributor.login, deleted=False).exclude(comment_id=comment_id):
        if task.number in (other.claimed or []):
            return f"still claimed in {other.url or other.comment_id}"
    if PullRequest.objects.filter(author=contributor, tasks=task).exists():
        return "backed by the person's pull request"
    return ""


def apply_comment(comment: dict, *, delivery_id: str = "", source_ref: str = "") -> ApplyResult:
    """Apply a tracking-issue comment (new or edited) in GitHub's REST/webhook shape.

    The comment's claims are compared with what it claimed when last seen: claims it no longer makes
    are withdrawn (unless another comment or the person's PR still backs them).
    """
    comment_id = int(comment["id"])
    login = (comment.get("user") or {}).get("login") or ""
    body = comment.get("body") or ""
    url = source_ref or comment.get("html_url") or ""
    created = parse_github_time(comment.get("created_at")) or timezone.now()
    updated = parse_github_time(comment.get("updated_at")) or created
    data = {"comment_id": comment_id, **({"delivery": delivery_id} if delivery_id else {})}
    result = ApplyResult()

    stored = IssueComment.objects.select_for_update().filter(comment_id=comment_id).first()
    if stored is not None:
        if stored.deleted:
            result.skipped = "comment was deleted"
            return result
        if stored.updated_at and updated < stored.updated_at:
            result.skipped = "older than the version already applied"
            return result
        if stored.body == body and stored.author == login:
            result.skipped = "unchanged"
            result.errors = stored.errors
            return result

    bot = not login or is_bot_account(login) or (comment.get("user") or {}).get("type") == "Bot"
    if bot:
        parsed_claim, parsed_withdraw, errors = [], [], []
        result.skipped = f"bot account {login}" if login else "no author"
    else:
        top, locked = board_limits()
        parsed = parse_comment(body, max_task=top, locked=locked)
        parsed_claim, parsed_withdraw = parsed.claim, parsed.withdraw
        errors = [e.as_dict() for e in parsed.errors]
    previous = set(stored.claimed) if stored is not None else set()

    if stored is None:
        stored = IssueComment(comment_id=comment_id)
    stored.author, stored.url, stored.body = login, url, body
    stored.created_at, stored.updated_at = created, updated
    stored.claimed, stored.errors = parsed_claim, errors
    stored.save()
    result.changes += 1
    result.errors = errors
    if bot:
        return result

    contributor = contributor_for(login)
    rejected = {n for error in errors if error["code"] == "locked" for n in error["numbers"]}
    wanted = set(parsed_claim) | set(parsed_withdraw) | previous | rejected
    tasks = {t.number: t for t in Task.objects.filter(number__in=wanted)}
    for number in parsed_claim:
        task = tasks.get(number)
        if task and claim_task(task, contributor, source=Source.COMMENT, source_ref=url, when=updated, data=data):
            result.claimed.append(number)
    for number in parsed_withdraw:
        task = tasks.get(number)
        if task and withdraw_claim(task, contributor, source=Source.COMMENT, source_ref=url, when=updated, data=data):
            result.withdrawn.append(number)
    for number in sorted(previous - set(parsed_claim) - set(parsed_withdraw)):
        task = tasks.get(number)
        if task is None:
            continue
        backing = _claims_backed_elsewhere(contributor, task, comment_id)
        if backing:
            record_event(task=task, kind="claim_kept", source=Source.COMMENT, source_ref=url, actor=login,
                         message=f"comment edited; @{login} keeps No.{number}: {backing}", data=data, when=updated)
        elif withdraw_claim(task, contributor, source=Source.COMMENT, source_ref=url, when=updated, data=data,
                            reason="claim removed from the comment"):
            result.withdrawn.append(number)
    for error in errors:
        for number in error["numbers"][:1] if error["code"] == "locked" else []:
            record_event(task=tasks.get(number), kind="claim_rejected", source=Source.COMMENT, source_ref=url,
                         actor=login, message=f"@{login}: {error['message']}", data={**data, "error": error},
                         when=updated)
    if any(error["code"] != "locked" for error in errors):
        record_event(task=None, kind="comment_errors", source=Source.COMMENT, source_ref=url, actor=login,
                     message="; ".join(f"line {e['line']}: {e['message']}" for e in errors if e["code"] != "locked"),
                     data={**data, "errors": errors}, when=updated)
    result.changes += len(result.claimed) + len(result.withdrawn)
    return result


def delete_comment(comment: dict, *, delivery_id: str = "") -> ApplyResult:
    """A deleted comment withdraws the claims it made (unless something else backs them)."""
    comment_id = int(comment["id"])
    result = ApplyResult()
    stored = IssueComment.objects.select_for_update().filter(comment_id=comment_id).first()
    if stored is None:
        # Never seen: remember the deletion so a late "created"/"edited" delivery changes nothing.
        login = (comment.get("user") or {}).get("login") or ""
        IssueComment.objects.create(comment_id=comment_id, author=login, url=comment.get("html_url") or "",
                                    body=comment.get("body") or "", deleted=True)
        result.changes = 1
        return result
    if stored.deleted:
        result.skipped = "already deleted"
        return result
    previous = list(stored.claimed)
    stored.deleted, stored.claimed = True, []
    stored.save(update_fields=["deleted", "claimed"])
    result.changes = 1
    if not stored.author or is_bot_account(stored.author):
        return result
    contributor = contributor_for(stored.author)
    data = {"comment_id": comment_id, **({"delivery": delivery_id} if delivery_id else {})}
    now = timezone.now()
    for task in Task.objects.filter(number__in=previous):
        backing = _claims_backed_elsewhere(contributor, task, comment_id)
        if backing:
            record_event(task=task, kind="claim_kept", source=Source.COMMENT, source_ref=stored.url,
                         actor=stored.author, data=data, when=now,
                         message=f"comment deleted; @{stored.author} keeps No.{task.number}: {backing}")
        elif withdraw_claim(task, contributor, source=Source.COMMENT, source_ref=stored.url, when=now, data=data,
                            reason="claim comment deleted"):
            result.withdrawn.append(task.number)
    result.changes += len(result.withdrawn)
    return result


@transaction.atomic
def apply_comment_atomic(comment: dict, **kwargs) -> ApplyResult:
    return apply_comment(comment, **kwargs)
