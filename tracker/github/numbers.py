"""Task-number lists as people type them: `1、2、3-5`, `55-56, 76-77`, `１２ 和 １３`, `No.11、144`.

Shared by the claim-comment parser and the PR-title parser. Django-free.

A list is read greedily from a start position and stops at the first thing that is not a number, a
range or a separator; whatever follows (a remark, a parenthesis) is the caller's to ignore, so digits
inside `（和14一起修）` are never read as task numbers.

Task numbers have at most MAX_DIGITS digits: a longer run of digits is a syntax error
(NumberTooLong), never handed to int() — a 5,000-digit "number" in a comment must not cost the
reader anything or raise where nobody catches it.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from enum import StrEnum

# Full-width digits (common in Chinese input mode) read as ASCII digits.
FULL_WIDTH_PAIRS = tuple(zip("０１２３４５６７８９", "0123456789"))

# One item: optional "No." / "No" / "NO." before a number, optionally a range to a second number.
# Anyone on GitHub writes the text these read: quantifiers that could hand characters to each other are
# possessive (`++`, `*+`), so a match never backtracks over a run of spaces or digits (linear time).
# Digits are ASCII only ([0-9], full-width ones normalized to it first): Python's `\d` and int() take every
# Unicode digit (Arabic-Indic ٣, Devanagari ३, mathematical bold 𝟑…), which the docs never promised. A
# number followed by any other digit (`12٣`) is not a number at all.
# The range part is possessive too: `3-5٣` is no item at all (5٣ is no number), never the 3 before it.
_ITEM = re.compile(
    r"(?:No\.?+\s*+)?(?P<a>[0-9]++)(?:\s*+[-~～–—−－﹣]\s*+(?:No\.?+\s*+)?(?P<b>[0-9]++))?+(?![\dA-Za-z])",
    re.IGNORECASE,
)
# Separators between items; "and" only as a word. Spaces alone also separate.
_SEPARATOR = re.compile(r"(?:\s*+(?:[、,，;；&]|\band\b|和|及)\s*+|\s++)+", re.IGNORECASE)
_SPACES = re.compile(r"\s*+")
# After a list: one mark that is not a separator (not a letter, space or opening bracket), then a number —
# `10～12—13`, `3/4`: the numbers after it would be silently dropped; the caller reports it instead.
# After a list: a word or mark that makes a range or an alternative of the number before it and the one after it
# — `7到9`, `11至12`, `13..14`, `15 or 16`, `17或18`. The tracking issue writes ranges `3-5` and lists `1、2`
# only; read as a list stop, these would claim the first number alone. The caller reports them instead.
_RANGE_WORD = re.compile(r"[ \t]*+(?P<word>到|至|\.{2,}+|…++|或者|或是|或|or(?![A-Za-z]))[ \t]*+(?:No\.?+[ \t]*+)?+(?P<after>[0-9]{1,4}+)",
                         re.IGNORECASE)
# After a list: (a separator and) a number or range that a digit other than 0-9 follows (`4①`, `5²`, `6⁷`, `3-5٣`):
# no number at all, so the list stopped before it.
_NUMBER_THEN = re.compile(r"(?:\s*+(?:[、,，;；&]|\band\b|和|及)?+\s*+)(?P<number>(?:No\.?+\s*+)?+[0-9]++"
                          r"(?:\s*+[-~～–—−－﹣]\s*+(?:No\.?+\s*+)?+[0-9]++)?+)", re.IGNORECASE)
_UNREAD_SEPARATOR = re.compile(r"[ \t]*+(?P<mark>[^\w\s(（【\[［〔〖<])[ \t]*+(?:No\.?+[ \t]*+)?+[0-9]", re.IGNORECASE)


MAX_DIGITS = 4


class NumberTooLong(ValueError):
    """A task number with more than MAX_DIGITS digits: the list it is in is not read."""

    def __init__(self, column: int, digits: int):
        super().__init__(f"a task number has at most {MAX_DIGITS} digits; this one has {digits}")
        self.column, self.digits = column, digits


class TooManyNumbers(ValueError):
    """More than `max_items` items in one list (the caller's abuse limit)."""

    def __init__(self, column: int, limit: int):
        super().__init__(f"more than {limit} task numbers")
        self.column, self.limit = column, limit


@dataclass(frozen=True)
class NumberItem:
    start: int  # first number
    end: int  # last number (== start for a single number)
    column: int  # 0-based position of the item in the scanned text
    text: str

    @property
    def is_range(self) -> bool:
        return self.start != self.end


def normalize_digits(text: str) -> str:
    """Same length as the input, so columns still point into the original text."""
    # Ten replace() calls, not str.translate: translate goes through a dict per character for non-ASCII
    # text, 15 ms for a 65,536-character comment; replace() scans at C speed.
    for full_width, ascii_digit in FULL_WIDTH_PAIRS:
        if full_width in text:
            text = text.replace(full_width, ascii_digit)
    return text


def _other_digit(char: str) -> bool:
    """A digit (or any numeric character: ①, ², ⅻ, ½) other than 0-9: it makes the number before it no number."""
    return bool(char) and not char.isascii() and unicodedata.category(char).startswith("N")


class Unread(StrEnum):
    """Why a number list stopped with more numbers after it (`unread_after`)."""

    RANGE_WORD = "range_word"  # `7到9`, `15 or 16`: a range or an alternative the format does not have
    DIGIT_AFTER_NUMBER = "digit_after_number"  # `4①`: a number followed by another kind of digit is no number
    SEPARATOR = "separator"  # `10～12—13`: a mark that is not a separator


def unread_after(text: str, end: int) -> tuple[Unread, int, str, str] | None:
    """Why the numbers after a list (ending at `end`) were not read — (reason, 0-based column, the text it is
    about, the number after a range word) — or None when nothing number-like follows it."""
    if match := _RANGE_WORD.match(text, end):
        return Unread.RANGE_WORD, match.start("word"), match.group("word"), match.group("after")
    match = _NUMBER_THEN.match(text, end)
    if match and _other_digit(text[match.end():match.end() + 1]):
        return Unread.DIGIT_AFTER_NUMBER, match.start("number"), match.group("number") + text[match.end()], ""
    if (column := unread_separator(text, end)) is not None:
        return Unread.SEPARATOR, column, text[column], ""
    return None


def unread_separator(text: str, end: int) -> int | None:
    """The 0-based column of a mark right after a number list (at `end`) that separates it from more
    numbers but is not a separator the reader knows (`—` in `10～12—13`), or None."""
    match = _UNREAD_SEPARATOR.match(text, end)
    return match.start("mark") if match else None


def scan_number_list(text: str, pos: int = 0, max_items: int | None = None) -> tuple[list[NumberItem], int]:
    """Read a number list starting exactly at `pos` (after optional spaces).

    Returns the items and the position just after the last item read. `text` should already have
    gone through normalize_digits. Raises NumberTooLong (with the 0-based column) for a number of
    more than MAX_DIGITS digits, and TooManyNumbers when the list goes on past `max_items` items (the
    work for one list stays bounded however long the text is).
    """
    items: list[NumberItem] = []
    lead = _SPACES.match(text, pos)
    pos = lead.end()
    while True:
        match = _ITEM.match(text, pos)
        if not match:
            break
        if max_items is not None and len(items) >= max_items:
            raise TooManyNumbers(match.start(), max_items)
        if _other_digit(text[match.end():match.end() + 1]):
            break  # `4①`, `5²`: a number followed by another digit is no number (unread_after says so)
        for group in ("a", "b"):
            digits = match.group(group)
            if digits is not None and len(digits) > MAX_DIGITS:
                raise NumberTooLong(match.start(group), len(digits))
        first = int(match.group("a"))
        last = int(match.group("b")) if match.group("b") is not None else first
        items.append(NumberItem(first, last, match.start(), match.group(0)))
        pos = match.end()
        separator = _SEPARATOR.match(text, pos)
        # A separator counts only when another item follows it ("36 and I'll also…" stops at 36).
        if not separator or not _ITEM.match(text, separator.end()):
            break
        pos = separator.end()
    return items, pos
