"""Read claims and withdrawals out of a tracking-issue comment. Django-free.

People write these by hand, in Chinese and English input modes, so the reader is generous in what it
accepts and strict in what it applies:

* `【报名】: 1、2、3-5` (full- or half-width brackets, spaces inside, optional `:`/`：`) claims the
  numbers on the same line; `【取消报名】: 4` withdraws. Only lines that start with a marker count.
* `认领 N`, `认领 No.N`, `意向认领 task N, M` at the start of a line also claim, and so does the older
  team form: a `【序号】：N` line together with a `【状态】：报名…` line.
* Quoted lines (`>`), fenced code blocks, HTML comments and quoted e-mail replies (from
  `---原始邮件---` or `On … wrote:` on) are never read.
* Problems are reported as errors with line and column; the rest of the comment still applies.
* Abuse limits: a number of more than MAX_DIGITS digits is a syntax error (its line gives nothing),
  and a comment naming more than `max_tasks` tasks is rejected whole (error `too_many_tasks`, no
  claim and no withdrawal), as is one with more than MAX_MARKER_LINES claim lines (`too_many_lines`)
  or MAX_NUMBERS task numbers (`too_many_numbers`). Reading a comment is linear in its length.
* `【报名】: 21 (for @login)` names the person a claim is for. The parser only reports the login
  (`for_login`); whether to believe it (only when the site's own account wrote the comment) is the
  caller's decision.

Whether the author is a bot account is for the caller to decide (it knows the settings).
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from .numbers import NumberTooLong, TooManyNumbers, normalize_digits, scan_number_list

MAX_RANGE_LENGTH = 50
# Abuse limits that bound the work for one comment (65,536 characters of anyone's text): a comment with
# more claim lines or task numbers than these is rejected whole. Real claim comments have a few of each.
MAX_MARKER_LINES = 100
MAX_NUMBERS = 200
REJECTING_CODES = ("too_many_tasks", "too_many_lines", "too_many_numbers")  # errors that refuse the whole comment

# Every pattern here runs on text anyone on GitHub can write (65,536 characters per comment), so none may
# backtrack over a run of characters: quantifiers next to each other that can take the same characters
# (`[ \t]*` … `[ \t]*`) are possessive (`*+`), which keeps each match linear in the line's length. The lead
# of a line is read once, and the markers are matched where it ends.
_LEAD = re.compile(r"[ \t]*+(?:[-*+][ \t]++)?+(?:\*\*|__)?+[ \t]*+")  # indentation, a list bullet, bold
_OPEN = r"[【\[［〔〖]"
_CLOSE = r"[】\]］〕〗]"
_AFTER_MARKER = r"[ \t]*+(?:\*\*|__)?+[ \t]*+[:：]?+[ \t]*+(?:(?:task|任务)[ \t]*+)?+"

_BRACKET_MARKER = re.compile(
    _OPEN + r"[ \t]*+(?P<kind>取消[ \t]*+报名|报名)[ \t]*+" + _CLOSE + _AFTER_MARKER, re.IGNORECASE
)
# Plain-word forms; a line that starts with the word but carries no number is prose, not an error.
_WORD_MARKER = re.compile(r"(?:意向认领|认领)" + _AFTER_MARKER, re.IGNORECASE)
_TEAM_NUMBER = re.compile(_OPEN + r"[ \t]*+序号[ \t]*+" + _CLOSE + _AFTER_MARKER)
_TEAM_STATUS = re.compile(_OPEN + r"[ \t]*+状态[ \t]*+" + _CLOSE + r"[ \t]*+[:：]?+[ \t]*+(?P<status>.*)$")

# The lines that matter, found in one regex pass (the other lines are never looked at in Python):
# a fenced code block with its closing fence (skipped whole), an unclosed fence (the rest is code), the
# header of a quoted e-mail reply (everything from it on is quoted), and lines that start with a marker.
# Quoted lines (`>`) need no rule: a marker's lead never contains `>`.
_FENCED_BLOCK = (r"[ \t]{0,3}(?:(?P<ticks>`{3,}+)[^\n]*+(?:\n.*+)*?\n[ \t]{0,3}(?P=ticks)`*+"
                 r"|(?P<tildes>~{3,}+)[^\n]*+(?:\n.*+)*?\n[ \t]{0,3}(?P=tildes)~*+)[^\S\n]*+$")
_REPLY_HEADER = (r"[ \t]*+(?:-{2,}+[ \t]*+(?:原始邮件|(?i:Original Message))[ \t]*+-{2,}"
                 r"|On\b.*\bwrote:[ \t]*+$|在.*写道[:：][ \t]*+$"
                 r"|On\b(?=.*+\n.*\bwrote:[ \t]*+$))")  # Gmail wraps "On …\n… wrote:" over two lines
_MARKER_START = (_LEAD.pattern + r"(?:" + _OPEN + r"[ \t]*+(?:取消[ \t]*+报名|报名|序号|状态)[ \t]*+" + _CLOSE
                 + r"|意向认领|认领)")
_NOTABLE_LINE = re.compile(r"^(?:(?P<block>" + _FENCED_BLOCK + r")|(?P<unclosed>[ \t]{0,3}(?:`{3}|~{3}))"
                           r"|(?P<reply>" + _REPLY_HEADER + r")|(?P<marker>" + _MARKER_START + r"))", re.MULTILINE)
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
# "(for @login)" after a marker's number list: the site posts claims in the name of the signed-in user.
_FOR_LOGIN = re.compile(r"[ \t]*+[(（][ \t]*+for[ \t]++@(?P<login>[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38})[ \t]*+[)）]",
                        re.IGNORECASE)


@dataclass
class CommentError:
    line: int  # 1-based line of the comment
    column: int  # 1-based column
    code: str  # not_on_board | locked | reversed_range | range_too_long | no_numbers | number_too_long | too_many_*
    message: str
    numbers: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"line": self.line, "column": self.column, "code": self.code, "message": self.message,
                "numbers": self.numbers}


@dataclass
class CommentParse:
    claim: list[int]
    withdraw: list[int]
    errors: list[CommentError]
    for_login: str = ""  # the login of "(for @login)" when every marker line names the same one

    @property
    def rejected(self) -> bool:
        """The whole comment is refused (it names too many tasks)."""
        return any(e.code in REJECTING_CODES for e in self.errors)

    def as_dict(self) -> dict:
        out = {"claim": self.claim, "withdraw": self.withdraw, "errors": [e.as_dict() for e in self.errors]}
        if self.for_login:
            out["for_login"] = self.for_login
        return out


def marker_lines(body: str):
    """(line number, text) of the lines that start with a marker, outside code blocks, HTML comments
    and quoted replies; linear in the body's length."""
    # HTML comments are blanked, keeping their line breaks so line numbers stay right.
    body = _HTML_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), body or "")
    body = body.replace("\r\n", "\n").replace("\r", "\n")
    pos = counted = 0
    line_no = 1
    while (match := _NOTABLE_LINE.search(body, pos)) is not None:
        kind = match.lastgroup
        if kind in ("unclosed", "reply"):
            return  # the rest is code, or a quoted e-mail
        if kind == "block":
            pos = match.end()
            continue
        start = match.start()
        line_no += body.count("\n", counted, start)
        counted = start
        end = body.find("\n", start)
        pos = len(body) if end < 0 else end
        yield line_no, body[start:pos]


def parse_comment(body: str, *, max_task: int | None = None, locked: Mapping[int, str] | None = None,
                  max_tasks: int | None = None) -> CommentParse:
    """Claims, withdrawals and errors of one comment.

    max_task: numbers above it are not on the board (None: no upper bound). locked: task number →
    the reason it may not be claimed. max_tasks: a comment naming more distinct tasks than this is
    rejected whole (None: no limit).
    """
    locked = locked or {}
    errors: list[CommentError] = []
    claim: set[int] = set()
    withdraw: set[int] = set()
    named: set[int] = set()  # every task number the comment names, claimable or not
    for_logins: list[str] = []  # "(for @x)" of each marker line, "" where a line names nobody

    def apply(kind: str, numbers: list[int], line_no: int, column: int):
        for n in numbers:
            if kind == "claim":
                claim.add(n)
                withdraw.discard(n)
            else:
                withdraw.add(n)
                claim.discard(n)

    numbers_read = 0

    def scan(text: str, pos: int, line_no: int):
        """scan_number_list, with a too-long number recorded as this line's error (no items).

        Raises TooManyNumbers once the comment's lists hold more than MAX_NUMBERS items in all."""
        nonlocal numbers_read
        try:
            items, end = scan_number_list(text, pos, max_items=MAX_NUMBERS - numbers_read)
        except NumberTooLong as error:
            errors.append(CommentError(line_no, error.column + 1, "number_too_long", str(error)))
            return [], pos
        numbers_read += len(items)
        return items, end

    def read_list(text: str, pos: int, line_no: int, kind: str) -> list[int] | None:
        """Numbers of the list at `pos`, with errors recorded; None when there is no number at all."""
        items, end = scan(text, pos, line_no)
        if not items:
            return [] if errors and errors[-1].code == "number_too_long" and errors[-1].line == line_no else None
        for_login = _FOR_LOGIN.match(text, end)
        for_logins.append(for_login.group("login") if for_login else "")
        numbers: list[int] = []
        for item in items:
            column = item.column + 1
            if item.start > item.end:
                errors.append(CommentError(line_no, column, "reversed_range",
                                           f"range {item.start}-{item.end} is reversed (did you mean {item.end}-{item.start}?)",
                                           [item.start, item.end]))
                continue
            if item.end - item.start + 1 > MAX_RANGE_LENGTH:
                errors.append(CommentError(line_no, column, "range_too_long",
                                           f"range {item.start}-{item.end} covers {item.end - item.start + 1} tasks; "
                                           f"at most {MAX_RANGE_LENGTH} in one range",
                                           [item.start, item.end]))
                continue
            named.update(range(item.start, item.end + 1))
            missing = [n for n in range(item.start, item.end + 1)
                       if n < 1 or (max_task is not None and n > max_task)]
            if missing:
                bound = f"1-{max_task}" if max_task is not None else "numbers from 1"
                errors.append(CommentError(line_no, column, "not_on_board",
                                           f"task {_format_numbers(missing)} is not on the board ({bound})", missing))
            for n in range(item.start, item.end + 1):
                if n in missing:
                    continue
                if kind == "claim" and n in locked:
                    errors.append(CommentError(line_no, column, "locked",
                                               f"task {n} is locked and cannot be claimed: {locked[n]}", [n]))
                    continue
                numbers.append(n)
        return numbers

    team_numbers: tuple[list[int], int] | None = None  # numbers of a 【序号】 line waiting for its 【状态】
    team_status: str | None = None  # a 【状态】 line that came before its 【序号】 line

    def team_kind(status: str) -> str | None:
        status = status.strip()
        if re.match(r"取消\s*报名", status):
            return "withdraw"
        if status.startswith("报名"):
            return "claim"
        return None  # 提交RFC, 完成… are progress reports, not claims

    def read_line(line_no: int, line: str) -> None:
        nonlocal team_numbers, team_status
        lead = _LEAD.match(line).end()
        marker = _BRACKET_MARKER.match(line, lead)
        if marker:
            kind = "withdraw" if marker.group("kind").startswith("取消") else "claim"
            numbers = read_list(line, marker.end(), line_no, kind)
            if numbers is None:
                errors.append(CommentError(line_no, marker.end() + 1, "no_numbers",
                                           f"{marker.group('kind').replace(' ', '')} line without task numbers"))
            else:
                apply(kind, numbers, line_no, marker.end() + 1)
            return
        word = _WORD_MARKER.match(line, lead)
        if word:
            numbers = read_list(line, word.end(), line_no, "claim")
            if numbers is not None:  # a 认领 line without numbers is prose
                apply("claim", numbers, line_no, word.end() + 1)
            return
        number_line = _TEAM_NUMBER.match(line, lead)
        if number_line:
            team_numbers = (read_list(line, number_line.end(), line_no, "claim") or [], line_no)
            if team_status is not None:
                kind = team_kind(team_status)
                if kind:
                    apply(kind, team_numbers[0], line_no, 1)
                team_numbers, team_status = None, None
            return
        status_line = _TEAM_STATUS.match(line, lead)
        if status_line:
            if team_numbers is not None:
                kind = team_kind(status_line.group("status"))
                if kind:
                    apply(kind, team_numbers[0], team_numbers[1], 1)
                team_numbers = None
            else:
                team_status = status_line.group("status")
            return

    def rejected(line_no: int, code: str, message: str) -> CommentParse:
        errors.append(CommentError(line_no, 1, code, f"{message}, so none of it was applied", []))
        return CommentParse([], [], errors)

    for count, (line_no, raw_line) in enumerate(marker_lines(body), 1):
        if count > MAX_MARKER_LINES:
            return rejected(line_no, "too_many_lines", f"the comment has more than {MAX_MARKER_LINES} claim lines")
        try:
            read_line(line_no, normalize_digits(raw_line))
        except TooManyNumbers:
            return rejected(line_no, "too_many_numbers", f"the comment has more than {MAX_NUMBERS} task numbers")

    if max_tasks is not None and len(named) > max_tasks:
        # Abuse limit: one comment never claims or withdraws a large part of the board at once.
        errors.append(CommentError(1, 1, "too_many_tasks",
                                   f"the comment names {len(named)} tasks; at most {max_tasks} in one comment, "
                                   f"so none of it was applied", []))
        return CommentParse([], [], errors)
    same = for_logins and all(login.lower() == for_logins[0].lower() for login in for_logins)
    for_login = for_logins[0] if same else ""
    return CommentParse(sorted(claim), sorted(withdraw), errors, for_login)


def _format_numbers(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return str(numbers[0])
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(map(str, numbers))
