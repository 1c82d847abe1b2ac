"""GitHub webhook deliveries: signature check and dispatch. The view in views.py only does HTTP.

One delivery is one transaction: the WebhookDelivery row and every change it causes commit together
or not at all, so a delivery that fails half-way can be redelivered and a redelivered id that did
commit changes nothing.
"""
from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db import DataError, IntegrityError, transaction

from ..models import WebhookDelivery
from ..services.claims import apply_comment, delete_comment
from ..services.pull_requests import apply_pull_request
from .client import parse_issue_ref
from .logins import login_problem

PR_ACTIONS = {"opened", "edited", "reopened", "closed"}
COMMENT_ACTIONS = {"created", "edited", "deleted"}


def signature_is_valid(secret: str, body: bytes, header: str | None) -> bool:
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = b"sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest().encode()
    # Bytes, not str: compare_digest raises TypeError on a str with non-ASCII characters, and a header is
    # whatever the sender put there (WSGI hands it over decoded as latin-1).
    return hmac.compare_digest(expected, header.strip().encode("utf-8", "surrogateescape"))


MAX_DELIVERY_ID_CHARS = WebhookDelivery._meta.get_field("delivery_id").max_length
MAX_EVENT_CHARS = WebhookDelivery._meta.get_field("event").max_length
MAX_GITHUB_ID = 2**63 - 1  # GitHub ids and numbers are 64-bit; a larger one would overflow the database
MAX_LOGIN_CHARS = 100
MAX_TEXT_CHARS = 65536  # GitHub's limit for a comment body; titles are far shorter


def header_problem(event: str, delivery_id: str) -> str | None:
    """Why the X-GitHub-Event / X-GitHub-Delivery headers are unusable, or None."""
    for name, value, limit in (("X-GitHub-Event", event, MAX_EVENT_CHARS),
                               ("X-GitHub-Delivery", delivery_id, MAX_DELIVERY_ID_CHARS)):
        if not value:
            return f"the {name} header is required"
        if len(value) > limit or not value.isascii() or not value.isprintable():
            return f"the {name} header must be printable ASCII of at most {limit} characters"
    return None


def _check_id(value, what: str) -> None:
    if type(value) is not int or not 0 < value <= MAX_GITHUB_ID:
        raise BadDelivery(f"{what} must be a positive 64-bit integer")


def _check_text(container: dict, key: str, what: str, limit: int = MAX_TEXT_CHARS) -> None:
    value = container.get(key)
    if value is not None and (not isinstance(value, str) or len(value) > limit or "\x00" in value):
        raise BadDelivery(f"{what} must be a string of at most {limit} characters without NUL")


def _check_user(container: dict, what: str) -> None:
    user = container.get("user")
    if user is None:
        return
    if not isinstance(user, dict):
        raise BadDelivery(f"{what}.user must be an object")
    _check_text(user, "login", f"{what}.user.login", MAX_LOGIN_CHARS)
    _check_text(user, "type", f"{what}.user.type", 50)
    if user.get("login") and (problem := login_problem(user["login"])):
        raise BadDelivery(f"{what}.user.login: {problem}")


def check_shape(event: str, payload: dict) -> None:
    """The fields the services read have the types GitHub sends; BadDelivery (400) otherwise.

    The services trust these shapes; checking here keeps a crafted, correctly signed payload from
    reaching them as a 500 or as a database error half-way through a transaction.
    """
    if not isinstance(payload.get("action", ""), str):
        raise BadDelivery("action must be a string")
    repository = payload.get("repository")
    if repository is not None:
        if not isinstance(repository, dict):
            raise BadDelivery("repository must be an object")
        _check_text(repository, "full_name", "repository.full_name", 200)
    action = payload.get("action", "")
    if event == "issue_comment" and action in COMMENT_ACTIONS:
        issue, comment = payload.get("issue"), payload.get("comment")
        if issue is not None and not isinstance(issue, dict):
            raise BadDelivery("issue must be an object")
        if not isinstance(comment, dict):
            raise BadDelivery("issue_comment payload without a comment object")
        _check_id(comment.get("id"), "comment.id")
        for key in ("body", "html_url", "created_at", "updated_at"):
            _check_text(comment, key, f"comment.{key}")
        _check_user(comment, "comment")
    elif event == "pull_request" and action in PR_ACTIONS:
        pull = payload.get("pull_request")
        if not isinstance(pull, dict):
            raise BadDelivery("pull_request payload without a pull_request object")
        _check_id(pull.get("number"), "pull_request.number")
        for key, limit in (("title", 500), ("html_url", 500), ("state", 10), ("created_at", 40),
                           ("updated_at", 40), ("closed_at", 40), ("merged_at", 40)):
            _check_text(pull, key, f"pull_request.{key}", limit)
        if pull.get("merged") not in (None, True, False):
            raise BadDelivery("pull_request.merged must be a boolean")
        _check_user(pull, "pull_request")
        base = pull.get("base")
        if base is not None and (not isinstance(base, dict) or not isinstance(base.get("repo") or {}, dict)):
            raise BadDelivery("pull_request.base.repo must be an object")


def _is_tracking_issue(payload: dict) -> bool:
    repo, number = parse_issue_ref(settings.GITHUB_TRACKING_ISSUE)
    full_name = (payload.get("repository") or {}).get("full_name", "")
    return full_name.lower() == repo.lower() and (payload.get("issue") or {}).get("number") == number


def _dispatch(event: str, delivery_id: str, payload: dict) -> tuple[int, dict]:
    action = payload.get("action", "")
    if event == "ping":
        return 200, {"ok": True, "event": "ping", "zen": payload.get("zen", "")}
    if event == "issue_comment":
        if action not in COMMENT_ACTIONS:
            return 202, {"ignored": f"issue_comment action {action!r}"}
        if not _is_tracking_issue(payload):
            return 202, {"ignored": "comment on another issue"}
        comment = payload.get("comment")
        if not isinstance(comment, dict) or "id" not in comment:
            raise ValueError("issue_comment payload without comment.id")
        if action == "deleted":
            result = delete_comment(comment, delivery_id=delivery_id)
        else:
            result = apply_comment(comment, delivery_id=delivery_id)
        return 200, {"event": event, "action": action, **result.as_dict()}
    if event == "pull_request":
        if action not in PR_ACTIONS:
            return 202, {"ignored": f"pull_request action {action!r}"}
        pull = payload.get("pull_request")
        if not isinstance(pull, dict) or "number" not in pull:
            raise ValueError("pull_request payload without pull_request.number")
        repo_names = {r.strip().lower() for r in settings.GITHUB_PR_REPOS}
        repo = (payload.get("repository") or {}).get("full_name") or None
        if repo and repo.lower() not in repo_names:
            return 202, {"ignored": f"pull request in {repo}, not a board repository"}
        result = apply_pull_request(pull, repo=repo, delivery_id=delivery_id)
        return 200, {"event": event, "action": action, **result.as_dict()}
    return 202, {"ignored": f"event {event!r}"}


class BadDelivery(ValueError):
    """The payload is JSON but not the shape its event promises (400, nothing stored)."""


def handle_delivery(event: str, delivery_id: str, payload: dict) -> tuple[int, dict]:
    """Apply one verified delivery; returns (HTTP status, JSON answer)."""
    check_shape(event, payload)
    try:
        with transaction.atomic():
            if WebhookDelivery.objects.filter(delivery_id=delivery_id).exists():
                return 200, {"duplicate": True, "delivery": delivery_id}
            record = WebhookDelivery.objects.create(delivery_id=delivery_id, event=event,
                                                    action=str(payload.get("action", ""))[:50])
            try:
                status, answer = _dispatch(event, delivery_id, payload)
            except (KeyError, TypeError, ValueError, AttributeError, DataError) as error:
                # Raised inside the transaction: everything this delivery wrote is rolled back.
                raise BadDelivery(str(error)) from error
            record.outcome = (answer.get("ignored") or answer.get("skipped") or
                              f"{answer.get('changes', 0)} change(s)")[:200]
            record.save(update_fields=["outcome"])
            return status, {"delivery": delivery_id, **answer}
    except IntegrityError:
        # The same delivery committed concurrently: it is applied once.
        if WebhookDelivery.objects.filter(delivery_id=delivery_id).exists():
            return 200, {"duplicate": True, "delivery": delivery_id}
        raise
