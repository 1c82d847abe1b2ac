"""Issue 45 item 5: claims say what they did not take. A range or alternative in words (`7到9`, `11至12`, `13..14`,
`15 or 16`, `17或18`) makes its line claim nothing, and a number followed by a digit other than 0-9 (`4①`, `5²`,
`6⁷`) is no number; both are reported with their line and column, in the parse and in the webhook delivery's
answer — never a silently cut claim. Through the real parser and the real webhook endpoint."""
import pytest

from tracker.github.comments import parse_comment
from tracker.github.pr_titles import parse_pr_title
from tracker.models import Claim, Event

from . import payloads
from .test_webhook import deliver

pytestmark = pytest.mark.usefixtures("webhook_settings")

RANGE_WORDS = [("7到9", "到", 7, 9), ("11至12", "至", 11, 12), ("13..14", "..", 13, 14), ("15 or 16", "or", 15, 16),
               ("17或18", "或", 17, 18), ("19 OR 20", "OR", 19, 20), ("21 … 22", "…", 21, 22)]


@pytest.mark.parametrize("words, word, first, second", RANGE_WORDS, ids=[w for w, *_ in RANGE_WORDS])
def test_a_range_or_choice_in_words_claims_nothing_on_its_line_and_says_so(words, word, first, second):
    body = f"谢谢！\n【报名】: 2、{words}\n【报名】: 40"
    parse = parse_comment(body, max_task=183)
    assert parse.claim == [40]  # the other line still applies; neither 2 nor the first number is taken alone
    [error] = parse.errors
    assert error.code == "range_word" and error.line == 2
    assert body.splitlines()[1][error.column - 1:].startswith(word)
    assert f"{first}-{second}" in error.message and f"{first}、{second}" in error.message
    assert "claims nothing" in error.message


@pytest.mark.parametrize("number, other", [("4", "①"), ("5", "²"), ("6", "⁷"), ("8", "٣"), ("9", "½")])
def test_a_number_followed_by_another_digit_is_no_number_and_is_reported(number, other):
    alone = parse_comment(f"【报名】: {number}{other}", max_task=183)
    assert alone.claim == [] and [e.code for e in alone.errors] == ["digit_after_number"]
    assert alone.errors[0].column == len("【报名】: ") + 1 and f"“{number}{other}”" in alone.errors[0].message
    after = parse_comment(f"【报名】: 3、{number}{other}、30", max_task=183)
    assert after.claim == [3] and [e.code for e in after.errors] == ["digit_after_number"]  # 30 not read either
    ranged = parse_comment(f"认领 1-{number}{other}", max_task=183)
    assert ranged.claim == [] and [e.code for e in ranged.errors] == ["digit_after_number"]  # not 1, not 1-n
    assert parse_pr_title(f"[Accuracy diff No.{number}{other}] fix").tasks == []


@pytest.mark.parametrize("body", ["【报名】: 12 or so", "【报名】: 12 到时候再说", "【报名】: 12、13 谢谢", "【报名】: 12。",
                                  "【报名】: 3-5", "认领 No.7 (or later)"])
def test_words_without_a_number_after_them_are_remarks(body):
    parse = parse_comment(body, max_task=183)
    assert parse.errors == [] and parse.claim


def test_the_webhook_answer_says_what_the_comment_did_not_take(client, board):
    body = "【报名】: 7到9\n【报名】: 21、4①"
    event = payloads.issue_comment_event("created", payloads.comment(2874700177, "BeingGod", body,
                                                                      "2025-05-12T03:21:45Z"))
    answer = deliver(client, "issue_comment", event, delivery="words-1")
    assert answer.status_code == 200
    errors = answer.json()["errors"]
    assert [(e["line"], e["code"]) for e in errors] == [(1, "range_word"), (2, "digit_after_number")]
    assert "7-9" in errors[0]["message"] and "“4①”" in errors[1]["message"]
    assert list(Claim.objects.values_list("task__number", flat=True)) == [21]
    recorded = Event.objects.get(kind="comment_errors")
    assert [e["code"] for e in recorded.data["errors"]] == ["range_word", "digit_after_number"]


def test_a_withdrawal_in_words_withdraws_nothing_and_says_so():
    parse = parse_comment("【取消报名】: 7到9", max_task=183)
    assert parse.withdraw == [] and parse.claim == []
    [error] = parse.errors
    assert error.code == "range_word" and "this line withdraws nothing" in error.message
