"""GitHub webhook deliveries: the signature, header and payload-shape checks (nothing stored here).

The view (tracker/web/github.py) does HTTP; applying a checked delivery is the service
tracker/services/webhook_deliveries.py.
"""
from __future__ import annotations

import hashlib
import hmac
import re

from ..models import WebhookDelivery
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


# A pull request's web and API URLs name its repository: https://github.com/<owner>/<repo>/pull/<n> and
# https://api.github.com/repos/<owner>/<repo>/pulls/<n> (any host: GitHub Enterprise has its own).
_REPO_IN_HTML_URL = re.compile(r"^https?://[^/]+/(?P<repo>[^/]+/[^/]+)/pull/\d+/?$")
_REPO_IN_API_URL = re.compile(r"/repos/(?P<repo>[^/]+/[^/]+)/pulls/\d+/?$")


def pull_request_repositories(payload: dict) -> list[str]:
    """Every repository a pull_request delivery names, as written, in order: `repository.full_name`,
    `pull_request.base.repo.full_name`, and the ones in `pull_request.html_url` and `.url`. (The head
    repository is the author's fork, not where the PR is filed: not among them.) A delivery is from a
    board repository only when every one of these is."""
    pull = payload.get("pull_request") or {}
    named = [(payload.get("repository") or {}).get("full_name"),
             ((pull.get("base") or {}).get("repo") or {}).get("full_name")]
    for key, pattern in (("html_url", _REPO_IN_HTML_URL), ("url", _REPO_IN_API_URL)):
        value = pull.get(key)
        if isinstance(value, str) and (match := pattern.search(value)):
            named.append(match.group("repo"))
    return [name for name in named if isinstance(name, str) and name]


class BadDelivery(ValueError):
    """The payload is JSON but not the shape its event promises (400, nothing stored)."""
