import io
import json

import pytest
from django.core.management import call_command

from tracker.github.pr_titles import MAX_NUMBERS, parse_pr_title


@pytest.mark.parametrize("title, tasks", [
    ("[Accuracy diff No.55-56、76-77] Fix accuracy diff for paddle.nn.functional.gelu", [55, 56, 76, 77]),
    ("[Accuracy diff No.11、144] Fix accuracy diff for clip API", [11, 144]),
    ("[Accuracy diff No.21] Fix paddle.heaviside", [21]),
    ("[Accuracy diff No 34-35] fix logit", [34, 35]),
    ("[Accuracy diff NO.38,39] nextafter", [38, 39]),
    ("[Accuracy diff No. 9-10，20] broadcast_to / expand", [9, 10, 20]),
    ("【Accuracy diff No.１５】cumprod", [15]),
    ("[accuracy diff No.25] eigh", [25]),
    ("[Accuracy diff] No.146 Tensor.mean", [146]),
    ("[Accuracy diff No.2-5, 14] all / any / count_nonzero", [2, 3, 4, 5, 14]),
])
def test_titles_that_link(title, tasks):
    result = parse_pr_title(title, "Accuracy diff")
    assert result.tasks == tasks
    assert result.part is False and result.revert is False


@pytest.mark.parametrize("title", [
    "[Accuracy diff No.12-part] Fix part of cumsum",
    "[Accuracy diff No.12] Fix cumsum -part",
    "[Accuracy diff No.12] - Part fix for fp16",
])
def test_part(title):
    result = parse_pr_title(title, "Accuracy diff")
    assert result.tasks == [12] and result.part is True


def test_revert_links_nothing():
    result = parse_pr_title('Revert "[Accuracy diff No.55-56] Fix gelu"', "Accuracy diff")
    assert result.tasks == [] and result.revert is True


@pytest.mark.parametrize("title", [
    "[Hackathon 8th No.55] Add API",
    "[API Compatibility No.12] paddle.clip",
    "[CINN] Accuracy diff No.3 fix reduce",  # the words follow another tag, not inside a bracket
    "[AccuracyX diff No.3] typo",
    "[XAccuracy diff No.3] typo",
    "[Paddle TensorRT No.11] convert",
    "Fix accuracy diff No.12 in gelu",  # the words appear, but not as the title's tag
    "[Accuracy diff] Fix gelu for No. of elements",
    "[Accuracy diff No.x] typo",
])
def test_other_titles_link_nothing(title):
    assert parse_pr_title(title, "Accuracy diff").tasks == []


@pytest.mark.parametrize("title, prefix, tasks", [
    # As the community bot does: the prefix anywhere in the title's leading bracket.
    ("【PaddlePaddle Hackathon 5th No.30】Add paddle.xxx", "Hackathon 5th", [30]),
    ("[PaddlePaddle Hackathon 5th No.30-31] x", "Hackathon 5th", [30, 31]),
    ("[CINN Accuracy diff No.3] fix reduce", "Accuracy diff", [3]),
    ("(Paddle Accuracy diff No.7) x", "Accuracy diff", [7]),
])
def test_prefix_anywhere_in_the_leading_bracket(title, prefix, tasks):
    assert parse_pr_title(title, prefix).tasks == tasks


def test_a_title_naming_too_many_tasks_links_nothing_and_says_why():
    title = "[Accuracy diff No.1-50、51-100、101-150、151-183] x"
    assert parse_pr_title(title, "Accuracy diff").tasks == list(range(1, 184))  # no limit asked
    result = parse_pr_title(title, "Accuracy diff", max_tasks=80)
    assert result.tasks == [] and result.error == "the title names 183 tasks; at most 80 in one pull request"
    assert parse_pr_title("[Accuracy diff No.1-50、51-80] x", "Accuracy diff", max_tasks=80).tasks == list(range(1, 81))


def test_a_task_number_of_more_than_four_digits_is_a_syntax_error():
    result = parse_pr_title("[Accuracy diff No.12、" + "9" * 5000 + "] x", "Accuracy diff")
    assert result.tasks == []
    assert result.error == "column 22: a task number has at most 4 digits; this one has 5000"
    assert parse_pr_title("[Accuracy diff No.1234] x", "Accuracy diff").tasks == [1234]


def test_custom_prefix():
    assert parse_pr_title("[Hackathon 8th No.55] Add API", "Hackathon 8th").tasks == [55]
    assert parse_pr_title("[Accuracy diff No.55] x", "Hackathon 8th").tasks == []


def test_reversed_or_huge_ranges_link_nothing():
    assert parse_pr_title("[Accuracy diff No.56-55] x", "Accuracy diff").tasks == []
    assert parse_pr_title("[Accuracy diff No.1-183] x", "Accuracy diff").tasks == []


def run(*args):
    out = io.StringIO()
    call_command("parse_pr_title", *args, stdout=out)
    return json.loads(out.getvalue())


def test_parse_pr_title_command():
    assert run("--json", "[Accuracy diff No.55-56、76-77] Fix") == {"tasks": [55, 56, 76, 77], "part": False,
                                                                     "revert": False}
    assert run("--prefix", "Hackathon 8th", "--json", "[Hackathon 8th No.3-part] x") == {
        "tasks": [3], "part": True, "revert": False}
    assert run("--json", 'Revert "[Accuracy diff No.3] x"') == {"tasks": [], "part": False, "revert": True}


def test_a_title_with_too_many_numbers_links_nothing_and_says_why():
    title = "[Accuracy diff No." + "12、" * MAX_NUMBERS + "12] x"
    result = parse_pr_title(title, "Accuracy diff")
    assert result.tasks == []
    assert result.error == f"column {len('[Accuracy diff No.') + 3 * MAX_NUMBERS + 1}: the title has more than " \
                           f"{MAX_NUMBERS} task numbers; at most {MAX_NUMBERS}"
    assert parse_pr_title("[Accuracy diff No." + "12、" * (MAX_NUMBERS - 1) + "12] x", "Accuracy diff").tasks == [12]


@pytest.mark.parametrize("title, tasks", [
    ("[Accuracy diff No.1 Accuracy diff No.2] x", [2]),  # one bracket serves one prefix: after a space first
    ("[Accuracy diff No.1] [Accuracy diff No.2] x", [1, 2]),
    ("Accuracy diff No.1 (Accuracy diff No.2)", [1, 2]),
    ("x Accuracy diff No.1", []),
    ("[xAccuracy diff No.1]", []),
    ("[x_Accuracy diff No.1]", [1]),
    ("[a] Accuracy diff No.1", []),
    ("[a (Accuracy diff] No.1", [1]),
])
def test_where_a_prefix_counts(title, tasks):
    assert parse_pr_title(title, "Accuracy diff").tasks == tasks
