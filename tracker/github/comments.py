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
from enum import StrEnum

from .numbers import NumberTooLong, TooManyNumbers, Unread, normalize_digits, scan_number_list, unread_after

MAX_RANGE_LENGTH = 50
# Abuse limits that bound the work for one comment (65,536 characters of anyone's text): a comment with
# more claim lines or task numbers than these is rejected whole. Real claim comments have a few of each.
MAX_MARKER_LINES = 100
MAX_NUMBERS = 200


class CommentErrorCode(StrEnum):
    """Why part of a comment (or all of it) did nothing: a CommentError's code, `code` in its JSON."""
    NOT_ON_BOARD = "not_on_board"          # a task number off the board
    LOCKED = "locked"                      # a locked task can't be claimed (its reason is in the message)
    REVERSED_RANGE = "reversed_range"      # "9-3"
    RANGE_TOO_LONG = "range_too_long"      # more than MAX_RANGE_LENGTH tasks in one range
    NO_NUMBERS = "no_numbers"              # a bracket marker line without task numbers
    NUMBER_TOO_LONG = "number_too_long"    # more than MAX_DIGITS digits: the line gives nothing
    TOO_MANY_TASKS = "too_many_tasks"      # the comment names more than max_tasks tasks
    TOO_MANY_LINES = "too_many_lines"      # more than MAX_MARKER_LINES claim lines
    TOO_MANY_NUMBERS = "too_many_numbers"  # more than MAX_NUMBERS task numbers
    UNKNOWN_SEPARATOR = "unknown_separator"  # a mark after a list that is followed by more numbers: not read
    RANGE_WORD = "range_word"              # "7到9", "13..14", "15 or 16": a range or choice in words, the line gives nothing
    DIGIT_AFTER_NUMBER = "digit_after_number"  # "4①", "5²": a number followed by another digit is no number
    SITE_ACCOUNT_UNKNOWN = "site_account_unknown"  # a "(for @x)" comment held: GitHub could not say who the site is


# Errors that refuse the whole comment.
REJECTING_CODES = frozenset({CommentErrorCode.TOO_MANY_TASKS, CommentErrorCode.TOO_MANY_LINES,
                             CommentErrorCode.TOO_MANY_NUMBERS})

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
    code: CommentErrorCode
    message: str
    numbers: list[int] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"line": self.line, "column": self.column, "code": str(self.code), "message": self.message,
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


@dataclass
class _Reading:
    """One comment being read: the board's limits, and what its marker lines said so far."""

    max_task: int | None  # numbers above it are not on the board (None: no upper bound)
    locked: Mapping[int, str]  # task number → why it may not be claimed
    errors: list[CommentError] = field(default_factory=list)
    claim: set[int] = field(default_factory=set)
    withdraw: set[int] = field(default_factory=set)
    named: set[int] = field(default_factory=set)  # every task number the comment names, claimable or not
    for_logins: list[str] = field(default_factory=list)  # "(for @x)" of each marker line, "" where a line names nobody
    numbers_read: int = 0  # list items read in the whole comment, against MAX_NUMBERS
    team_numbers: tuple[list[int], int] | None = None  # (numbers, line) of a 【序号】 line waiting for its 【状态】
    team_status: str | None = None  # a 【状态】 line that came before its 【序号】 line


def parse_comment(body: str, *, max_task: int | None = None, locked: Mapping[int, str] | None = None,
                  max_tasks: int | None = None) -> CommentParse:
    """Claims, withdrawals and errors of one comment.

    max_task: numbers above it are not on the board (None: no upper bound). locked: task number →
    the reason it may not be claimed. max_tasks: a comment naming more distinct tasks than this is
    rejected whole (None: no limit).
    """
    reading = _Reading(max_task=max_task, locked=locked or {})
    for count, (line_no, raw_line) in enumerate(marker_lines(body), 1):
        if count > MAX_MARKER_LINES:
            return _rejected(reading, line_no, CommentErrorCode.TOO_MANY_LINES,
                             f"the comment has more than {MAX_MARKER_LINES} claim lines")
        try:
            _read_line(reading, line_no, normalize_digits(raw_line))
        except TooManyNumbers:
            return _rejected(reading, line_no, CommentErrorCode.TOO_MANY_NUMBERS,
                             f"the comment has more than {MAX_NUMBERS} task numbers")
    return _outcome(reading, max_tasks)


def _read_line(reading: _Reading, line_no: int, line: str) -> None:
    """One marker line: the first marker that matches where the line's lead ends says what it is."""
    lead = _LEAD.match(line).end()
    if marker := _BRACKET_MARKER.match(line, lead):
        _read_bracket_line(reading, line_no, line, marker)
    elif word := _WORD_MARKER.match(line, lead):
        numbers = _read_list(reading, line, word.end(), line_no, "claim")
        if numbers is not None:  # a 认领 line without numbers is prose
            _apply(reading, "claim", numbers)
    elif number_line := _TEAM_NUMBER.match(line, lead):
        _read_team_number_line(reading, line_no, line, number_line.end())
    elif status_line := _TEAM_STATUS.match(line, lead):
        _read_team_status_line(reading, status_line.group("status"))


def _read_bracket_line(reading: _Reading, line_no: int, line: str, marker: re.Match) -> None:
    """`【报名】: 1、2` claims, `【取消报名】: 4` withdraws; a bracket marker without numbers is an error."""
    kind = "withdraw" if marker.group("kind").startswith("取消") else "claim"
    numbers = _read_list(reading, line, marker.end(), line_no, kind)
    if numbers is None:
        reading.errors.append(CommentError(line_no, marker.end() + 1, CommentErrorCode.NO_NUMBERS,
                                           f"{marker.group('kind').replace(' ', '')} line without task numbers"))
    else:
        _apply(reading, kind, numbers)


def _read_team_number_line(reading: _Reading, line_no: int, line: str, pos: int) -> None:
    """The team form's 【序号】 line: applied with the 【状态】 line before it, or kept for the one after it."""
    reading.team_numbers = (_read_list(reading, line, pos, line_no, "claim") or [], line_no)
    if reading.team_status is not None:
        kind = _team_kind(reading.team_status)
        if kind:
            _apply(reading, kind, reading.team_numbers[0])
        reading.team_numbers, reading.team_status = None, None


def _read_team_status_line(reading: _Reading, status: str) -> None:
    """The team form's 【状态】 line: applies the 【序号】 line before it, or waits for the one after it."""
    if reading.team_numbers is not None:
        kind = _team_kind(status)
        if kind:
            _apply(reading, kind, reading.team_numbers[0])
        reading.team_numbers = None
    else:
        reading.team_status = status


def _team_kind(status: str) -> str | None:
    status = status.strip()
    if re.match(r"取消\s*报名", status):
        return "withdraw"
    if status.startswith("报名"):
        return "claim"
    return None  # 提交RFC, 完成… are progress reports, not claims


def _apply(reading: _Reading, kind: str, numbers: list[int]) -> None:
    """The later line wins: a number claimed and then withdrawn (or the other way round) ends withdrawn."""
    for n in numbers:
        if kind == "claim":
            reading.claim.add(n)
            reading.withdraw.discard(n)
        else:
            reading.withdraw.add(n)
            reading.claim.discard(n)


def _read_list(reading: _Reading, text: str, pos: int, line_no: int, kind: str) -> list[int] | None:
    """Numbers of the list at `pos`, with errors recorded; None when there is no number at all. What stops the list
    with more numbers after it is reported (`_report_unread`); a range or alternative word makes the line give
    nothing."""
    items, end = _scan(reading, text, pos, line_no)
    unread = unread_after(text, end)
    if not items:
        last = reading.errors[-1] if reading.errors else None
        too_long = last is not None and last.code == CommentErrorCode.NUMBER_TOO_LONG and last.line == line_no
        if too_long or unread is None or unread[0] != Unread.DIGIT_AFTER_NUMBER:
            return [] if too_long else None
    if unread is not None:
        _report_unread(reading, line_no, unread, items, kind)
        if unread[0] == Unread.RANGE_WORD:
            return []
    for_login = _FOR_LOGIN.match(text, end)
    reading.for_logins.append(for_login.group("login") if for_login else "")
    numbers: list[int] = []
    for item in items:
        numbers += _item_numbers(reading, item, line_no, kind)
    return numbers


def _report_unread(reading: _Reading, line_no: int, unread, items, kind: str) -> None:
    """The error saying why the numbers after a list were not read, at the column of what stopped it."""
    why, column, what, after = unread
    if why == Unread.RANGE_WORD:
        first, gap = items[-1].end, " " if what.isascii() and what.isalpha() else ""
        code, message = CommentErrorCode.RANGE_WORD, (
            f"“{first}{gap}{what}{gap}{after}” is a range or a choice in words, which the claim format does not have: this "
            f"line {'claims' if kind == 'claim' else 'withdraws'} nothing (write {first}-{after} for the range, {first}、{after} for both tasks, or the "
            "one you take)")
    elif why == Unread.DIGIT_AFTER_NUMBER:
        code, message = CommentErrorCode.DIGIT_AFTER_NUMBER, (
            f"“{what}” is no task number (a number followed by a digit other than 0-9): it and what follows it "
            "were not read (write task numbers with the digits 0-9)")
    else:
        code, message = CommentErrorCode.UNKNOWN_SEPARATOR, (
            f"“{what}” does not separate task numbers: the numbers after it were not read "
            f"(separate them with 、 or , and write ranges as 3-5)")
    reading.errors.append(CommentError(line_no, column + 1, code, message))


def _scan(reading: _Reading, text: str, pos: int, line_no: int):
    """scan_number_list, with a too-long number recorded as this line's error (no items).

    Raises TooManyNumbers once the comment's lists hold more than MAX_NUMBERS items in all."""
    try:
        items, end = scan_number_list(text, pos, max_items=MAX_NUMBERS - reading.numbers_read)
    except NumberTooLong as error:
        reading.errors.append(CommentError(line_no, error.column + 1, CommentErrorCode.NUMBER_TOO_LONG, str(error)))
        return [], pos
    reading.numbers_read += len(items)
    return items, end


def _item_numbers(reading: _Reading, item, line_no: int, kind: str) -> list[int]:
    """The tasks one list item (a number or a range) may claim or withdraw. A reversed range or one of more
    than MAX_RANGE_LENGTH tasks gives none; numbers off the board give none; a locked task is never claimed."""
    column, errors = item.column + 1, reading.errors
    if item.start > item.end:
        errors.append(CommentError(line_no, column, CommentErrorCode.REVERSED_RANGE,
                                   f"range {item.start}-{item.end} is reversed (did you mean {item.end}-{item.start}?)",
                                   [item.start, item.end]))
        return []
    if item.end - item.start + 1 > MAX_RANGE_LENGTH:
        errors.append(CommentError(line_no, column, CommentErrorCode.RANGE_TOO_LONG,
                                   f"range {item.start}-{item.end} covers {item.end - item.start + 1} tasks; "
                                   f"at most {MAX_RANGE_LENGTH} in one range",
                                   [item.start, item.end]))
        return []
    reading.named.update(range(item.start, item.end + 1))
    max_task = reading.max_task
    missing = [n for n in range(item.start, item.end + 1) if n < 1 or (max_task is not None and n > max_task)]
    if missing:
        bound = f"1-{max_task}" if max_task is not None else "numbers from 1"
        errors.append(CommentError(line_no, column, CommentErrorCode.NOT_ON_BOARD,
                                   f"task {_format_numbers(missing)} is not on the board ({bound})", missing))
    numbers = []
    for n in range(item.start, item.end + 1):
        if n in missing:
            continue
        if kind == "claim" and n in reading.locked:
            errors.append(CommentError(line_no, column, CommentErrorCode.LOCKED,
                                       f"task {n} is locked and cannot be claimed: {reading.locked[n]}", [n]))
            continue
        numbers.append(n)
    return numbers


def _rejected(reading: _Reading, line_no: int, code: CommentErrorCode, message: str) -> CommentParse:
    """The whole comment refused at `line_no`: no claim and no withdrawal, the errors so far kept."""
    reading.errors.append(CommentError(line_no, 1, code, f"{message}, so none of it was applied", []))
    return CommentParse([], [], reading.errors)


def _outcome(reading: _Reading, max_tasks: int | None) -> CommentParse:
    """What the comment does once every line is read. A comment naming more than `max_tasks` tasks does
    nothing (one comment never claims or withdraws a large part of the board at once); the "(for @x)" login
    counts only when every marker line names the same one."""
    errors = reading.errors
    if max_tasks is not None and len(reading.named) > max_tasks:
        errors.append(CommentError(1, 1, CommentErrorCode.TOO_MANY_TASKS,
                                   f"the comment names {len(reading.named)} tasks; at most {max_tasks} in one comment, "
                                   f"so none of it was applied", []))
        return CommentParse([], [], errors)
    for_logins = reading.for_logins
    same = for_logins and all(login.lower() == for_logins[0].lower() for login in for_logins)
    for_login = for_logins[0] if same else ""
    return CommentParse(sorted(reading.claim), sorted(reading.withdraw), errors, for_login)


def _format_numbers(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return str(numbers[0])
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(map(str, numbers))
