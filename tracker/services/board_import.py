"""Import the tracking issue's task table (the board) in either of its two renderings.

(a) the plain rendering of the issue body (the seed): rows `序号<TAB>API<TAB>kernel类别<TAB>报名人/状态/PR`,
    e.g. `2	paddle.all	GPU	@BeingGod @cangtianhuang @co63oc #280`;
(b) the markdown table the community bot maintains, one `<br>`-separated segment per person:
    `| 1 | paddle.add_n | CPU | @BeingGod <img src="https://img.shields.io/badge/状态-报名-2ECC71" /> [#280](…)<br> |`.

The plain form carries no per-person status and does not say whose PR is whose, so claimants get 报名
and PRs are linked to the task with their author left unknown. In the bot's form each person's badge
gives their status and the PR links in a person's segment are that person's.

Re-importing the same board changes nothing. A changed row updates only what changed and records an
Event (source=seed, source_ref=file:line). A bad row is reported with file:line and skipped, inside its
own savepoint, so it never removes or corrupts what is stored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from django.db import transaction
from django.utils import timezone

from ..github.logins import login_problem
from ..models import Claim, ClaimStatus, Contributor, Kernel, PullRequest, Source, Task
from ..vocab import EventKind
from .events import record_event
from .pull_requests import find_pull_request
from .status import advance_claim_status, refresh_task_status
from .tracking_summary import TrackingSummary, import_summary

PADDLEAPITEST_REPO = "PFCCLab/PaddleAPITest"
PADDLE_REPO = "PaddlePaddle/Paddle"
# The board's PR numbers carry no repo: PaddleAPITest's PRs are numbered below 10000, Paddle's far above.
PADDLEAPITEST_PR_LIMIT = 10000

# A status cell such as "output dtype类型不同，暂不要报名" closes the task to claims; the text is the reason.
_LOCK_PHRASES = ("不要报名", "暂停报名", "禁止报名", "不可报名", "do not claim")

# Any @word is taken whole and then checked against GitHub's rule (github/logins.py): `@a--b` or `@x-`
# is a bad row, not a login cut short.
_LOGIN_RE = re.compile(r"(?<![\w/])@([A-Za-z0-9][A-Za-z0-9-]*(?:\[bot\])?)")
_MD_PR_RE = re.compile(r"\[#(\d+)\]\((https?://[^)\s]+)\)")
_PR_URL_RE = re.compile(r"github\.com/([\w.-]+/[\w.-]+)/(?:pull|issues)/(\d+)")
_BARE_PR_RE = re.compile(r"(?<![\w/&])#(\d+)\b")
_IMG_RE = re.compile(r"<img\b[^>]*?src=\"([^\"]*)\"[^>]*>", re.IGNORECASE)
_BADGE_STATUS_RE = re.compile(r"/badge/([^/]*)$")
_BR_RE = re.compile(r"<br\s*/?>", re.IGNORECASE)
_KNOWN_STATUSES = {s.value for s in ClaimStatus}


class BoardFormatError(ValueError):
    """The text holds no board table at all (as opposed to a single bad row)."""


@dataclass(frozen=True)
class PRRef:
    repo: str
    number: int

    @property
    def url(self) -> str:
        return f"https://github.com/{self.repo}/pull/{self.number}"


@dataclass
class Person:
    login: str
    status: str = ClaimStatus.CLAIMED.value
    prs: list[PRRef] = field(default_factory=list)


@dataclass
class BoardRow:
    number: int
    api: str
    kernel: str
    line: int
    people: list[Person] = field(default_factory=list)
    # Every PR of the row. `authored`: the row comes from the bot's table, which gives each person's
    # status and puts each person's PRs in their segment (the plain form does neither).
    prs: list[PRRef] = field(default_factory=list)
    authored: bool = False
    locked_reason: str = ""


@dataclass
class RowError:
    line: int
    message: str
    text: str = ""

    def format(self, source: str) -> str:
        return f"{source}:{self.line}: {self.message}" + (f" — {self.text[:120]!r}" if self.text else "")


@dataclass
class ParsedBoard:
    form: str  # "plain" | "markdown"
    rows: list[BoardRow]
    errors: list[RowError]


@dataclass
class ImportReport:
    source: str
    form: str = ""
    rows: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    errors: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    # People the board lists whose withdrawal (on GitHub or the site) the import did not undo.
    kept_withdrawn: list[str] = field(default_factory=list)
    # The issue's own 看板信息 figures (services/tracking_summary.py); None: the text has none or a malformed one.
    figures: TrackingSummary | None = None

    def summary(self) -> str:
        figures = (f"; its summary: {self.figures.tasks} tasks, {self.figures.submitted} / {self.figures.claimed} "
                   f"submitted / claimed, {self.figures.completed} completed" if self.figures else "")
        return (
            f"{self.source}: {self.form} board, {self.rows} rows — {self.created} created, {self.updated} updated, "
            f"{self.unchanged} unchanged, {len(self.errors)} skipped with errors{figures}"
        )


def pr_ref(number: int, repo: str | None = None) -> PRRef:
    if repo:
        return PRRef(repo, number)
    return PRRef(PADDLEAPITEST_REPO if number < PADDLEAPITEST_PR_LIMIT else PADDLE_REPO, number)


def _lock_reason(text: str) -> str:
    lowered = text.lower()
    return text.strip() if any(p in lowered for p in _LOCK_PHRASES) else ""


def _row_head(number_text: str, api: str, kernel: str, line: int, text: str) -> BoardRow | RowError:
    number_text, api, kernel = number_text.strip(), api.strip(), kernel.strip()
    if not number_text.isdigit():
        return RowError(line, f"task number {number_text!r} is not a positive integer", text)
    if int(number_text) < 1:
        return RowError(line, "task number must be at least 1", text)
    if not re.fullmatch(r"[A-Za-z_][\w.]*", api):
        return RowError(line, f"API name {api!r} is not a dotted Python name", text)
    kernel_upper = kernel.upper()
    if kernel_upper not in Kernel.values:
        return RowError(line, f"kernel {kernel!r} is neither CPU nor GPU", text)
    return BoardRow(number=int(number_text), api=api, kernel=kernel_upper, line=line)


def _parse_plain_cell(row: BoardRow, cell: str, text: str) -> RowError | None:
    """`@a @b #280 #212` — claimants and PRs, nobody's status, nobody's PR in particular."""
    rest = cell
    if problem := _logins_problem(cell):
        return RowError(row.line, problem, text)
    for login in _LOGIN_RE.findall(cell):
        if login.lower() not in {p.login.lower() for p in row.people}:
            row.people.append(Person(login))
    rest = _LOGIN_RE.sub(" ", rest)
    for match in _MD_PR_RE.finditer(rest):
        _add_pr(row.prs, _link_ref(int(match.group(1)), match.group(2)))
    rest = _MD_PR_RE.sub(" ", rest)
    for number in _BARE_PR_RE.findall(rest):
        _add_pr(row.prs, pr_ref(int(number)))
    rest = _BARE_PR_RE.sub(" ", rest).strip(" ,，、;；")
    if rest:
        reason = _lock_reason(rest)
        if not reason:
            return RowError(row.line, f"unrecognised text in the status cell: {rest!r}", text)
        row.locked_reason = reason
    return None


def _logins_problem(text: str) -> str | None:
    for login in _LOGIN_RE.findall(text):
        if problem := login_problem(login):
            return problem
    return None


def _link_ref(number: int, url: str) -> PRRef:
    match = _PR_URL_RE.search(url)
    # A markdown link names the repo outright; the number rule is only for bare `#N`.
    return PRRef(match.group(1), number) if match and int(match.group(2)) == number else pr_ref(number)


def _add_pr(prs: list[PRRef], ref: PRRef) -> None:
    if ref not in prs:
        prs.append(ref)


def _parse_markdown_cell(row: BoardRow, cell: str, text: str) -> RowError | None:
    """One `<br>`-separated segment per person: `@login <img …badge/状态-提交PR-…> [#N](url) …`."""
    lock_parts = []
    row.authored = True
    for segment in _BR_RE.split(cell):
        segment = segment.strip()
        if not segment:
            continue
        without_links = _MD_PR_RE.sub(" ", _IMG_RE.sub(" ", segment))
        logins = _LOGIN_RE.findall(without_links)
        if problem := _logins_problem(without_links):
            return RowError(row.line, problem, text)
        statuses = []
        for src in _IMG_RE.findall(segment):
            badge = _BADGE_STATUS_RE.search(unquote(src).split("?")[0])
            if not badge:
                return RowError(row.line, f"image is not a status badge: {src!r}", text)
            # shields.io static badge path: LABEL-MESSAGE-COLOR ("--" escapes a dash, "__" an underscore)
            parts = badge.group(1).replace("--", "\0").split("-")
            if len(parts) != 3:
                return RowError(row.line, f"status badge {badge.group(1)!r} is not LABEL-STATUS-COLOR", text)
            status = parts[1].replace("\0", "-").replace("__", "_").strip()
            if status not in _KNOWN_STATUSES:
                return RowError(row.line, f"unknown status {status!r} (known: {', '.join(_KNOWN_STATUSES)})", text)
            statuses.append(status)
        refs = [_link_ref(int(n), url) for n, url in _MD_PR_RE.findall(segment)]
        rest = _LOGIN_RE.sub(" ", without_links)
        refs += [pr_ref(int(n)) for n in _BARE_PR_RE.findall(rest)]
        rest = _BARE_PR_RE.sub(" ", rest).strip(" ,，、;；")
        if rest:
            if _lock_reason(rest) and not logins:
                lock_parts.append(rest)
            else:
                return RowError(row.line, f"unrecognised text in the status cell: {rest!r}", text)
        if len(statuses) > 1 or (statuses and len(logins) != 1):
            return RowError(row.line, "a status badge must follow exactly one @login", text)
        for ref in refs:
            _add_pr(row.prs, ref)
        for login in logins:
            person = next((p for p in row.people if p.login.lower() == login.lower()), None)
            if person is None:
                person = Person(login)
                row.people.append(person)
            if statuses:
                person.status = statuses[0]
            if len(logins) == 1:  # several people in one segment: whose PR it is cannot be told
                for ref in refs:
                    if ref not in person.prs:
                        person.prs.append(ref)
    if lock_parts:
        row.locked_reason = " ".join(lock_parts)
    return None


_PLAIN_HEADER_RE = re.compile(r"^\s*序号\s*\t\s*API\s*\t")
_MD_HEADER_RE = re.compile(r"^\s*\|\s*序号\s*\|\s*API\s*\|")
_MD_SEPARATOR_RE = re.compile(r"^\s*\|(\s*:?-{3,}:?\s*\|)+\s*$")


def parse_board(text: str) -> ParsedBoard:
    """Find the task table in the issue body and parse its rows (no database access)."""
    lines = text.splitlines()
    for index, raw in enumerate(lines):
        if _MD_HEADER_RE.match(raw):
            return _parse_markdown_table(lines, index)
        if _PLAIN_HEADER_RE.match(raw):
            return _parse_plain_table(lines, index)
    raise BoardFormatError("no task table found: expected a header row starting with 序号 | API (markdown) or 序号<TAB>API")


def _parse_plain_table(lines: list[str], header_index: int) -> ParsedBoard:
    rows, errors = [], []
    for index in range(header_index + 1, len(lines)):
        raw = lines[index]
        if not raw.strip():
            break  # the table ends at the first blank line
        line = index + 1
        columns = raw.split("\t")
        if len(columns) < 3:
            errors.append(RowError(line, f"expected 序号, API, kernel类别 and 报名人/状态/PR separated by tabs, got {len(columns)} column(s)", raw))
            continue
        head = _row_head(columns[0], columns[1], columns[2], line, raw)
        if isinstance(head, RowError):
            errors.append(head)
            continue
        error = _parse_plain_cell(head, " ".join(columns[3:]), raw)
        if error:
            errors.append(error)
            continue
        rows.append(head)
    return _check_duplicates(ParsedBoard("plain", rows, errors))


def _parse_markdown_table(lines: list[str], header_index: int) -> ParsedBoard:
    rows, errors = [], []
    for index in range(header_index + 1, len(lines)):
        raw = lines[index]
        if not raw.strip().startswith("|"):
            break  # the table ends at the first line that is not a table row
        if _MD_SEPARATOR_RE.match(raw):
            continue
        line = index + 1
        body = raw.strip()
        body = body[1:-1] if body.endswith("|") and len(body) > 1 else body[1:]
        columns = body.split("|")
        if len(columns) < 3:
            errors.append(RowError(line, f"expected 4 columns, got {len(columns)}", raw))
            continue
        head = _row_head(columns[0], columns[1], columns[2], line, raw)
        if isinstance(head, RowError):
            errors.append(head)
            continue
        error = _parse_markdown_cell(head, "|".join(columns[3:]), raw)
        if error:
            errors.append(error)
            continue
        rows.append(head)
    return _check_duplicates(ParsedBoard("markdown", rows, errors))


def _check_duplicates(board: ParsedBoard) -> ParsedBoard:
    seen: dict[int, int] = {}
    kept = []
    for row in board.rows:
        if row.number in seen:
            board.errors.append(RowError(row.line, f"task number {row.number} already used on line {seen[row.number]}"))
            continue
        seen[row.number] = row.line
        kept.append(row)
    board.rows = kept
    board.errors.sort(key=lambda e: e.line)
    return board


# --- writing to the database ----------------------------------------------------------------------


def load_board_file(path: str | Path, *, when=None) -> ImportReport:
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    return load_board_text(text, source=path.name, when=when)


def load_board_text(text: str, *, source: str, when=None) -> ImportReport:
    parsed = parse_board(text)
    report = ImportReport(source=source, form=parsed.form, rows=len(parsed.rows))
    report.errors.extend(e.format(source) for e in parsed.errors)
    when = when or timezone.now()
    contributors = {c.login.lower(): c for c in Contributor.objects.all()}
    authors = _pr_authors(parsed.rows)
    for row in parsed.rows:
        ref = f"{source}:{row.line}"
        try:
            with transaction.atomic():  # one savepoint per row: a failing row leaves the rest intact
                outcome = _apply_row(row, ref, when, contributors, authors, report)
        except Exception as exc:  # noqa: BLE001 — reported with file:line, the row is skipped
            # The savepoint rolled back; forget contributors created inside it.
            contributors = {c.login.lower(): c for c in Contributor.objects.all()}
            report.errors.append(f"{ref}: {type(exc).__name__}: {exc}")
            continue
        setattr(report, outcome, getattr(report, outcome) + 1)
    report.figures, error = import_summary(text, source=source, when=when)
    if error:
        report.errors.append(error)
    return report


def _pr_authors(rows: list[BoardRow]) -> dict[PRRef, str]:
    """PR → login, for PRs that the whole board puts under exactly one person (otherwise: unknown)."""
    listed: dict[PRRef, set[str]] = {}
    for row in rows:
        if row.authored:
            for person in row.people:
                for ref in person.prs:
                    listed.setdefault(ref, set()).add(person.login)
    return {ref: next(iter(logins)) for ref, logins in listed.items() if len({l.lower() for l in logins}) == 1}


def _contributor(login: str, contributors: dict[str, Contributor]) -> Contributor:
    existing = contributors.get(login.lower())
    if existing is None:
        existing = Contributor.objects.create(login=login)
        contributors[login.lower()] = existing
    return existing


@dataclass
class _RowImport:
    """One board row being applied: where it is, when, and the changes it makes (its events, in order)."""

    row: BoardRow
    ref: str  # file:line, the events' source_ref
    when: object
    contributors: dict[str, Contributor]  # lower-case login → contributor, shared by the rows of one import
    report: ImportReport
    changes: list[tuple[str, str, dict]] = field(default_factory=list)  # (kind, message, data)

    def change(self, kind: str, message: str, data: dict) -> None:
        self.changes.append((kind, message, data))


def _apply_row(row: BoardRow, ref: str, when, contributors, authors: dict[PRRef, str], report: ImportReport) -> str:
    """Apply one row in named steps: the task, its claimants' claims, its PRs, then the task's status. Every change
    is an event (source=seed, source_ref=file:line). Returns which count of the report the row adds to."""
    applying = _RowImport(row, ref, when, contributors, report)
    task, created = _save_task(applying)
    _update_claims(applying, task)
    _link_prs(applying, task, authors)
    status_before = task.status
    if refresh_task_status(task):
        applying.change(EventKind.STATUS, f"{status_before} → {task.status}", {"old": status_before, "new": task.status})
    for kind, message, data in applying.changes:
        record_event(task=task, kind=kind, source=Source.SEED, source_ref=ref, message=message, data=data, when=when)
    if applying.changes and not created:
        report.changes.append(f"{ref}: No.{row.number}: " + "; ".join(m for _, m, _ in applying.changes))
    return "created" if created else ("updated" if applying.changes else "unchanged")


def _save_task(applying: _RowImport) -> tuple[Task, bool]:
    """The row's task, created, or with the API, kernel and lock the row gives: (task, created)."""
    row = applying.row
    task = Task.objects.filter(number=row.number).first()
    if task is None:
        task = Task.objects.create(number=row.number, api=row.api, kernel=row.kernel, locked_reason=row.locked_reason)
        applying.change(EventKind.TASK_CREATED, f"No.{row.number} {row.api} {row.kernel}",
                        {"api": row.api, "kernel": row.kernel})
        if row.locked_reason:
            applying.change(EventKind.LOCKED, row.locked_reason, {"locked_reason": row.locked_reason})
        return task, True
    fields = []
    for name in ("api", "kernel"):
        old, new = getattr(task, name), getattr(row, name)
        if old != new:
            setattr(task, name, new)
            fields.append(name)
            applying.change(EventKind.TASK_CHANGED, f"{name}: {old} → {new}", {"field": name, "old": old, "new": new})
    if task.locked_reason != row.locked_reason:
        old = task.locked_reason
        task.locked_reason = row.locked_reason
        fields.append("locked_reason")
        kind = EventKind.LOCKED if row.locked_reason else EventKind.UNLOCKED
        applying.change(kind, row.locked_reason or old, {"old": old, "new": row.locked_reason})
    if fields:
        task.save(update_fields=fields + ["updated"])
    return task, False


def _update_claims(applying: _RowImport, task: Task) -> None:
    """Everyone the row lists has a claim; a board claim of someone the row no longer lists is withdrawn."""
    claims = {c.contributor.login.lower(): c for c in task.claims.select_related("contributor")}
    for person in applying.row.people:
        contributor = _contributor(person.login, applying.contributors)
        claim = claims.get(person.login.lower())
        if claim is None:
            Claim.objects.create(task=task, contributor=contributor, status=person.status, source=Source.SEED,
                                 source_ref=applying.ref, created=applying.when)
            applying.change(EventKind.CLAIMED, f"@{contributor.login} {person.status}",
                            {"login": contributor.login, "status": person.status})
        else:
            _update_listed_claim(applying, claim, person, contributor)
    listed = {person.login.lower() for person in applying.row.people}
    for login, claim in claims.items():
        # Only claims that came from a board import are withdrawn by a board that no longer lists them;
        # claims made in comments or on the site are the GitHub sync's to manage.
        if login not in listed and claim.source == Source.SEED and claim.withdrawn_at is None:
            claim.withdrawn_at, claim.withdrawn_source = applying.when, Source.SEED
            claim.save(update_fields=["withdrawn_at", "withdrawn_source", "updated"])
            applying.change(EventKind.WITHDRAWN, f"@{claim.contributor.login} no longer listed",
                            {"login": claim.contributor.login})


def _update_listed_claim(applying: _RowImport, claim: Claim, person: Person, contributor: Contributor) -> None:
    """A listed person's stored claim: a board withdrawal is undone, a withdrawal on GitHub or the site never
    is (reported as kept); the bot's badge may only move the status forward."""
    row, fields = applying.row, []
    if claim.withdrawn_at is not None:
        if claim.withdrawn_source != Source.SEED:
            # Withdrawn on GitHub or on the site: a board text (perhaps older) never undoes that.
            applying.report.kept_withdrawn.append(f"{applying.ref}: No.{row.number}: @{contributor.login} withdrew "
                                                  f"({claim.get_withdrawn_source_display() or 'source unknown'}); "
                                                  f"the board still lists them")
            return
        claim.withdrawn_at, claim.withdrawn_source = None, ""
        fields += ["withdrawn_at", "withdrawn_source"]
        applying.change(EventKind.CLAIMED, f"@{contributor.login} listed again", {"login": contributor.login})
    # The plain form shows no status, so it keeps ours; the bot's badges may only move a person forward
    # (the table can be older than what the GitHub sync has already applied).
    if row.authored and advance_claim_status(claim.status, person.status) != claim.status:
        applying.change(EventKind.CLAIM_STATUS, f"@{contributor.login}: {claim.status} → {person.status}",
                        {"login": contributor.login, "old": claim.status, "new": person.status})
        claim.status = person.status
        fields.append("status")
    if fields:
        claim.save(update_fields=fields + ["updated"])


def _link_prs(applying: _RowImport, task: Task, authors: dict[PRRef, str]) -> None:
    """Every PR of the row is linked to the task, its author set when the whole board gives exactly one. PRs
    missing from the row stay linked: PR links also come from PR titles, which the board import can't judge."""
    linked = {(pr.repo.lower(), pr.number) for pr in task.pull_requests.all()}  # GitHub's names ignore case
    for pr in applying.row.prs:
        pull = find_pull_request(pr.repo, pr.number) or PullRequest.objects.create(repo=pr.repo, number=pr.number)
        author_login = authors.get(pr)
        if author_login and pull.author_id is None:
            pull.author = _contributor(author_login, applying.contributors)
            pull.save(update_fields=["author"])
            applying.change(EventKind.PR_AUTHOR, f"{pr.repo}#{pr.number} by @{author_login}",
                            {"repo": pr.repo, "number": pr.number, "login": author_login})
        if (pr.repo.lower(), pr.number) not in linked:
            pull.tasks.add(task)
            applying.change(EventKind.PR_LINKED, f"{pr.repo}#{pr.number}",
                            {"repo": pr.repo, "number": pr.number, "url": pr.url})
