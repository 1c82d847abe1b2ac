"""The poller: read the tracking issue's comments and the board's PRs from GitHub's REST API.

Comments come from `GET /repos/{repo}/issues/{n}/comments?since=…` (Link pagination); PRs from the
search API (`is:pr in:title "<prefix>"` per configured repo, `updated:>=` the last sync). Each
resource keeps its `since` and ETag in a SyncCursor, so an unchanged resource costs one 304. Every
comment / PR is applied in its own transaction; a failure leaves the cursor where it was.

`full=True` lists every comment and withdraws the claims of comments that no longer exist (the
REST API has no record of deletions, so only a full listing can notice them).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from ..models import IssueComment, SyncCursor
from .claim_rules import parse_github_time
from .claims import apply_comment, delete_comment, read_comment, record_bad_comment
from .pull_requests import apply_pull_request
from ..github.client import GitHubClient
from ..github.logins import login_problem

# A full listing concludes "deleted" only for comments created this long before it began.
DELETION_CLOCK_MARGIN = timedelta(minutes=2)


@dataclass
class SyncReport:
    comments_seen: int = 0
    comments_changed: int = 0
    comments_deleted: int = 0
    prs_seen: int = 0
    prs_changed: int = 0
    not_modified: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [
            f"comments: {self.comments_seen} read, {self.comments_changed} changed the board, "
            f"{self.comments_deleted} deleted",
            f"pull requests: {self.prs_seen} read, {self.prs_changed} changed the board",
        ]
        out += [f"not modified (304): {key}" for key in self.not_modified]
        out += [f"error: {e}" for e in self.errors]
        return out


def check_author(item: dict, what: str) -> None:
    """A comment or PR whose author is not a GitHub login is refused (ValueError) before anything is stored."""
    user = item.get("user")
    login = user.get("login") if isinstance(user, dict) else None
    if login and (problem := login_problem(login)):
        raise ValueError(f"{what}: author {problem}")


def _github_time(value) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _sync_pages(client: GitHubClient, cursor: SyncCursor, path: str, params: dict, report: SyncReport, *,
                full: bool, items: Callable[[object], list], apply: Callable[[dict], datetime | None]) -> bool:
    """The one pager: read every page of a resource behind `cursor` and apply each item in order.

    The cursor's ETag (ignored when `full`) makes an unchanged resource one 304, and then nothing moves:
    returns False. Otherwise the cursor keeps the first page's ETag and the newest `updated_at` that
    `apply` returned (None: the item was not applied and doesn't move the cursor).
    """
    newest = cursor.since
    first_etag = ""
    for page_number, page in enumerate(client.get_pages(path, params=params, etag="" if full else cursor.etag)):
        if page.not_modified:
            report.not_modified.append(cursor.key)
            return False
        if page_number == 0:
            first_etag = page.etag
        for item in items(page.data):
            updated = apply(item)
            if updated and (newest is None or updated > newest):
                newest = updated
    cursor.since = newest
    cursor.etag = first_etag
    cursor.save()
    return True


def sync_comments(client: GitHubClient, repo: str, issue: int, report: SyncReport, *, full: bool = False):
    cursor, _ = SyncCursor.objects.get_or_create(key=f"comments:{repo}#{issue}")
    params = {"per_page": 100}
    if cursor.since and not full:
        params["since"] = _github_time(cursor.since)
    seen_ids: set[int] = set()
    held: list[datetime] = []  # when the comments that wait on GitHub were written: read again next poll

    def apply(comment: dict) -> datetime | None:
        report.comments_seen += 1
        try:
            seen_ids.add(int(comment["id"]))
            check_author(comment, f"comment {comment['id']}")
            reading = read_comment(comment)  # the parse and any GitHub lookup, before the write lock
            with transaction.atomic():
                result = apply_comment(comment, reading=reading)
        except (KeyError, TypeError, ValueError, OverflowError, RecursionError) as error:
            # A comment that cannot be applied is recorded and skipped; one bad comment never stops
            # the poller (database errors still propagate: the cursor stays and the poll is retried).
            with transaction.atomic():
                record_bad_comment(comment, error)
            report.errors.append(f"comment {str(comment.get('id') if isinstance(comment, dict) else comment)[:40]} "
                                 f"skipped: {type(error).__name__}: {str(error)[:200]}")
            result = None
        if result is not None and result.changes:
            report.comments_changed += 1
        try:
            updated = parse_github_time(comment.get("updated_at"))
        except (AttributeError, TypeError, ValueError):
            return None
        if result is not None and result.held and updated:
            held.append(updated)
            report.errors.append(f"comment {comment['id']} held: {result.skipped}")
        return updated

    listing_started = timezone.now()
    read = _sync_pages(client, cursor, f"repos/{repo}/issues/{issue}/comments", params, report, full=full,
                       items=lambda data: data or [], apply=apply)
    if held:
        # The next poll starts at the oldest held comment, without the ETag (its answer may be unchanged).
        cursor.since, cursor.etag = min(held), ""
        cursor.save(update_fields=["since", "etag", "updated"])
    if read and full:
        # Only a comment that existed before the listing began can be missing from it because it was
        # deleted: one posted meanwhile (a site claim, another poller) is simply newer than the listing.
        # The margin covers clock skew between GitHub and this host.
        existed = Q(created_at__isnull=True) | Q(created_at__lt=listing_started - DELETION_CLOCK_MARGIN)
        for stored in IssueComment.objects.filter(existed,
                deleted=False, url__contains=f"/{repo}/issues/{issue}#").exclude(comment_id__in=seen_ids):
            with transaction.atomic():
                delete_comment({"id": stored.comment_id})
            report.comments_deleted += 1


def sync_pull_requests(client: GitHubClient, repo: str, prefix: str, report: SyncReport, *, full: bool = False):
    cursor, _ = SyncCursor.objects.get_or_create(key=f"pulls:{repo}:{prefix}")
    query = f'repo:{repo} is:pr in:title "{prefix}"'
    if cursor.since and not full:
        # A minute of overlap: search indexes lag a little behind updated_at.
        query += f" updated:>={_github_time(cursor.since - timedelta(minutes=1))}"
    params = {"q": query, "sort": "updated", "order": "asc", "per_page": 100}

    def apply(item: dict) -> datetime | None:
        if "pull_request" not in item:
            return None  # the search also finds issues
        report.prs_seen += 1
        try:
            check_author(item, f"pull request {repo}#{str(item.get('number'))[:20]}")
            with transaction.atomic():
                result = apply_pull_request(item, repo=repo, prefix=prefix, current=True)  # GitHub's state now
        except ValueError as error:
            report.errors.append(str(error))
            return None
        if result.changes:
            report.prs_changed += 1
        return parse_github_time(item.get("updated_at"))

    _sync_pages(client, cursor, "search/issues", params, report, full=full,
                items=lambda data: (data or {}).get("items", []), apply=apply)


def sync_github(client: GitHubClient, *, repo: str, issue: int, pr_repos: list[str], prefix: str,
                full: bool = False, comments: bool = True, pulls: bool = True) -> SyncReport:
    report = SyncReport()
    if comments:
        sync_comments(client, repo, issue, report, full=full)
    if pulls:
        for pr_repo in pr_repos:
            sync_pull_requests(client, pr_repo.strip(), prefix, report, full=full)
    return report
