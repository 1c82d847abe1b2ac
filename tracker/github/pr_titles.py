"""Which board tasks a pull-request title names. Django-free.

`[Accuracy diff No.55-56、76-77] Fix …` links tasks 55, 56, 76 and 77; `-part` anywhere in the title
marks a partial fix; a `Revert "…"` title links nothing. The prefix is looked for inside a bracket
(`[`, `【`, `(`) or at the start of the title, anywhere in that bracket as the community bot does
(`【PaddlePaddle Hackathon 5th No.30】` links 30 with prefix `Hackathon 5th`), but always as whole
words followed by `No.`, so `Fix accuracy diff No.12 in gelu` links nothing.

Abuse limits: a title naming more than `max_tasks` tasks (or holding more than MAX_NUMBERS numbers)
links nothing and says why (`error`), and a task number of more than MAX_DIGITS digits is a syntax
error. Reading a title is linear in its length.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .numbers import NumberTooLong, TooManyNumbers, normalize_digits, scan_number_list

DEFAULT_PREFIX = "Accuracy diff"
MAX_NUMBERS = 200  # task numbers in one title, all prefixes together: bounds the work for any title


@dataclass
class TitleParse:
    tasks: list[int] = field(default_factory=list)
    part: bool = False
    revert: bool = False
    error: str = ""  # why the title links nothing although it carries the prefix

    def as_dict(self) -> dict:
        out = {"tasks": self.tasks, "part": self.part, "revert": self.revert}
        if self.error:
            out["error"] = self.error
        return out


_BRACKET = re.compile(r"[\[\]【】()（）]")
_OPENING = "[【(（"


def _prefix_pattern(prefix: str) -> re.Pattern:
    """The prefix's words and what may follow them up to the first task number (`] No.`, `No:` …).

    Where the words may start is checked by _prefix_ends, not by the pattern: a pattern that also reads
    the bracket's other words (`[^…]*?[ \t_-]` then `[ \t]*`) backtracks quadratically over a run of
    spaces, and a title is anyone's text. The possessive quantifiers (`*+`) never give characters back.
    """
    words = r"[ \t_-]*".join(re.escape(word) for word in prefix.split())
    return re.compile(words + r"[ \t_-]*+[\]】)）]?+[ \t]*+No\.?+[ \t]*+[:：]?+[ \t]*+(?=[0-9])", re.IGNORECASE)


def _prefix_ends(title: str, pattern: re.Pattern):
    """Where each prefix of the title ends (its task numbers start there), in one pass.

    A prefix counts at the title's start (after spaces), or inside a bracket (`[`, `【`, `(`, `（`) that
    opened since the previous prefix ended: after a space, `_` or `-` of the bracket
    (`【PaddlePaddle Hackathon 5th No.30】`), or else right after the bracket; never in the middle of a
    word or outside a bracket. One bracket serves one prefix.
    """
    match = pattern.search(title)
    if match is None:
        return
    brackets = [m.start() for m in _BRACKET.finditer(title)]
    lead = len(title) - len(title.lstrip(" \t"))
    consumed = 0  # a bracket (or the title's start) serves one prefix; the next needs a bracket of its own
    pending = None  # (bracket, end) of a prefix right after its bracket: it counts unless a later one in it does
    while match is not None:
        start = match.start()
        before = bisect.bisect_left(brackets, start)  # brackets[:before] come before the words
        bracket = brackets[before - 1] if before else None  # the nearest: the words are inside it
        if pending is not None and pending[0] != bracket:
            consumed = pending[1]
            pending = None
            yield consumed
        if bracket is None:
            if consumed == 0 and start <= lead:
                consumed = match.end()
                yield consumed
        elif title[bracket] in _OPENING and bracket >= consumed:
            if title[start - 1] in " \t_-":
                consumed, pending = match.end(), None
                yield consumed
            elif bracket == start - 1 and pending is None:
                pending = (bracket, match.end())
        match = pattern.search(title, start + 1)
    if pending is not None:
        yield pending[1]


def parse_pr_title(title: str, prefix: str = DEFAULT_PREFIX, *, max_range: int = 50,
                   max_tasks: int | None = None) -> TitleParse:
    title = normalize_digits(title or "").strip()
    result = TitleParse(part="-part" in title.lower().replace(" ", ""))
    if title.startswith('Revert "') or title.lower().startswith('revert "'):
        result.revert = True
        return result
    numbers: set[int] = set()
    numbers_read = 0
    for end in _prefix_ends(title, _prefix_pattern(prefix)):
        try:
            items, _ = scan_number_list(title, end, max_items=MAX_NUMBERS - numbers_read)
        except NumberTooLong as error:
            result.error = f"column {error.column + 1}: {error}"
            return result
        except TooManyNumbers as error:
            result.error = f"column {error.column + 1}: the title has {error}; at most {MAX_NUMBERS}"
            return result
        numbers_read += len(items)
        for item in items:
            # Reversed or huge ranges in a title are typos; link only what is unambiguous.
            if item.start <= item.end and item.end - item.start < max_range:
                numbers.update(n for n in range(item.start, item.end + 1) if n >= 1)
    if max_tasks is not None and len(numbers) > max_tasks:
        result.error = f"the title names {len(numbers)} tasks; at most {max_tasks} in one pull request"
        return result
    result.tasks = sorted(numbers)
    return result
