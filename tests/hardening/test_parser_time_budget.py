"""A time budget for one request: every parser of outside text reads the worst input GitHub allows in linear time.

GitHub caps a comment body at 65,536 characters. For every parser in tracker/github/ (comments, PR titles,
number lists) and apitester/config.py, each input below is that long (or nearly) and built to make a
backtracking regex work quadratically: runs of spaces and tabs, brackets, digits, `、`, `-`, nested markdown,
mixtures, and a line per pattern prefix repeated. Each must parse in under 50 ms (best of 3 on this
machine); the quadratic patterns these replaced took seconds at a quarter of the length (16,000 spaces: 11 s).
"""
from __future__ import annotations

import random
import time

import pytest

from apitester.config import ConfigSyntaxError, parse_config, parse_value
from tracker.github.client import Response
from tracker.github.comments import MAX_NUMBERS, parse_comment
from tracker.github.numbers import NumberTooLong, TooManyNumbers, scan_number_list
from tracker.github.pr_titles import parse_pr_title

LIMIT = 65_536  # GitHub's limit for a comment body
BUDGET = 0.050  # seconds, for LIMIT characters
BRACKETS = "【[［〔〖"
CLOSERS = "】]］〕〗"


def fill(head: str, unit: str, tail: str = "x") -> str:
    """head + unit repeated + tail, as long as LIMIT allows."""
    count = (LIMIT - len(head) - len(tail)) // len(unit)
    return head + unit * count + tail


def halves(head: str, unit: str, middle: str, tail: str = "x") -> str:
    """head + a run of unit + middle + another run + tail: two runs a regex could trade characters across."""
    count = (LIMIT - len(head) - len(middle) - len(tail)) // (2 * len(unit))
    return head + unit * count + middle + unit * count + tail


def lines(line: str) -> str:
    return fill("", line + "\n", "")


def mixture(seed: int, pieces: list[str]) -> str:
    rng = random.Random(seed)
    out, size = [], 0
    while size < LIMIT - 40:
        piece = rng.choice(pieces)
        out.append(piece)
        size += len(piece)
    return "".join(out)[:LIMIT]


RUNS = [" ", "\t", " \t", "\t "]
MARKDOWN = ["**", "__", ">", "> ", "- ", "* ", "+ ", "* **", "- __ ", "**【", "> - "]
TEXT_PIECES = [" ", "\t", "  ", "\n", "【", "】", "[", "]", "［", "〔", "〖", "报名", "取消", "认领", "意向", "序号", "状态",
               ":", "：", "、", ",", "-", "--", "~", "No.", "No", "1", "12", "9999", "12345", "１２", "and", "和", "**",
               "__", ">", "* ", "(", "（", "for", "@a", ")", "task", "任务", "On", "wrote:", "在", "写道", "```", "<!--",
               "-->", "原始邮件", "Accuracy", "diff", "Accuracy diff", "_", "Hackathon", "5th", "x"]


def comment_bodies() -> dict[str, str]:
    bodies = {}
    for run in RUNS:
        name = repr(run)
        bodies[f"{name} run"] = fill("", run)
        bodies[f"{name} run after a bullet"] = fill("-", run)
        bodies[f"{name} runs around a bullet"] = halves("", run, "*")
        bodies[f"{name} runs around bold"] = halves("", run, "**")
        bodies[f"{name} runs after bullet and bold"] = halves("- ", run, "**")
        bodies[f"{name} runs inside a marker"] = halves("【", run, "报名")
        bodies[f"{name} runs after a marker"] = halves("【报名】", run, "**")
        bodies[f"{name} runs around a range dash"] = halves("【报名】: 1", run, "-")
        bodies[f"{name} runs before (for @"] = halves("【报名】: 1", run, "(", "for")
        bodies[f"{name} run after No"] = fill("认领 No", run)
        bodies[f"{name} runs in a reply header"] = halves("--", run, "原始邮件")
        bodies[f"{name} run before wrote:"] = fill("On", run, "wrote: x")
    for bracket, closer in zip(BRACKETS, CLOSERS):
        bodies[f"{bracket} repeated"] = fill("", bracket)
        bodies[f"{bracket} and spaces"] = fill("", bracket + " ")
        bodies[f"{bracket} then spaces"] = fill(bracket, " ")
        bodies[f"{bracket}报名{closer} repeated"] = fill("", f"{bracket}报名{closer}")
        bodies[f"{bracket}序号{closer} lines"] = lines(f"{bracket}序号{closer}：1")
        bodies[f"{bracket}状态{closer} lines"] = lines(f"{bracket}状态{closer}：报名")
    bodies.update({
        "digits": fill("", "1"),
        "digits after a marker": fill("【报名】: ", "1"),
        "single digits": fill("【报名】: ", "1 "),
        "four-digit numbers": fill("【报名】: ", "1234、"),
        "、 repeated": fill("", "、"),
        "、 after a number": fill("【报名】: 1", "、"),
        "、 and spaces": fill("【报名】: 1", " 、 "),
        "- repeated": fill("", "-"),
        "- after a number": fill("【报名】: 1", "-"),
        "- and spaces": fill("【报名】: 1", " - "),
        "ranges": fill("【报名】: ", "1-2、"),
        "No. repeated": fill("认领 ", "No."),
        "and repeated": fill("认领 1", " and"),
        "wrote: repeated": fill("On", " wrote:"),
        "<!-- repeated": fill("", "<!--"),
        "<!-- then dashes": fill("<!--", "-"),
        "``` repeated": fill("", "`"),
        "an unclosed fence, then lines": fill("```\n", "【报名】: 1\n", ""),
        "a long fence, then shorter ones": fill("````\n", "```\n", ""),
        "a ~~~ fence, then ``` ones": fill("~~~\n", "```\n", ""),
        "fences closed by trailing text": fill("", "```\n``` x\n", ""),
        "On lines": fill("", "On\n", ""),
        "On lines before long ones": fill("", "On x\n" + "wrote " * 20 + "\n", ""),
    })
    for unit in MARKDOWN:
        bodies[f"{unit!r} nested"] = fill("", unit)
        bodies[f"{unit!r} nested before a marker"] = fill("", unit, "【报名】: 1")
    for prefix in ["【报名】", "【报名】: 1", "【取消报名】: 1", "认领", "认领 12", "意向认领 task 1, 2", "【序号】：1",
                   "【状态】：报名", "> 【报名】: 1", "- **【报名】** 1", "On", "On x wrote:", "---原始邮件---", "```",
                   "<!--", "【报名】: 1 (for @someone)", "  ", "\t", "-", "、", "1"]:
        bodies[f"a line of {prefix!r} repeated"] = lines(prefix)
    for seed in range(4):
        bodies[f"mixture {seed}"] = mixture(seed, TEXT_PIECES)
        bodies[f"markdown mixture {seed}"] = mixture(100 + seed, MARKDOWN + RUNS + ["【报名】", "1", "\n"])
    return bodies


def title_texts() -> dict[str, str]:
    titles = {}
    for run in RUNS:
        name = repr(run)
        titles[f"{name} run"] = fill("", run)
        for bracket in "[【(（":
            titles[f"{bracket} then {name} run"] = fill(bracket, run)
            titles[f"{bracket} and {name} repeated"] = fill("", bracket + run)
        titles[f"{name} runs after the prefix"] = halves("[Accuracy diff", run, "]")
        titles[f"{name} runs around No"] = halves("[Accuracy diff", run, "No")
        titles[f"{name} runs around the colon"] = halves("Accuracy diff No.", run, ":")
        titles[f"{name} runs between the words"] = fill("Accuracy", run, "diff No.1")
        titles[f"{name} runs in a bracket before the prefix"] = halves("[", run, "-", "Accuracy diff x")
    titles.update({
        "brackets": fill("", "[]【】()（）"),
        "opening brackets": fill("", "[【(（"),
        "digits": fill("", "1"),
        "digits after the prefix": fill("Accuracy diff No.", "1"),
        "numbers after the prefix": fill("Accuracy diff No.", "1、"),
        "- after the prefix": fill("Accuracy diff No.1", "-"),
        "_ and - between the words": fill("Accuracy", "_-", "diff No.1"),
        "the prefix repeated": fill("", "Accuracy diff No.1 "),
        "bracketed prefixes repeated": fill("", "[Accuracy diff No.1] "),
        "bracket prefixes without a number": fill("", "[Accuracy diff No."),
        "the first word repeated": fill("[", "Accuracy "),
        "words in one bracket": fill("【PaddlePaddle ", "Hackathon "),
        "No. repeated": fill("Accuracy diff ", "No."),
        "-part repeated": fill("", "-part"),
        "Revert repeated": fill("", 'Revert "'),
    })
    for seed in range(4):
        titles[f"mixture {seed}"] = mixture(200 + seed, TEXT_PIECES)
    return titles


def number_lists() -> dict[str, str]:
    texts = {}
    for run in RUNS:
        texts[f"{run!r} run"] = fill("", run)
        texts[f"{run!r} runs around a dash"] = halves("1", run, "-")
        texts[f"{run!r} runs around 、"] = halves("1", run, "、")
        texts[f"{run!r} run after No"] = fill("No", run)
    texts.update({
        "digits": fill("", "1"),
        "digits then a letter": fill("", "1", "a"),
        "single digits": fill("", "1 "),
        "、 separated": fill("", "1、"),
        "and separated": fill("", "1 and "),
        "dashes": fill("1", "-"),
        "ranges": fill("", "1-2,"),
        "No. repeated": fill("", "No."),
        "No.1 repeated": fill("", "No.1、"),
        "full-width digits": fill("", "１２、"),
    })
    for seed in range(4):
        texts[f"mixture {seed}"] = mixture(300 + seed, TEXT_PIECES)
    return texts


def config_lines() -> dict[str, str]:
    configs = {}
    for run in RUNS:
        configs[f"{run!r} run"] = fill("paddle.x(", run, ")")
        configs[f"{run!r} runs around ="] = halves("paddle.x(a", run, "=", "1)")
    for opener in ["[", "(", "list[", "tuple(", "Tensor(", "Dtype(", "complex(", "slice("]:
        configs[f"{opener} nested"] = fill("paddle.x(", opener, "")
    configs.update({
        "digits": fill("paddle.x(", "1", ")"),
        "a long integer in every item": fill("paddle.x(", "1" * 4300 + ",", ")"),
        "a too long integer": fill("paddle.x(", "9", ")"),
        "a too long dimension": fill('paddle.x(Tensor([', "9", '],"float32"))'),
        "many items": fill("paddle.x(", "1,", ")"),
        "many dimensions": fill("paddle.x(Tensor([", "1,", '],"float32"))'),
        "floats": fill("paddle.x(", "1.5e-3,", ")"),
        "dots": fill("paddle.x(", "1.", ")"),
        "exponents": fill("paddle.x(", "1e", ")"),
        "an unterminated string": fill('paddle.x("', "a", ""),
        "an unterminated string of escapes": fill('paddle.x("', "\\\"", ""),
        "a long string": fill('paddle.x("', "a", '")'),
        "a dotted name": fill("paddle.x(", "a.", "a)"),
        "a long API name": fill("", "a", "()"),
        "minus signs": fill("paddle.x(", "-", ""),
        "negated constants": fill("paddle.x(", "-math.inf,", ")"),
        "keywords": fill("paddle.x(", "a=", "1)"),
        "commas": fill("paddle.x(1", ",", ")"),
        "closing brackets": fill("paddle.x(", ")", ""),
        "list of tensors": fill("paddle.concat(list[", 'Tensor([2],"float32"),', "], axis=0, )"),
        "nested mixture": fill("paddle.x(", "list[tuple(", ""),
    })
    for seed in range(4):
        configs[f"mixture {seed}"] = mixture(400 + seed, [" ", "(", ")", "[", "]", ",", "=", "-", "1", "1.5", '"a"', '"',
                                                          "\\", "Tensor", "list", "tuple", "complex", "slice", "math.inf",
                                                          "a.b", "None", "True", "inf", "nan", "e", "."])
    return configs


def best_of_three(function, text: str) -> float:
    """The parser's own CPU time (this thread's), best of three: the budget is the parser's cost, which wall
    time would mix with whatever else the shared cores run (other xdist workers, other jobs)."""
    best = float("inf")
    for _ in range(3):
        started = time.thread_time()
        function(text)
        best = min(best, time.thread_time() - started)
    return best


LOCKED = {n: "locked" for n in range(155, 181)}


def read_comment(body: str):
    return parse_comment(body, max_task=183, locked=LOCKED, max_tasks=20)


def read_title(title: str):
    parse_pr_title(title, "Accuracy diff", max_tasks=20)
    parse_pr_title(title, "Hackathon 5th", max_tasks=20)


def read_numbers(text: str):
    try:
        scan_number_list(text, max_items=MAX_NUMBERS)  # as the comment and title parsers call it
    except (NumberTooLong, TooManyNumbers):
        pass


def read_config(text: str):
    for parse in (parse_config.__wrapped__, parse_value):  # parse_config without its cache: every run parses
        try:
            parse(text)
        except ConfigSyntaxError:
            pass


def link_headers() -> dict[str, str]:
    """A hostile API's `Link` header (the client reads it to follow rel="next")."""
    unit = '<https://api.example/x?page=2>; rel="next", '
    return {
        "angle brackets": "<" * LIMIT,
        "unclosed url": "<" + "a" * (LIMIT - 1),
        "spaces after url": "<u>" + " " * (LIMIT - 3),
        "unclosed rel": '<u>; rel="' + "n" * (LIMIT - 10),
        "many links": (unit * (LIMIT // len(unit) + 1))[:LIMIT],
        "brackets and semicolons": ("<>;" * LIMIT)[:LIMIT],
    }


def read_links(text: str):
    Response(200, "https://api.example/x", headers={"link": text}).links


CASES = ([("comment", name, read_comment, text) for name, text in comment_bodies().items()]
         + [("link header", name, read_links, text) for name, text in link_headers().items()]
         + [("pr title", name, read_title, text) for name, text in title_texts().items()]
         + [("number list", name, read_numbers, text) for name, text in number_lists().items()]
         + [("config", name, read_config, text) for name, text in config_lines().items()])


@pytest.mark.parametrize("parser, name, read, text", CASES, ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_worst_input_within_githubs_limit_parses_within_budget(parser, name, read, text):
    assert LIMIT * 0.95 <= len(text) <= LIMIT
    seconds = best_of_three(read, text)
    assert seconds < BUDGET, f"{parser} parser took {seconds * 1000:.0f} ms on {len(text)} characters of {name}"

