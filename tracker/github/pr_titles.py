"""Which board tasks a pull-request title names. Django-free.

`[Accuracy diff No.55-56、76-77] Fix …` links tasks 55, 56, 76 and 77; `-part` anywhere in the title
marks a partial fix; a `Revert "…"` title links nothing. The prefix must open the title or a bracket
(`[`, `【`, `(`), so another board's tag that merely ends in the same words does not match.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .numbers import normalize_digits, scan_number_list

DEFAULT_PREFIX = "Accuracy diff"


@dataclass
class TitleParse:
    tasks: list[int] = field(default_factory=list)
    part: bool = False
    revert: bool = False

    def as_dict(self) -> dict:
        return {"tasks": self.tasks, "part": self.part, "revert": self.revert}


def _prefix_pattern(prefix: str) -> re.Pattern:
    words = r"[ \t_-]*".join(re.escape(word) for word in prefix.split())
    return re.compile(
        r"(?:^|[\[【(（])[ \t]*" + words + r"[ \t_-]*[\]】)）]?[ \t]*No\.?[ \t]*[:：]?[ \t]*(?=\d)", re.IGNORECASE
    )


def parse_pr_title(title: str, prefix: str = DEFAULT_PREFIX, *, max_range: int = 50) -> TitleParse:
    title = normalize_digits(title or "").strip()
    result = TitleParse(part="-part" in title.lower().replace(" ", ""))
    if title.startswith('Revert "') or title.lower().startswith('revert "'):
        result.revert = True
        return result
    numbers: set[int] = set()
    for match in _prefix_pattern(prefix).finditer(title):
        items, _ = scan_number_list(title, match.end())
        for item in items:
            # Reversed or huge ranges in a title are typos; link only what is unambiguous.
            if item.start <= item.end and item.end - item.start < max_range:
                numbers.update(n for n in range(item.start, item.end + 1) if n >= 1)
    result.tasks = sorted(numbers)
    return result
