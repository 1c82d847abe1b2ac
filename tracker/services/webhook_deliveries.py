"""Apply one checked GitHub webhook delivery (the checks are tracker/github/webhook.py's).

One delivery is one transaction: the WebhookDelivery row and every change it causes commit together
or not at all, so a delivery that fails half-way can be redelivered and a redelivered id that did
commit changes nothing. The transaction only writes: the comment is read (parsed, and GitHub asked
whether its author is the site's account), and a pull request tying the stored state re-read from GitHub,
before it opens, so a slow GitHub or a long comment never holds the database's write lock that every
other delivery waits for.

The service says what became of a delivery (`DeliveryResult`: a `DeliveryOutcome` and the JSON answer);
the webhook view (web/github.py) chooses the HTTP status for it.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from django.conf import settings
from django.db import DataError, IntegrityError, transaction

from ..github.client import parse_issue_ref
from ..github.webhook import COMMENT_ACTIONS, PR_ACTIONS, BadDelivery, check_shape, pull_request_repositories
from ..models import WebhookDelivery
from .claims import CommentReading, apply_comment, delete_comment, read_comment
from .pull_requests import apply_pull_request, reread_on_tie


class DeliveryOutcome(enum.Enum):
    PING = "ping"  # GitHub's hello when the hook is set up
    APPLIED = "applied"  # a comment or pull request read and applied (it may have changed nothing)
    IGNORED = "ignored"  # an event, action, issue or repository the board does not follow
    DUPLICATE = "duplicate"  # a redelivery of an id already applied: nothing done again


@dataclass(frozen=True)
class DeliveryResult:
    outcome: DeliveryOutcome
    answer: dict  # the JSON body GitHub's delivery log shows


def _ignored(why: str) -> DeliveryResult:
    return DeliveryResult(DeliveryOutcome.IGNORED, {"ignored": why})


def _duplicate(delivery_id: str) -> DeliveryResult:
    return DeliveryResult(DeliveryOutcome.DUPLICATE, {"duplicate": True, "delivery": delivery_id})


def _is_tracking_issue(payload: dict) -> bool:
    repo, number = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
    full_name = (payload.get("repository") or {}).get("full_name", "")
    return full_name.lower() == repo.lower() and (payload.get("issue") or {}).get("number") == number


def _read_first(event: str, payload: dict) -> CommentReading | dict | None:
    """The part of a delivery that may take time and writes nothing, done before the transaction: the
    comment's reading, or the pull request as GitHub shows it now when the payload ties the stored state."""
    if (event == "issue_comment" and payload.get("action") in ("created", "edited")
            and _is_tracking_issue(payload) and isinstance(payload.get("comment"), dict)):
        return read_comment(payload["comment"])
    pull = payload.get("pull_request")
    if event == "pull_request" and payload.get("action") in PR_ACTIONS and isinstance(pull, dict):
        repo, ignored = _board_repository(payload)
        return None if ignored else reread_on_tie(pull, repo)
    return None


def _board_repository(payload: dict) -> tuple[str | None, str]:
    """(the board repository a pull_request delivery is from, "") or (None, why it is ignored): every field
    that names a repository must name one of GITHUB_PR_REPOS (a signed payload from another repository, in
    whichever field, changes nothing and makes no request to GitHub)."""
    named = pull_request_repositories(payload)
    if not named:
        return None, "pull request that names no repository"
    repo_names = {r.lower() for r in settings.GITHUB_PR_REPOS}
    if others := [name for name in named if name.lower() not in repo_names]:
        return None, f"pull request in {others[0]}, not a board repository"
    return named[0], ""


def _dispatch(event: str, delivery_id: str, payload: dict, reading: CommentReading | dict | None) -> DeliveryResult:
    action = payload.get("action", "")
    if event == "ping":
        return DeliveryResult(DeliveryOutcome.PING, {"ok": True, "event": "ping", "zen": payload.get("zen", "")})
    if event == "issue_comment":
        if action not in COMMENT_ACTIONS:
            return _ignored(f"issue_comment action {action!r}")
        if not _is_tracking_issue(payload):
            return _ignored("comment on another issue")
        comment = payload.get("comment")
        if not isinstance(comment, dict) or "id" not in comment:
            raise ValueError("issue_comment payload without comment.id")
        if action == "deleted":
            result = delete_comment(comment, delivery_id=delivery_id)
        else:
            result = apply_comment(comment, delivery_id=delivery_id, reading=reading, creation=action == "created")
        return DeliveryResult(DeliveryOutcome.APPLIED, {"event": event, "action": action, **result.as_dict()})
    if event == "pull_request":
        if action not in PR_ACTIONS:
            return _ignored(f"pull_request action {action!r}")
        pull = payload.get("pull_request")
        if not isinstance(pull, dict) or "number" not in pull:
            raise ValueError("pull_request payload without pull_request.number")
        repo, ignored = _board_repository(payload)
        if ignored:
            return _ignored(ignored)
        # A delivery tying the stored state applies GitHub's PR as re-read (the newest fact) when there is one.
        result = apply_pull_request(reading or pull, repo=repo, delivery_id=delivery_id, current=reading is not None)
        return DeliveryResult(DeliveryOutcome.APPLIED, {"event": event, "action": action, **result.as_dict()})
    return _ignored(f"event {event!r}")


def handle_delivery(event: str, delivery_id: str, payload: dict) -> DeliveryResult:
    """Apply one verified delivery; what became of it, with the JSON answer (BadDelivery: a malformed one,
    of which nothing is stored)."""
    check_shape(event, payload)
    if WebhookDelivery.objects.filter(delivery_id=delivery_id).exists():  # a redelivery: no need to read it
        return _duplicate(delivery_id)
    try:
        reading = _read_first(event, payload)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise BadDelivery(str(error)) from error
    try:
        with transaction.atomic():
            # Checked again under the write lock: the same id may have committed meanwhile.
            if WebhookDelivery.objects.filter(delivery_id=delivery_id).exists():
                return _duplicate(delivery_id)
            record = WebhookDelivery.objects.create(delivery_id=delivery_id, event=event,
                                                    action=str(payload.get("action", ""))[:50])
            try:
                result = _dispatch(event, delivery_id, payload, reading)
            except (KeyError, TypeError, ValueError, AttributeError, DataError) as error:
                # Raised inside the transaction: everything this delivery wrote is rolled back.
                raise BadDelivery(str(error)) from error
            answer = result.answer
            record.outcome = (answer.get("ignored") or answer.get("skipped") or
                              f"{answer.get('changes', 0)} change(s)")[:200]
            record.save(update_fields=["outcome"])
            return DeliveryResult(result.outcome, {"delivery": delivery_id, **answer})
    except IntegrityError:
        # The same delivery committed concurrently: it is applied once.
        if WebhookDelivery.objects.filter(delivery_id=delivery_id).exists():
            return _duplicate(delivery_id)
        raise
