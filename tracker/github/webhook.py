"""GitHub webhook deliveries: signature check and dispatch. The view in views.py only does HTTP.

One delivery is one transaction: the WebhookDelivery row and every change it causes commit together
or not at all, so a delivery that fails half-way can be redelivered and a redelivered id that did
commit changes nothing.
"""
from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db import IntegrityError, transaction

from ..models import WebhookDelivery
from ..services.claims import apply_comment, delete_comment
from ..services.pull_requests import apply_pull_request
from .client import parse_issue_ref

PR_ACTIONS = {"opened", "edited", "reopened", "closed"}
COMMENT_ACTIONS = {"created", "edited", "deleted"}


def signature_is_valid(secret: str, body: bytes, header: str | None) -> bool:
    if not secret or not header or not header.startswith("sha256="):
        return False
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header.strip())


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
    try:
        with transaction.atomic():
            if WebhookDelivery.objects.filter(delivery_id=delivery_id).exists():
                return 200, {"duplicate": True, "delivery": delivery_id}
            record = WebhookDelivery.objects.create(delivery_id=delivery_id, event=event,
                                                    action=str(payload.get("action", ""))[:50])
            try:
                status, answer = _dispatch(event, delivery_id, payload)
            except (KeyError, TypeError, ValueError) as error:
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
