"""Apply claims and withdrawals: from tracking-issue comments (webhook or poller) and from the site.

Every change writes an Event with its source (the comment URL; the webhook delivery id in the data)
and refreshes the task's board status. Callers wrap one comment / one delivery in transaction.atomic,
and read the comment first (`read_comment`: the parse, and GitHub asked whether the author is the site's
account) outside it, so the write lock is held only while writing.

Abuse limits: a comment naming more than settings.CLAIM_MAX_TASKS tasks changes nothing and is
recorded as a `comment_rejected` Event (where and why). A comment the site's own account posted
(`【报名】: 21 (for @login)`) is credited to the named login; anyone else's "(for @x)" claims for the
author, as any comment does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Max
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from ..github.client import GitHubError, client_from_settings
from ..github.comments import REJECTING_CODES, CommentErrorCode, CommentParse, parse_comment
from ..models import Claim, ClaimStatus, Contributor, IssueComment, PullRequest, Source, Task
from ..vocab import EventKind
from .conflicts import retry_on_conflict
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


def site_account_login() -> str:
    """The GitHub login of the account the site posts comments with ("" when the site posts nothing).

    settings.GITHUB_BOT_LOGIN, or asked once from GitHub (`GET /user` with GITHUB_TOKEN) and cached.
    """
    if settings.GITHUB_BOT_LOGIN:
        return settings.GITHUB_BOT_LOGIN
    if not settings.GITHUB_TOKEN:
        return ""

    key = _site_login_cache_key()
    login = cache.get(key)
    if login is None:
        try:
            login = (client_from_settings(max_wait=5.0).get("user").data or {}).get("login") or ""
        except GitHubError:
            return ""  # not cached: asked again next time
        cache.set(key, login, 24 * 3600)
    return login


def _site_login_cache_key() -> str:
    import hashlib

    return "github:site-login:" + hashlib.sha256(f"{settings.GITHUB_API_URL} {settings.GITHUB_TOKEN}".encode()).hexdigest()


def remember_site_account_login(login: str) -> None:
    """The author of a comment the site just posted is its account: no need to ask GitHub."""
    if login and settings.GITHUB_TOKEN and not settings.GITHUB_BOT_LOGIN:
        cache.set(_site_login_cache_key(), login, 24 * 3600)


def is_site_account(login: str) -> bool:
    site = site_account_login()
    return bool(login and site and login.lower() == site.lower())


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
        claim.withdrawn_at, claim.withdrawn_source = None, ""
        claim.source, claim.source_ref = source, source_ref
        claim.save(update_fields=["withdrawn_at", "withdrawn_source", "source", "source_ref", "updated"])
        message = f"@{contributor.login} claimed No.{task.number} again"
    record_event(task=task, kind=EventKind.CLAIMED, source=source, source_ref=source_ref, actor=actor or contributor.login,
                 message=message, data=data, when=when)
    refresh_task_status(task)
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


# --- comments -------------------------------------------------------------------------------

def _comments_of(login: str):
    """Comments that speak for `login`: their own, and the site's "(for @login)" comments."""
    from django.db.models import Q

    return IssueComment.objects.filter(Q(author__iexact=login, on_behalf_of="") | Q(on_behalf_of__iexact=login))


def _claims_backed_elsewhere(contributor: Contributor, task: Task, comment_id: int) -> str:
    """Why a claim stays although this comment no longer makes it ("" when nothing backs it)."""
    for other in _comments_of(contributor.login).filter(deleted=False).exclude(comment_id=comment_id):
        if task.number in (other.claimed or []):
            return f"still claimed in {other.url or other.comment_id}"
    if PullRequest.objects.filter(author=contributor, tasks=task).exists():
        return "backed by the person's pull request"
    return ""


@dataclass(frozen=True)
class CommentReading:
    """What a comment says, read before the write transaction (none of it writes)."""

    login: str
    body: str
    declared_bot: bool
    parsed: CommentParse | None  # None: not read (a bot's comment that names nobody, or no author)
    site_account: bool  # the author is the site's own account (asked from GitHub when the comment names someone)
    limits: tuple  # board_limits() the parse used


def read_comment(comment: dict) -> CommentReading:
    """Parse the comment and, for a "(for @x)" comment, ask GitHub who the site's account is (GET /user,
    retried, seconds when GitHub is slow). Call it outside any transaction: nothing here writes."""
    login = (comment.get("user") or {}).get("login") or ""
    body = comment.get("body") or ""
    declared_bot = is_bot_account(login) or (comment.get("user") or {}).get("type") == "Bot" if login else True
    parsed, site_account, limits = None, False, (None, {})
    if login and (not declared_bot or "for @" in body):
        limits = board_limits()
        parsed = _parse(body, limits)
        # Is the author the site's own account? Asking GitHub (GET /user) only when the comment names someone.
        site_account = is_site_account(login) if parsed.for_login else \
            bool(settings.GITHUB_BOT_LOGIN) and login.lower() == settings.GITHUB_BOT_LOGIN.lower()
    return CommentReading(login, body, declared_bot, parsed, site_account, limits)


def _parse(body: str, limits: tuple) -> CommentParse:
    top, locked = limits
    return parse_comment(body, max_task=top, locked=locked, max_tasks=settings.CLAIM_MAX_TASKS)


@dataclass
class _CommentDelivery:
    """One comment payload being applied: what was read from it, where it is and when it was written."""

    comment_id: int
    reading: CommentReading
    url: str  # the events' source_ref
    created: datetime
    updated: datetime  # when its events happened
    data: dict  # every event's data: the comment id and the webhook delivery
    result: ApplyResult = field(default_factory=ApplyResult)


@dataclass
class _CommentSays:
    """What the comment does, once who wrote it and the board as it is now are weighed."""

    credited: str  # whose claims the comment makes: its author, or the person the site's account names
    claim: list[int]
    withdraw: list[int]
    errors: list[dict]
    ignored: bool = False  # nothing is applied: a bot's comment, the site's naming nobody, no author
    rejected_whole: bool = False  # an abuse limit refused it: the claims it made before stay


@retry_on_conflict
def apply_comment(comment: dict, *, delivery_id: str = "", source_ref: str = "",
                  reading: CommentReading | None = None) -> ApplyResult:
    """Apply a tracking-issue comment (new or edited) in GitHub's REST/webhook shape.

    The comment's claims are compared with what it claimed when last seen: claims it no longer makes
    are withdrawn (unless another comment or the person's PR still backs them). `reading` is
    read_comment(comment), done before the caller's transaction; without it the comment is read here.
    Named steps: skip a version already applied; weigh what it says; store it; then either record why it
    was rejected, or apply its claims and withdrawals and record its errors.
    """
    comment_id = int(comment["id"])
    if reading is None:
        reading = read_comment(comment)
    created = parse_github_time(comment.get("created_at")) or timezone.now()
    delivery = _CommentDelivery(
        comment_id=comment_id, reading=reading, url=source_ref or comment.get("html_url") or "", created=created,
        updated=parse_github_time(comment.get("updated_at")) or created,
        data={"comment_id": comment_id, **({"delivery": delivery_id} if delivery_id else {})})
    result = delivery.result
    stored = IssueComment.objects.select_for_update().filter(comment_id=comment_id).first()
    if stored is not None and _already_applied(delivery, stored):
        return result
    previous = set(stored.claimed) if stored is not None else set()
    says = _what_it_says(delivery, previous)
    previous = _save_comment(delivery, stored, says, previous)
    if says.ignored:
        return result
    if says.rejected_whole:
        return _record_rejection(delivery, says)
    contributor = contributor_for(says.credited)
    tasks = _tasks_named(says, previous)
    _claim_and_withdraw(delivery, says, contributor, tasks)
    _withdraw_dropped_claims(delivery, says, contributor, tasks, previous)
    _record_errors(delivery, says, tasks)
    result.changes += len(result.claimed) + len(result.withdrawn)
    return result


def _already_applied(delivery: _CommentDelivery, stored: IssueComment) -> bool:
    """A deleted comment stays deleted; an older version than the stored one, or the same text by the same
    author (a redelivery, the poller seeing it again), changes nothing. True (with the reason) when skipped."""
    result = delivery.result
    if stored.deleted:
        result.skipped = "comment was deleted"
    elif stored.updated_at and delivery.updated < stored.updated_at:
        result.skipped = "older than the version already applied"
    elif stored.body == delivery.reading.body and stored.author == delivery.reading.login:
        result.skipped = "unchanged"
        result.errors = stored.errors
    return bool(result.skipped)


def _what_it_says(delivery: _CommentDelivery, previous: set[int]) -> _CommentSays:
    """A bot's comment claims nothing; the site's account claims only for the person it names; a comment an
    abuse limit refuses keeps the claims it made before (`previous`)."""
    reading, result, login = delivery.reading, delivery.result, delivery.reading.login
    parsed = reading.parsed
    if parsed is not None:
        limits = board_limits()
        if limits != reading.limits:
            # A task was locked or added since the comment was read: read it again against the board as it
            # is now (the parse is linear and quick; who the site's account is did not change).
            parsed = _parse(reading.body, limits)
    if parsed is None or (reading.declared_bot and not reading.site_account):
        result.skipped = f"bot account {login}" if login else "no author"
        return _CommentSays(login, [], [], [], ignored=True)
    says = _CommentSays(login, parsed.claim, parsed.withdraw, [e.as_dict() for e in parsed.errors])
    if reading.site_account:
        # The site's account speaks only for the person it names; without a name it claims nothing.
        says.credited = parsed.for_login
        if not says.credited:
            says.ignored, says.claim, says.withdraw, says.errors = True, [], [], []
            result.skipped = f"the site's account {login} names nobody"
    if parsed.rejected:
        # Nothing changes: the claims the comment made before (if edited) stay as they were.
        says.rejected_whole, says.claim = True, sorted(previous)
    return says


def _save_comment(delivery: _CommentDelivery, stored: IssueComment | None, says: _CommentSays,
                  previous: set[int]) -> set[int]:
    """Store the comment as now read. Returns the claims it made before that are still its to take back: none
    when it now speaks for someone else (what it claimed for the old person is theirs to keep or lose)."""
    login = delivery.reading.login
    on_behalf_of = says.credited if says.credited != login else ""
    if stored is None:
        stored = IssueComment(comment_id=delivery.comment_id)
    if previous and stored.on_behalf_of.lower() != on_behalf_of.lower():
        previous = set()
    stored.author, stored.url, stored.body = login, delivery.url, delivery.reading.body
    stored.on_behalf_of = on_behalf_of
    stored.created_at, stored.updated_at = delivery.created, delivery.updated
    stored.claimed, stored.errors = says.claim, says.errors
    stored.save()
    delivery.result.changes += 1
    delivery.result.errors = says.errors
    return previous


def _record_rejection(delivery: _CommentDelivery, says: _CommentSays) -> ApplyResult:
    """A comment an abuse limit refused changes no claim; a `comment_rejected` event says where and why."""
    login, errors, result = delivery.reading.login, says.errors, delivery.result
    reason = "; ".join(e["message"] for e in errors if e["code"] in REJECTING_CODES)
    result.skipped = reason
    record_event(task=None, kind=EventKind.COMMENT_REJECTED, source=Source.COMMENT, source_ref=delivery.url,
                 actor=login, message=f"comment by @{login} rejected: {reason}",
                 data={**delivery.data, "errors": errors}, when=delivery.updated)
    return result


def _tasks_named(says: _CommentSays, previous: set[int]) -> dict[int, Task]:
    """{number: task} of the tasks the comment names now, named before, or was refused (locked)."""
    refused = {n for error in says.errors if error["code"] == CommentErrorCode.LOCKED for n in error["numbers"]}
    wanted = set(says.claim) | set(says.withdraw) | previous | refused
    return {t.number: t for t in Task.objects.filter(number__in=wanted)}


def _claim_and_withdraw(delivery: _CommentDelivery, says: _CommentSays, contributor: Contributor,
                        tasks: dict[int, Task]) -> None:
    """The claims and withdrawals the comment makes, for the person it is credited to."""
    result, url, when, data = delivery.result, delivery.url, delivery.updated, delivery.data
    for number in says.claim:
        task = tasks.get(number)
        if task and claim_task(task, contributor, source=Source.COMMENT, source_ref=url, when=when, data=data):
            result.claimed.append(number)
    for number in says.withdraw:
        task = tasks.get(number)
        if task and withdraw_claim(task, contributor, source=Source.COMMENT, source_ref=url, when=when, data=data):
            result.withdrawn.append(number)


def _withdraw_dropped_claims(delivery: _CommentDelivery, says: _CommentSays, contributor: Contributor,
                             tasks: dict[int, Task], previous: set[int]) -> None:
    """A claim an edit removed is withdrawn, unless another comment or the person's PR still backs it (then a
    `claim_kept` event says what does)."""
    result, url, when, data, login = delivery.result, delivery.url, delivery.updated, delivery.data, says.credited
    for number in sorted(previous - set(says.claim) - set(says.withdraw)):
        task = tasks.get(number)
        if task is None:
            continue
        backing = _claims_backed_elsewhere(contributor, task, delivery.comment_id)
        if backing:
            record_event(task=task, kind=EventKind.CLAIM_KEPT, source=Source.COMMENT, source_ref=url, actor=login,
                         message=f"comment edited; @{login} keeps No.{number}: {backing}", data=data, when=when)
        elif withdraw_claim(task, contributor, source=Source.COMMENT, source_ref=url, when=when, data=data,
                            reason="claim removed from the comment"):
            result.withdrawn.append(number)


def _record_errors(delivery: _CommentDelivery, says: _CommentSays, tasks: dict[int, Task]) -> None:
    """A claim refused on a locked task is a `claim_rejected` event on that task; every other problem of the
    comment goes, with its line, into one `comment_errors` event."""
    url, when, data, login, errors = delivery.url, delivery.updated, delivery.data, says.credited, says.errors
    for error in errors:
        for number in error["numbers"][:1] if error["code"] == CommentErrorCode.LOCKED else []:
            record_event(task=tasks.get(number), kind=EventKind.CLAIM_REJECTED, source=Source.COMMENT, source_ref=url,
                         actor=login, message=f"@{login}: {error['message']}", data={**data, "error": error},
                         when=when)
    others = [e for e in errors if e["code"] != CommentErrorCode.LOCKED]
    if others:
        record_event(task=None, kind=EventKind.COMMENT_ERRORS, source=Source.COMMENT, source_ref=url, actor=login,
                     message="; ".join(f"line {e['line']}: {e['message']}" for e in others),
                     data={**data, "errors": errors}, when=when)


@retry_on_conflict
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
    person = stored.on_behalf_of or stored.author
    if not person or (not stored.on_behalf_of and is_bot_account(stored.author)):
        return result
    contributor = contributor_for(person)
    data = {"comment_id": comment_id, **({"delivery": delivery_id} if delivery_id else {})}
    now = timezone.now()
    for task in Task.objects.filter(number__in=previous):
        backing = _claims_backed_elsewhere(contributor, task, comment_id)
        if backing:
            record_event(task=task, kind=EventKind.CLAIM_KEPT, source=Source.COMMENT, source_ref=stored.url,
                         actor=person, data=data, when=now,
                         message=f"comment deleted; @{person} keeps No.{task.number}: {backing}")
        elif withdraw_claim(task, contributor, source=Source.COMMENT, source_ref=stored.url, when=now, data=data,
                            reason="claim comment deleted"):
            result.withdrawn.append(task.number)
    result.changes += len(result.withdrawn)
    return result


def record_bad_comment(comment, error: Exception) -> None:
    """A comment that could not be applied at all (malformed payload, a bug): where and why, so the
    poller can skip it and go on."""
    comment = comment if isinstance(comment, dict) else {}
    login = str((comment.get("user") or {}).get("login") or "") if isinstance(comment.get("user"), dict) else ""
    record_event(task=None, kind=EventKind.COMMENT_REJECTED, source=Source.COMMENT,
                 source_ref=str(comment.get("html_url") or comment.get("id") or "")[:500], actor=login[:100],
                 message=f"comment skipped: {type(error).__name__}: {str(error)[:300]}",
                 data={"comment_id": str(comment.get("id"))[:40], "error": f"{type(error).__name__}: {str(error)[:300]}"})


def apply_comment_atomic(comment: dict, **kwargs) -> ApplyResult:
    """Read the comment, then apply it in a transaction of its own."""
    reading = read_comment(comment)
    with transaction.atomic():
        return apply_comment(comment, reading=reading, **kwargs)
