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
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from ..github.client import GitHubError
from ..github.comments import REJECTING_CODES, CommentErrorCode, CommentParse, parse_comment
from ..models import Contributor, IssueComment, Source, Task
from ..vocab import EventKind
from .claim_rules import (ApplyResult, claim_task, claims_backed_elsewhere, contributor_for, existing_contributor,
                          is_site_account, parse_github_time, withdraw_claim)
from .conflicts import retry_on_conflict
from .events import record_event

# The error code of a comment held because GitHub could not say whether its author is the site's account.
SITE_ACCOUNT_UNKNOWN = CommentErrorCode.SITE_ACCOUNT_UNKNOWN


def is_bot_account(login: str) -> bool:
    bots = {b.lower() for b in settings.GITHUB_BOT_ACCOUNTS}
    return login.lower() in bots or login.lower().endswith("[bot]")


def board_limits() -> tuple[int | None, dict[int, str]]:
    """(highest task number, {locked task number: reason}) for the comment parser."""
    top = Task.objects.aggregate(top=Max("number"))["top"]
    locked = dict(Task.objects.exclude(locked_reason="").values_list("number", "locked_reason"))
    return top, locked


# --- comments -------------------------------------------------------------------------------

@dataclass(frozen=True)
class CommentReading:
    """What a comment says, read before the write transaction (none of it writes)."""

    login: str
    body: str
    declared_bot: bool
    parsed: CommentParse | None  # None: not read (a bot's comment that names nobody, or no author)
    site_account: bool  # the author is the site's own account (asked from GitHub when the comment names someone)
    limits: tuple  # board_limits() the parse used
    site_account_unknown: str = ""  # why GitHub could not say whether the author is the site's account


def read_comment(comment: dict) -> CommentReading:
    """Parse the comment and, for a "(for @x)" comment, ask GitHub who the site's account is (GET /user,
    retried, at most GITHUB_API_TIMEOUT seconds when GitHub hangs). Call it outside any transaction: nothing
    here writes. When GitHub cannot be asked, `site_account_unknown` says why (the comment is then held)."""
    login = (comment.get("user") or {}).get("login") or ""
    body = comment.get("body") or ""
    declared_bot = is_bot_account(login) or (comment.get("user") or {}).get("type") == "Bot" if login else True
    parsed, site_account, limits, unknown = None, False, (None, {}), ""
    if login and (not declared_bot or "for @" in body):
        limits = board_limits()
        parsed = _parse(body, limits)
        # Is the author the site's own account? Asking GitHub (GET /user) only when the comment names someone.
        if parsed.for_login:
            try:
                site_account = is_site_account(login)
            except GitHubError as error:
                unknown = f"GitHub could not say whether @{login} is the site's account ({error.message})"
        else:
            site_account = bool(settings.GITHUB_BOT_LOGIN) and login.lower() == settings.GITHUB_BOT_LOGIN.lower()
    return CommentReading(login, body, declared_bot, parsed, site_account, limits, unknown)


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
    creation: bool = False  # a webhook `created` delivery: the comment's first version
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
    held: str = ""  # why it waits (who it speaks for is unknown): the claims it made before stay


@retry_on_conflict
def apply_comment(comment: dict, *, delivery_id: str = "", source_ref: str = "",
                  reading: CommentReading | None = None, creation: bool = False) -> ApplyResult:
    """Apply a tracking-issue comment (new or edited) in GitHub's REST/webhook shape.

    The comment's claims are compared with what it claimed when last seen: claims it no longer makes
    are withdrawn (unless another comment or the person's PR still backs them). `reading` is
    read_comment(comment), done before the caller's transaction; without it the comment is read here.
    `creation`: a webhook `created`, the first version (older than any stored one, even in the same second).
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
        data={"comment_id": comment_id, **({"delivery": delivery_id} if delivery_id else {})}, creation=creation)
    result = delivery.result
    stored = IssueComment.objects.select_for_update().filter(comment_id=comment_id).first()
    if stored is not None and _already_applied(delivery, stored):
        return result
    previous = set(stored.claimed) if stored is not None else set()
    held_before = stored is not None and _is_held(stored) and stored.body == reading.body
    says = _what_it_says(delivery, previous)
    previous = _save_comment(delivery, stored, says, previous)
    if says.ignored:
        return result
    if says.rejected_whole:
        return _record_rejection(delivery, says)
    if says.held:
        return _record_held(delivery, says, again=held_before)
    tasks = _tasks_named(says, previous)
    _apply_claims(delivery, says, tasks, previous)
    _record_errors(delivery, says, tasks)
    result.changes += len(result.claimed) + len(result.withdrawn)
    return result


def _already_applied(delivery: _CommentDelivery, stored: IssueComment) -> bool:
    """A deleted comment stays deleted; an older version than the stored one (by updated_at, or the creation
    once any version is stored), or the same text by the same author (a redelivery, the poller seeing it
    again), changes nothing. True (with the reason) when skipped."""
    result = delivery.result
    if stored.deleted:
        result.skipped = "comment was deleted"
    elif stored.updated_at and delivery.updated < stored.updated_at:
        result.skipped = "older than the version already applied"
    elif delivery.creation and stored.body != delivery.reading.body:
        # GitHub's times have one-second steps: an edit made in the creation's second carries the same
        # updated_at, and its delivery may come first. An edit never precedes its creation.
        result.skipped = "older than the version already applied (the comment's creation, after an edit)"
    elif (stored.body == delivery.reading.body and stored.author == delivery.reading.login
          and not _is_held(stored)):  # a held comment is read again until GitHub says who wrote it
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
    if parsed is not None and parsed.for_login and reading.site_account_unknown:
        # Credited to its author it would give the site's account a claim; to the person it names, let anyone
        # claim for anyone. It waits, keeping what it claimed before, until GitHub can be asked.
        held = {"line": 0, "column": 0, "code": SITE_ACCOUNT_UNKNOWN, "numbers": [],
                "message": f"{reading.site_account_unknown}; the comment applies when it is read again"}
        return _CommentSays(login, sorted(previous), [], [held] + [e.as_dict() for e in parsed.errors],
                            held=held["message"])
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
    if says.held and stored is not None:
        on_behalf_of = stored.on_behalf_of  # a held comment still speaks for whom it did
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


def _is_held(stored: IssueComment) -> bool:
    return any(error.get("code") == SITE_ACCOUNT_UNKNOWN for error in stored.errors or [])


def _record_held(delivery: _CommentDelivery, says: _CommentSays, *, again: bool) -> ApplyResult:
    """A comment that waits on GitHub changes no claim; a `comment_errors` event says where and why (once:
    `again` when this text was already held)."""
    login, result = delivery.reading.login, delivery.result
    result.skipped, result.held = says.held, True
    if again:
        return result
    record_event(task=None, kind=EventKind.COMMENT_ERRORS, source=Source.COMMENT, source_ref=delivery.url,
                 actor=login, message=f"comment by @{login} held: {says.held}",
                 data={**delivery.data, "errors": says.errors}, when=delivery.updated)
    return result


def _apply_claims(delivery: _CommentDelivery, says: _CommentSays, tasks: dict[int, Task], previous: set[int]) -> None:
    """The comment's claims and withdrawals, and the withdrawal of what an edit dropped, for its claimant (if any)."""
    contributor = _claimant(says, tasks)
    if contributor is not None:
        _claim_and_withdraw(delivery, says, contributor, tasks)
        _withdraw_dropped_claims(delivery, says, contributor, tasks, previous)


def _claimant(says: _CommentSays, tasks: dict[int, Task]) -> Contributor | None:
    """Whom the comment's claims go to: created only when it claims a task that can be claimed; otherwise the
    person's existing Contributor (their withdrawals, the claims an edit dropped), or None — a commenter who claims
    nothing (a thank-you, a question, a claim of a locked task) does not become a contributor."""
    if any(tasks.get(n) is not None and not tasks[n].locked for n in says.claim):
        return contributor_for(says.credited)
    return existing_contributor(says.credited)


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
        backing = claims_backed_elsewhere(contributor, task, delivery.comment_id)
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
    contributor = existing_contributor(person)
    if contributor is None:  # it claimed nothing that was applied: nothing to withdraw, nobody to create
        return result
    data = {"comment_id": comment_id, **({"delivery": delivery_id} if delivery_id else {})}
    now = timezone.now()
    for task in Task.objects.filter(number__in=previous):
        backing = claims_backed_elsewhere(contributor, task, comment_id)
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
