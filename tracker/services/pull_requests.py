"""Link pull requests to tasks by title and move their authors' status forward.

open → 提交PR; merged → 完成任务 (部分完成 with `-part` in the title); closed without merge → the
author's claim stays, the PR shows as closed, and the 提交PR this PR set is taken back unless another
open or merged PR of the author still backs it. Events that arrive out of order (an older `opened`
after `closed`) are recognised by GitHub's updated_at and change nothing; otherwise a person's status
never moves backwards (advance_claim_status).

Same-second events: GitHub's updated_at has one-second steps, so a PR closed and reopened in one second
sends two deliveries with the same time, in any order. The newest fact decides: a delivery that ties the
stored state but says otherwise makes the webhook re-read the PR from GitHub (`reread_on_tie`, before the
delivery's transaction) and apply that; when GitHub cannot be asked, the tie rule keeps the state that
ranks higher — merged (final), then open, then closed (TIE_RANK).

A title edited to name other tasks unlinks the ones it no longer names (a `pr_unlinked` Event): the claim
status the PR set there goes back to what it was before, and a claim the PR itself made is withdrawn,
unless another PR of the author (or, for the claim, a comment) still backs it; the task's status follows.

Abuse limit: a title naming more than settings.CLAIM_MAX_TASKS tasks (or a task number of more than
a few digits) links nothing and changes nothing; a `pr_rejected` Event says where and why.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction

from ..github.client import GitHubError, client_from_settings
from ..github.pr_titles import parse_pr_title
from ..models import Claim, ClaimStatus, Event, PullRequest, Source, Task
from ..vocab import EventKind
from .claim_rules import (ApplyResult, claim_task, claims_backed_elsewhere, contributor_for, parse_github_time,
                          withdraw_claim)
from .conflicts import retry_on_conflict
from .events import record_event
from .status import advance_claim_status, refresh_task_status

# At a tie (same updated_at, no newer fact from GitHub) the state that ranks higher stays: a merged PR never
# changes again, and an open one is what a close-and-reopen in one second most often ends as.
TIE_RANK = {PullRequest.State.MERGED: 3, PullRequest.State.OPEN: 2, PullRequest.State.CLOSED: 1,
            PullRequest.State.UNKNOWN: 0}
_SUBMITTED_STATES = [PullRequest.State.OPEN, PullRequest.State.MERGED, PullRequest.State.UNKNOWN]

_REPO_FROM_URL = re.compile(r"github\.com/(?P<repo>[^/]+/[^/]+)/(?:pull|issues)/\d+")
_REPO_FROM_API_URL = re.compile(r"/repos/(?P<repo>[^/]+/[^/]+?)/?$")


def _as_github_spells_it(repo: str | None, payload: dict) -> str | None:
    """The repository of a PR as GitHub spells it (the payload's base repo, API or page URL): GitHub's names are
    case-insensitive, so `repo` (a configured or typed name) in another case is the same repository and is stored in
    GitHub's spelling; a `repo` naming another repository than the payload keeps the caller's word."""
    named = ((payload.get("base") or {}).get("repo") or {}).get("full_name")
    for key, pattern in (("repository_url", _REPO_FROM_API_URL), ("html_url", _REPO_FROM_URL)):
        if not named and isinstance(payload.get(key), str) and (match := pattern.search(payload[key])):
            named = match.group("repo")
    if repo and not (named and named.lower() == repo.lower()):
        return repo
    return named or repo


def find_pull_request(repo: str, number: int, *, for_update: bool = False) -> PullRequest | None:
    """The stored PR of this repository, in any case (`paddlepaddle/paddle#1` is `PaddlePaddle/Paddle#1`)."""
    rows = PullRequest.objects.select_for_update() if for_update else PullRequest.objects
    return rows.filter(repo__iexact=repo, number=number).order_by("id").first()


def normalize_pull_request(payload: dict, repo: str | None = None) -> dict:
    """One shape for a webhook `pull_request`, a REST pull and a search-API issue item."""
    repo = _as_github_spells_it(repo, payload)
    if not repo:
        raise ValueError(f"pull request #{payload.get('number')}: cannot tell its repository")
    merged_at = payload.get("merged_at") or (payload.get("pull_request") or {}).get("merged_at")
    merged = bool(payload.get("merged")) or bool(merged_at)
    state = payload.get("state") or "open"
    if merged:
        state = PullRequest.State.MERGED
    elif state == "closed":
        state = PullRequest.State.CLOSED
    else:
        state = PullRequest.State.OPEN
    return {
        "repo": repo,
        "number": int(payload["number"]),
        "title": payload.get("title") or "",
        "login": (payload.get("user") or {}).get("login") or "",
        "state": state,
        "html_url": payload.get("html_url") or f"https://github.com/{repo}/pull/{payload['number']}",
        "created_at": parse_github_time(payload.get("created_at")),
        "updated_at": parse_github_time(payload.get("updated_at")),
        "closed_at": parse_github_time(payload.get("closed_at")),
        "merged_at": parse_github_time(merged_at),
    }


def target_claim_status(pr: PullRequest) -> str | None:
    if pr.state == PullRequest.State.MERGED:
        return ClaimStatus.PARTIAL if pr.part else ClaimStatus.COMPLETED
    if pr.state == PullRequest.State.OPEN:
        return ClaimStatus.PR_SUBMITTED
    return None  # closed without merge: the claim stays as it is


@dataclass
class _Delivery:
    """One pull-request payload being applied: what it says and how its events are labelled."""

    info: dict
    parsed: object  # pr_titles.TitleParse
    prefix: str
    result: ApplyResult
    data: dict
    when: object

    @property
    def source_ref(self) -> str:
        return self.info["html_url"]


def _ties(pr: PullRequest | None, info: dict) -> bool:
    """The payload has the stored state's updated_at but says another state or title."""
    return (pr is not None and info["updated_at"] is not None and pr.github_updated_at == info["updated_at"]
            and (pr.state != info["state"] or pr.title != info["title"]))


def reread_on_tie(payload: dict, repo: str | None = None) -> dict | None:
    """The PR as GitHub shows it now (GET /repos/{repo}/pulls/{n}) when `payload` ties the stored state; None
    when it does not, or GitHub cannot be asked (then the tie rule decides). Writes nothing: call it before
    the delivery's transaction, so a slow GitHub never holds the write lock."""
    info = normalize_pull_request(payload, repo)
    if not _ties(find_pull_request(info["repo"], info["number"]), info):
        return None
    try:
        fresh = client_from_settings(max_wait=5.0).get_pull_request(info["repo"], info["number"])
        if normalize_pull_request(fresh, info["repo"])["number"] != info["number"]:
            return None
    except (GitHubError, KeyError, TypeError, ValueError, AttributeError):
        return None  # GitHub did not answer, or not with this pull request: the tie rule decides
    return fresh


@retry_on_conflict
def apply_pull_request(payload: dict, *, repo: str | None = None, delivery_id: str = "",
                       prefix: str | None = None, current: bool = False) -> ApplyResult:
    """Apply one pull request (webhook or poller) in named steps: a rejected title is recorded once; a PR
    older than the stored state, or tying it with a lower-ranked state (TIE_RANK), is skipped; else the PR
    row, its task links, then the author's claims. `current`: the payload was just read from GitHub (the
    poller, a re-read): the newest fact, which wins a tie."""
    info = normalize_pull_request(payload, repo)
    prefix = prefix or settings.GITHUB_PR_TITLE_PREFIX
    delivery = _Delivery(
        info=info, parsed=parse_pr_title(info["title"], prefix, max_tasks=settings.CLAIM_MAX_TASKS), prefix=prefix,
        result=ApplyResult(), when=info["updated_at"],
        data={"pr": f"{info['repo']}#{info['number']}", **({"delivery": delivery_id} if delivery_id else {})})
    if delivery.parsed.error:
        return _reject_title(delivery)
    pr = find_pull_request(info["repo"], info["number"], for_update=True)
    if pr is None and not delivery.parsed.tasks:
        delivery.result.skipped = "title names no task of this board"
        return delivery.result
    if _is_stale(delivery, pr, current):
        return delivery.result
    author = contributor_for(info["login"]) if info["login"] else None
    pr, created, old_state, old_title_tasks = _save_pull_request(delivery, pr, author)
    linked, touched = _relink_tasks(delivery, pr, created, old_title_tasks)
    _release_unlinked(delivery, pr, {n: t for n, t in touched.items() if n not in linked})
    if not created and old_state != pr.state:
        for task in linked.values():
            record_event(task=task, kind=EventKind.PR_STATE, source=Source.PR, source_ref=delivery.source_ref,
                         actor=delivery.info["login"], message=f"{pr} {old_state} → {pr.state}",
                         data=delivery.data, when=delivery.when)
    _update_claims(delivery, pr, author, old_state, linked, touched)
    for task in touched.values():
        refresh_task_status(task)
    return delivery.result


def _is_stale(delivery: _Delivery, pr: PullRequest | None, current: bool) -> bool:
    """An older payload than the stored state, or one tying it with a state that ranks lower (unless it is
    GitHub's current state), changes nothing: True, with the reason in the result."""
    info, result = delivery.info, delivery.result
    if pr is not None and pr.github_updated_at and delivery.when and delivery.when < pr.github_updated_at:
        result.skipped = "older than the state already applied"
    elif not current and _ties(pr, info) and TIE_RANK.get(info["state"], 0) < TIE_RANK.get(pr.state, 0):
        result.skipped = (f"same second as the state already applied ({pr.state}), and no newer fact from GitHub: "
                          f"{pr.state} outranks {info['state']}")
    return bool(result.skipped)


def _reject_title(delivery: _Delivery) -> ApplyResult:
    info, result = delivery.info, delivery.result
    result.skipped = f"{info['repo']}#{info['number']}: {delivery.parsed.error}"
    result.errors.append({"code": "title_rejected", "numbers": [], "message": result.skipped})
    # Once per title: the poller and redelivered webhooks see the same PR again and again.
    if not Event.objects.filter(kind=EventKind.PR_REJECTED, source_ref=delivery.source_ref,
                                data__title=info["title"]).exists():
        record_event(task=None, kind=EventKind.PR_REJECTED, source=Source.PR, source_ref=delivery.source_ref,
                     actor=delivery.info["login"], message=f"pull request rejected: {result.skipped}",
                     data={**delivery.data, "title": info["title"], "reason": delivery.parsed.error}, when=delivery.when)
    return result


def _save_pull_request(delivery: _Delivery, pr: PullRequest | None, author):
    """The PR row with the payload's fields: (pr, created, its state before, the tasks its old title named)."""
    info, parsed = delivery.info, delivery.parsed
    old_title_tasks = set(parse_pr_title(pr.title, delivery.prefix, max_tasks=settings.CLAIM_MAX_TASKS).tasks) \
        if pr is not None and pr.title else set()
    created = pr is None
    if created:
        pr = PullRequest(repo=info["repo"], number=info["number"])
    old_state = pr.state
    fields = {  # the repository as GitHub spells it: a row stored from a typed name in another case takes it
        "repo": info["repo"], "title": info["title"], "author": author or pr.author, "state": info["state"], "part": parsed.part,
        "created_at": info["created_at"] or pr.created_at, "merged_at": info["merged_at"],
        "closed_at": info["closed_at"], "github_updated_at": delivery.when or pr.github_updated_at,
    }
    dirty = created or any(getattr(pr, name) != value for name, value in fields.items())
    for name, value in fields.items():
        setattr(pr, name, value)
    if dirty:
        pr.save()
        delivery.result.changes += 1
    return pr, created, old_state, old_title_tasks


def _relink_tasks(delivery: _Delivery, pr: PullRequest, created: bool, old_title_tasks: set[int]):
    """Link the tasks the title names, unlink those only the old title named: ({number: task} linked now,
    {number: task} touched)."""
    info, parsed, result = delivery.info, delivery.parsed, delivery.result
    linked = {t.number: t for t in pr.tasks.all()}
    title_tasks = {t.number: t for t in Task.objects.filter(number__in=parsed.tasks)}
    missing = sorted(set(parsed.tasks) - set(title_tasks))
    if missing and (created or old_title_tasks != set(parsed.tasks)):
        result.errors.append({"code": "not_on_board", "numbers": missing,
                              "message": f"{pr}: task {', '.join(map(str, missing))} is not on the board"})
        record_event(task=None, kind=EventKind.PR_UNKNOWN_TASK, source=Source.PR, source_ref=delivery.source_ref,
                     actor=delivery.info["login"], message=result.errors[-1]["message"],
                     data=delivery.data, when=delivery.when)
    touched: dict[int, Task] = {}
    for number, task in title_tasks.items():
        if number not in linked:
            pr.tasks.add(task)
            linked[number] = task
            touched[number] = task
            result.changes += 1
            record_event(task=task, kind=EventKind.PR_LINKED, source=Source.PR, source_ref=delivery.source_ref,
                         actor=delivery.info["login"], message=f"{pr} linked: {info['title']}",
                         data=delivery.data, when=delivery.when)
    # Links an earlier title made and the edited title no longer makes; links from elsewhere stay.
    for number in sorted(old_title_tasks - set(parsed.tasks)):
        task = linked.pop(number, None)
        if task is not None:
            pr.tasks.remove(task)
            touched[number] = task
            result.changes += 1
            record_event(task=task, kind=EventKind.PR_UNLINKED, source=Source.PR, source_ref=delivery.source_ref,
                         actor=delivery.info["login"], message=f"{pr} no longer names No.{number}: {info['title']}",
                         data=delivery.data, when=delivery.when)
    return linked, touched


def _update_claims(delivery: _Delivery, pr: PullRequest, author, old_state: str, linked: dict, touched: dict) -> None:
    """The author's claim on every linked task follows the PR: claimed (again), PR submitted, completed or
    partial; a PR closed without merge takes its 提交PR back."""
    result, source_ref, when, data = delivery.result, delivery.source_ref, delivery.when, delivery.data
    target = target_claim_status(pr)
    for number, task in sorted(linked.items()):
        touched[number] = task
        if author is None or task.locked:
            continue
        if author.claims.filter(task=task, withdrawn_at__isnull=True).exists() is False:
            # The author works on the task: the PR claims it (again) for them, as the bot does.
            if claim_task(task, author, source=Source.PR, source_ref=source_ref, when=when, data=data):
                result.claimed.append(number)
                result.changes += 1
        if target is None:
            if pr.state == PullRequest.State.CLOSED and old_state != pr.state:
                if _take_back_pr_submitted(pr, task, author, source_ref=source_ref, when=when, data=data):
                    result.changes += 1
            continue
        claim = Claim.objects.get(task=task, contributor=author)
        new_status = advance_claim_status(claim.status, target)
        if new_status != claim.status:
            record_event(task=task, kind=EventKind.CLAIM_STATUS, source=Source.PR, source_ref=delivery.source_ref,
                         actor=delivery.info["login"], message=f"@{author.login} on No.{number}: {claim.status} → {new_status}",
                         data={**data, "from": claim.status, "to": new_status}, when=delivery.when)
            claim.status = new_status
            claim.save(update_fields=["status", "updated"])
            result.changes += 1


def _take_back_pr_submitted(pr: PullRequest, task: Task, author, *, source_ref: str, when, data: dict) -> bool:
    """A PR closed without merge: undo the 提交PR it set, unless another open or merged PR of the
    author (or one the board lists with unknown state) still backs it. True when the status moved."""
    claim = Claim.objects.filter(task=task, contributor=author).first()
    if claim is None or claim.status != ClaimStatus.PR_SUBMITTED:
        return False  # never set by a PR, or already moved on (merged elsewhere, partial…)
    # 提交PR set by a pull request of the author (this one, or an earlier one this one kept it at).
    set_by_a_pr = Event.objects.filter(task=task, kind=EventKind.CLAIM_STATUS, source=Source.PR, actor__iexact=author.login,
                                       data__to=ClaimStatus.PR_SUBMITTED).order_by("-created", "-id").first()
    if set_by_a_pr is None:
        return False  # 提交PR came from elsewhere (the board's badge): not a PR's to take back
    backing = task.pull_requests.filter(author=author).exclude(pk=pr.pk).filter(
        state__in=[PullRequest.State.OPEN, PullRequest.State.MERGED, PullRequest.State.UNKNOWN]).first()
    if backing is not None:
        record_event(task=task, kind=EventKind.CLAIM_KEPT, source=Source.PR, source_ref=source_ref, actor=author.login,
                     message=f"{pr} closed without merge; @{author.login} stays {claim.status} on No.{task.number}: "
                             f"{backing} ({backing.state}) still backs it", data=data, when=when)
        return False
    previous = set_by_a_pr.data.get("from") or ClaimStatus.CLAIMED
    record_event(task=task, kind=EventKind.CLAIM_STATUS, source=Source.PR, source_ref=source_ref, actor=author.login,
                 message=f"@{author.login} on No.{task.number}: {claim.status} → {previous} ({pr} closed without merge)",
                 data={**data, "from": claim.status, "to": previous, "reason": "closed without merge"}, when=when)
    claim.status = previous
    claim.save(update_fields=["status", "updated"])
    return True


def _release_unlinked(delivery: _Delivery, pr: PullRequest, unlinked: dict[int, Task]) -> None:
    """Tasks the edited title no longer names: the author's claim status this PR set there goes back to what it
    was, and a claim this PR made is withdrawn, unless another PR of the author (for the claim: or a comment)
    still backs them (a `claim_kept` Event names what)."""
    author, result, data = pr.author, delivery.result, delivery.data
    for number, task in sorted(unlinked.items()):
        claim = Claim.objects.filter(task=task, contributor=author, withdrawn_at__isnull=True).first() \
            if author is not None else None
        if claim is None:
            continue
        backing = task.pull_requests.filter(author=author, state__in=_SUBMITTED_STATES).exclude(pk=pr.pk).first()
        if backing is not None:
            record_event(task=task, kind=EventKind.CLAIM_KEPT, source=Source.PR, source_ref=delivery.source_ref,
                         actor=author.login, data=data, when=delivery.when,
                         message=f"{pr} no longer names No.{number}; @{author.login} stays {claim.status}: "
                                 f"{backing} ({backing.state}) still backs it")
            continue
        if _restore_status_before(delivery, pr, claim):
            result.changes += 1
        made_by_this_pr = claim.source == Source.PR and claim.source_ref == delivery.source_ref
        if made_by_this_pr and not claims_backed_elsewhere(author, task) and withdraw_claim(
                task, author, source=Source.PR, source_ref=delivery.source_ref, when=delivery.when, data=data,
                reason=f"{pr} no longer names it"):
            result.withdrawn.append(number)
            result.changes += 1


def _restore_status_before(delivery: _Delivery, pr: PullRequest, claim: Claim) -> bool:
    """The claim goes back to its status before this PR first moved it, if this PR's last move still stands."""
    moves = Event.objects.filter(task=claim.task, kind=EventKind.CLAIM_STATUS, source=Source.PR,
                                 actor__iexact=claim.contributor.login, data__pr=delivery.data["pr"])
    moves = moves.order_by("created", "id")
    first, last = moves.first(), moves.last()
    if first is None or claim.status != last.data.get("to"):
        return False  # never moved by this PR, or moved on since by something else
    previous = first.data.get("from") or ClaimStatus.CLAIMED
    if previous == claim.status:
        return False
    login, number = claim.contributor.login, claim.task.number
    record_event(task=claim.task, kind=EventKind.CLAIM_STATUS, source=Source.PR, source_ref=delivery.source_ref,
                 actor=login, message=f"@{login} on No.{number}: {claim.status} → {previous} ({pr} no longer names it)",
                 data={**delivery.data, "from": claim.status, "to": previous,
                       "reason": "title no longer names the task"},
                 when=delivery.when)
    claim.status = previous
    claim.save(update_fields=["status", "updated"])
    return True


@transaction.atomic
def apply_pull_request_atomic(payload: dict, **kwargs) -> ApplyResult:
    return apply_pull_request(payload, **kwargs)
