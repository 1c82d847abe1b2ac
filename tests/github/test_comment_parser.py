"""Claim comments as people write them on the tracking issue (the first four are the seed's own)."""
import io
import json

import pytest
from django.core.management import call_command

from tracker.github.comments import MAX_MARKER_LINES, MAX_NUMBERS, parse_comment

LOCKED = {n: "output dtype类型不同，暂不要报名" for n in range(155, 181)}


def parse(body, max_task=183, locked=LOCKED):
    return parse_comment(body, max_task=max_task, locked=locked)


def codes(result):
    return [e.code for e in result.errors]


@pytest.mark.parametrize("body, expected", [
    ("【报名】: 1-5、11-17、36-37、40-41、47-50、52-53、57、69",
     [1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 17, 36, 37, 40, 41, 47, 48, 49, 50, 52, 53, 57, 69]),
    ("【报名】: 36-37、40-42、48-49、52-53、55-56、65-66", [36, 37, 40, 41, 42, 48, 49, 52, 53, 55, 56, 65, 66]),
    ("【报名】: 73", [73]),
    ("【报名】: 55-56、76-77、21、15", [15, 21, 55, 56, 76, 77]),
])
def test_seed_comments(body, expected):
    result = parse(body)
    assert result.claim == expected
    assert result.withdraw == [] and result.errors == []


@pytest.mark.parametrize("body", [
    "【报名】: 12", "【报名】：12", "【报名】 12", "【报名】12", "[报名]: 12", "[报名] ： 12", "［报名］：12",
    "【 报名 】: 12", "[ 报名 ]：12", "  【报名】: 12", "- 【报名】: 12", "**【报名】**: 12", "【报名】: No.12",
    "【报名】：任务12", "【报名】: １２",
])
def test_marker_variants(body):
    assert parse(body).claim == [12]


@pytest.mark.parametrize("body, expected", [
    ("【报名】: 1、2、3", [1, 2, 3]),
    ("【报名】: 1,2,3", [1, 2, 3]),
    ("【报名】: 1，2，3", [1, 2, 3]),
    ("【报名】: 1;2；3", [1, 2, 3]),
    ("【报名】: 1 2  3", [1, 2, 3]),
    ("【报名】: 1和2及3", [1, 2, 3]),
    ("[报名]: 1 and 2, and 3", [1, 2, 3]),
    ("【报名】: 1、 2 ， 3", [1, 2, 3]),
    ("【报名】: 3-5", [3, 4, 5]),
    ("【报名】: 3 - 5", [3, 4, 5]),
    ("【报名】: 3~5", [3, 4, 5]),
    ("【报名】: 3～5", [3, 4, 5]),
    ("【报名】: 3–5", [3, 4, 5]),
    ("【报名】: 3—5", [3, 4, 5]),
    ("【报名】：１２３、１２４－１２５", [123, 124, 125]),
    ("【报名】: 7、7、6-8、8", [6, 7, 8]),
])
def test_separators_ranges_digits_duplicates(body, expected):
    assert parse(body).claim == expected


@pytest.mark.parametrize("body, expected", [
    ("【报名】: 12、13（和14一起修，因为是同一个kernel）", [12, 13]),
    ("【报名】: 12、13 (same kernel as 14)", [12, 13]),
    ("【报名】: 12 先看看这个，之后再报 20", [12]),
    ("【报名】: 55-56 谢谢！ 预计2周完成", [55, 56]),
    ("[报名]: 36 and I'll also look at 37 later", [36]),
])
def test_remark_after_list_is_ignored(body, expected):
    assert parse(body).claim == expected


def test_only_marker_lines_count_and_text_around_is_ignored():
    body = (
        "大家好，我对第 8 题和第 9 题比较感兴趣\n"
        "【报名】: 21、22\n"
        "我想【报名】: 30（这一行的标记不在行首）\n"
        "谢谢 @lshpku, 第40题我已经在看了\n"
    )
    result = parse(body)
    assert result.claim == [21, 22]
    assert result.errors == []


def test_numbers_must_be_on_the_marker_line():
    result = parse("【报名】:\n12、13")
    assert result.claim == []
    assert codes(result) == ["no_numbers"]
    assert result.errors[0].line == 1


def test_withdraw_and_claim_in_one_comment():
    result = parse("【取消报名】: 4、5\n【报名】: 6-7")
    assert result.withdraw == [4, 5]
    assert result.claim == [6, 7]
    # a later line overrides an earlier one for the same task
    result = parse("【报名】: 3-5\n【取消报名】: 4")
    assert result.claim == [3, 5] and result.withdraw == [4]
    assert parse("［取消报名］：９").withdraw == [9]


@pytest.mark.parametrize("body", [
    "【其他意向】: 12、13", "【链接】: https://github.com/PaddlePaddle/Paddle/pull/72992", "【提交】: 12",
    "【报名人】: 12", "【状态】: 报名", "12、13", "报名: 12", "#72992 fixes 12",
])
def test_not_claims(body):
    result = parse(body)
    assert result.claim == [] and result.withdraw == []


@pytest.mark.parametrize("body, expected", [
    ("认领 12", [12]),
    ("认领 No.12", [12]),
    ("认领：No.12、13", [12, 13]),
    ("意向认领 task 3, 4", [3, 4]),
    ("意向认领 task 3、5-6", [3, 5, 6]),
])
def test_word_forms(body, expected):
    assert parse(body).claim == expected


def test_word_form_without_number_is_prose_not_error():
    result = parse("认领的同学请在评论里写清楚序号")
    assert result.claim == [] and result.errors == []


def test_word_form_only_at_line_start():
    assert parse("我来认领 12").claim == []


def test_team_form():
    body = "【队名】：飞桨小分队\n【序号】：12、13\n【状态】：报名\n【队员】：@a @b"
    assert parse(body).claim == [12, 13]
    assert parse("【状态】：报名中\n【序号】：20").claim == [20]
    assert parse("【序号】：12\n【状态】：提交RFC").claim == []
    assert parse("【序号】：12\n【状态】：取消报名").withdraw == [12]
    assert parse("【序号】：12").claim == []


def test_quoted_lines_are_not_claims():
    body = "> 【报名】: 1-5\n> 【报名】: 9\n\n同上，【报名】格式参考上面\n【报名】: 6"
    assert parse(body).claim == [6]


def test_fenced_code_blocks_are_not_claims():
    body = "格式如下：\n```\n【报名】: 1、2、3-5\n```\n~~~markdown\n【报名】: 9\n~~~\n【报名】: 10"
    assert parse(body).claim == [10]


def test_unclosed_fence_hides_the_rest():
    assert parse("```\n【报名】: 9").claim == []


def test_html_comments_are_not_claims():
    body = "<!-- 【报名】: 1\n【报名】: 2 -->\n【报名】: 3"
    result = parse(body)
    assert result.claim == [3]


@pytest.mark.parametrize("reply", [
    "---原始邮件---\n发件人: \"lshpku\"<notifications@github.com>\n【报名】: 1-5",
    "------------------ 原始邮件 ------------------\n【报名】: 1-5",
    "On Mon, May 12, 2025 at 10:21 AM lshpku <notifications@github.com> wrote:\n> 【报名】: 1-5\n【报名】: 2",
    "On Mon, May 12, 2025 at 10:21 AM lshpku <\nnotifications@github.com> wrote:\n【报名】: 2",
    "在 2025年5月12日，lshpku 写道：\n【报名】: 2",
    "-----Original Message-----\n【报名】: 2",
])
def test_quoted_email_replies_are_not_claims(reply):
    result = parse("【报名】: 73\n\n" + reply)
    assert result.claim == [73]


def test_errors_are_reported_and_the_rest_applies():
    body = "感谢！\n【报名】: 12、200、0\n【报名】: 9-7、1-60、160\n【报名】:\n【报名】: 40-41"
    result = parse(body)
    assert result.claim == [12, 40, 41]
    by_code = {e.code: e for e in result.errors}
    assert [e.code for e in result.errors] == ["not_on_board", "not_on_board", "reversed_range", "range_too_long",
                                               "locked", "no_numbers"]
    assert result.errors[0].numbers == [200] and result.errors[1].numbers == [0]
    assert "1-183" in result.errors[0].message
    assert (result.errors[0].line, result.errors[0].column) == (2, 10)
    assert by_code["reversed_range"].line == 3 and by_code["reversed_range"].column == 7
    assert "60" in by_code["range_too_long"].message
    assert by_code["locked"].numbers == [160]
    assert "暂不要报名" in by_code["locked"].message
    assert by_code["no_numbers"].line == 4


def test_range_of_exactly_fifty_is_allowed():
    assert parse("【报名】: 1-50", locked={}).claim == list(range(1, 51))
    assert codes(parse("【报名】: 1-51", locked={})) == ["range_too_long"]


def test_locked_task_may_still_be_withdrawn():
    result = parse("【取消报名】: 160")
    assert result.withdraw == [160] and result.errors == []


def test_windows_line_endings():
    assert parse("你好\r\n【报名】: 5\r\n谢谢").claim == [5]


# --- management command -----------------------------------------------------------------

def run_parse_comment(monkeypatch, body, *args):
    monkeypatch.setattr("sys.stdin", io.StringIO(body))
    out = io.StringIO()
    call_command("parse_comment", *args, stdout=out)
    return json.loads(out.getvalue())


def test_parse_comment_command_defaults_to_board_size(board, monkeypatch):
    result = run_parse_comment(monkeypatch, "【报名】: 182、183、184\n【报名】: 160\n【取消报名】: 3", "--json")
    assert result["claim"] == [182, 183]
    assert result["withdraw"] == [3]
    assert [(e["code"], e["numbers"]) for e in result["errors"]] == [("not_on_board", [184]), ("locked", [160])]


def test_parse_comment_command_max_task(board, monkeypatch):
    result = run_parse_comment(monkeypatch, "【报名】: 9-11", "--max-task", "10", "--json")
    assert result["claim"] == [9, 10]
    assert result["errors"][0]["code"] == "not_on_board" and result["errors"][0]["numbers"] == [11]


# --- abuse limits -----------------------------------------------------------------------------

def test_a_number_of_more_than_four_digits_is_a_syntax_error_of_its_line():
    huge = "9" * 4400  # int() of more than 4,300 digits raises in Python
    result = parse(f"【报名】: 12、{huge}\n【报名】: 13")
    assert result.claim == [13]  # the bad line gives nothing, the rest applies
    assert codes(result) == ["number_too_long"]
    error = result.errors[0]
    assert (error.line, error.column) == (1, 10)
    assert error.message == "a task number has at most 4 digits; this one has 4400"
    assert parse("【报名】: 12345").errors[0].code == "number_too_long"
    assert parse("认领 " + huge).errors[0].code == "number_too_long"
    assert parse("【取消报名】: 1-" + huge).errors[0].code == "number_too_long"
    # Four digits is still a number (off this board: an error of another kind).
    assert codes(parse("【报名】: 1234")) == ["not_on_board"]


def test_a_comment_naming_too_many_tasks_is_rejected_whole():
    body = "【报名】: 1-50、51-100、101-150、151-154、181-183"
    assert len(parse_comment(body, max_task=183, locked=LOCKED).claim) == 157  # no limit asked
    result = parse_comment(body, max_task=183, locked=LOCKED, max_tasks=80)
    assert result.claim == [] and result.withdraw == [] and result.rejected
    assert codes(result) == ["too_many_tasks"]
    assert result.errors[0].message == ("the comment names 157 tasks; at most 80 in one comment, "
                                        "so none of it was applied")
    # Withdrawals count too, and locked or off-board numbers are still named.
    assert parse_comment("【取消报名】: 1-50、51-81", max_task=183, max_tasks=80).rejected
    assert parse_comment("【报名】: 1-50、51-80", max_task=183, max_tasks=80).claim == list(range(1, 81))


def test_for_login_is_reported_not_applied():
    result = parse("【报名】: 21 (for @ooooo-create)")
    assert result.claim == [21] and result.for_login == "ooooo-create" and result.errors == []
    assert parse("【取消报名】: 21（for @NKNaN）").for_login == "NKNaN"
    assert parse("【报名】: 21").for_login == ""
    assert parse("【报名】: 21 (for @a)\n【报名】: 22 (for @b)").for_login == ""  # two people: nobody
    assert parse("【报名】: 21 (for @-bad)").for_login == ""


def test_a_comment_with_too_many_claim_lines_or_numbers_is_rejected_whole():
    """The limits that bound the work for one comment: lines that start with a marker, and numbers in all."""
    many_lines = "【报名】: 12\n" * (MAX_MARKER_LINES + 1)
    result = parse(many_lines)
    assert result.claim == [] and result.rejected and codes(result) == ["too_many_lines"]
    assert result.errors[0].line == MAX_MARKER_LINES + 1
    assert result.errors[0].message == (f"the comment has more than {MAX_MARKER_LINES} claim lines, "
                                        "so none of it was applied")
    assert parse("【报名】: 12\n" * MAX_MARKER_LINES).claim == [12]  # at the limit: applied
    # Lines that are not claims (prose, quotes, code) do not count.
    assert parse("text\n> 【报名】: 13\n" * 500 + "```\n" + "【报名】: 14\n" * 500 + "```\n【报名】: 12").claim == [12]

    many_numbers = "【报名】: " + "12、" * MAX_NUMBERS + "12"
    result = parse(many_numbers)
    assert result.claim == [] and codes(result) == ["too_many_numbers"]
    assert parse("【报名】: " + "12、" * (MAX_NUMBERS - 1) + "12").claim == [12]
    split = "\n".join(["【报名】: " + "12、" * (MAX_NUMBERS // 2 - 1) + "12"] * 2 + ["认领 13"])
    assert codes(parse(split)) == ["too_many_numbers"]  # counted over the whole comment


def test_fences_html_comments_and_reply_headers_with_many_lines():
    """The one-pass line finder agrees with the rules line by line: a closing fence needs the same
    character, at least as long, nothing after it; an unclosed fence hides the rest."""
    assert parse("````\n```\n【报名】: 12\n````\n【报名】: 13").claim == [13]
    assert parse("```\n~~~\n【报名】: 12\n```  \n【报名】: 13").claim == [13]
    assert parse("```\n``` x\n【报名】: 12\n```\n【报名】: 13").claim == [13]
    assert parse("```\n【报名】: 12").claim == []
    assert parse("<!--\n【报名】: 12\n-->\n【报名】: 13").errors == []
    assert parse("<!--\n\n-->【报名】: 1-" + "\n" + "【报名】: 40-30").errors[0].line == 4
    assert parse("【报名】: 12\nOn Mon, May 12\nwrote:\n【报名】: 13").claim == [12]
    assert parse("【报名】: 12\n--  Original message --\n【报名】: 13").claim == [12]
