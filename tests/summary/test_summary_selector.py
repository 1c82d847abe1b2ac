"""The task card's selector (tracker/selectors/summary.py) on the states a contributor meets, through the real
write paths with real SQLite: a failing task diagnosed by the real engine, a task fixed in a release, a documented
difference, a GPU task with only PaddleAPITest's report; and `summary` in /api/tasks/<n>, in English and Chinese."""
import pytest
from django.utils import translation

from tests.runner.conftest import FAILING_FORWARD
from tests.runner.test_verdict_layers import embedding_padding_configs
from tracker.selectors.board import task_detail
from tracker.selectors.summary import config_command, task_summary

from . import cards

pytestmark = pytest.mark.django_db


def _card(number):
    return task_summary(task_detail(number))


def test_a_failing_diagnosed_task_says_the_values_who_is_off_and_the_shrunk_repro():
    cards.failing_task()
    card = _card(cards.FAILING)
    # The real verdict: float16 x 1e6 overflows to inf in Paddle; Torch rounds to 2872 (an 8 x 8 input).
    assert card.diff_source == "verdict" and card.worst["dtype"] == "float16"
    assert card.diff.startswith("On Paddle 3.3.1, float16 paddle.Tensor.__mul__ of 64 elements: the worst "
                                "element is inf in Paddle, 2872 in Torch; Paddle is off a float64 reference by inf")
    assert card.off == "paddle_off"
    assert card.off_text == "Paddle is off the float64 value; Torch is close to it"
    assert not card.can_diagnose
    # The diagnosis shrank 8 x 8 to the one failing element (1 x 1, cut from the failing draw): the smallest repro is
    # the engine's command for the shrunk config.
    assert card.repro_source == "diagnosis"
    assert card.repro_config == 'paddle.Tensor.__mul__(Tensor([1, 1],"float16"), 1000000.0, )'
    assert card.repro_command.startswith("python -m apitester --api_config='paddle.Tensor.__mul__(Tensor([1, 1]")
    assert "import paddle" in card.repro_script
    assert card.standing == "never" and card.standing_text == "failing on every release tested (3.3.1)"
    assert card.claimable
    assert [step["kind"] for step in card.next_steps] == ["claim", "pr_title", "confirm"]
    assert card.pr_title == "[Accuracy diff No.301] …"
    assert card.confirm_command == config_command(FAILING_FORWARD)  # the original config, not the shrunk one
    assert "Who is off: Paddle is off the float64 value" in card.text


def test_a_failing_task_not_yet_diagnosed_offers_the_diagnosis_and_the_config_command():
    cards.failing_task(diagnose=False)
    card = _card(cards.FAILING)
    assert card.off == "not_diagnosed" and card.off_text == "not yet diagnosed" and card.can_diagnose
    assert card.diff.endswith("is inf in Paddle, 2872 in Torch.")  # no oracle reading without a diagnosis
    # The verdict's own draw, as the runs panel's repro command gives it.
    assert card.repro_source == "verdict" and card.repro_command == config_command(FAILING_FORWARD, "typical:0@2")
    assert card.repro_script == ""


def test_a_task_fixed_in_a_release_says_where_and_what_failed_before():
    cards.fixed_task()
    card = _card(cards.FIXED)
    assert card.standing == "fixed"
    assert card.standing_text == "fixed in 3.1.0 — passes on every later release tested (3.1.0, 3.3.1); fails on 3.0.0"
    # What was wrong is the newest failing cell: the 3.0.0 verdict (max abs 3.4e38 of the stored grid).
    assert card.diff == "On Paddle 3.0.0, paddle.clip: its values differ from Torch's, max abs 3.4e+38, max rel 0.9."
    assert card.off == "nothing_to_diagnose"  # it passes on the main environment now


def test_a_documented_difference_says_by_design_with_the_specs_reason():
    config = embedding_padding_configs(1)[0]
    cards.by_design_task(config)
    card = _card(cards.BY_DESIGN)
    assert card.standing == "by_design"
    assert card.standing_text.startswith("differs by design: Paddle documents an all-zero output row")
    assert "(a documented difference: Paddle does this by design)" in card.diff
    # Its strict layer fails: the diagnosis panel counts it as diagnosable, and the card says the same.
    assert card.off == "not_diagnosed" and card.can_diagnose
    assert card.repro_source == "verdict" and config in card.repro_command


def test_a_gpu_task_without_a_gpu_run_gives_the_report_and_cpu_evidence_never_a_gpu_verdict(tmp_path):
    cards.gpu_task(tmp_path)
    card = _card(cards.GPU)
    assert card.diff_source == "reported" and card.worst is None
    assert card.diff.startswith("paddle.pow: reported by PaddleAPITest (GPU, 2025-06-06): 2 of 8 elements differ, "
                                "max abs 1, max rel 0.0029 (the report's evidence, not a verdict of this board)")
    assert "CPU lane: fails on CPU too (device-independent): 1 of 1 configs" in card.diff
    assert card.diff.endswith("no GPU verdict: this board has no GPU run for it.")
    assert card.standing == "gpu_untested" and "no GPU verdict yet" in card.standing_text
    assert card.repro_source == "cpu_evidence" and cards.POW in card.repro_command
    for word in ("fix verified", "failing on every release", "fixed in"):
        assert word not in card.text


def test_a_gpu_task_with_nothing_on_the_cpu_lane_says_so(tmp_path):
    cards.gpu_task(tmp_path, cpu_evidence=False)
    card = _card(cards.GPU)
    assert "not re-tested on the CPU lane yet" in card.diff
    assert card.off == "not_diagnosable"
    assert card.repro_source == "config" and cards.POW in card.repro_command


def test_the_api_carries_the_same_card_structured_and_as_text(client):
    cards.failing_task(diagnose=False)
    summary = client.get(f"/api/tasks/{cards.FAILING}").json()["summary"]
    expected = _card(cards.FAILING).as_dict()
    assert summary == expected
    assert summary["off"] == "not_diagnosed" and summary["standing"] == "never"
    assert summary["text"].splitlines()[0] == summary["diff"]
    assert summary["worst"]["paddle"] == "inf" and summary["worst"]["torch"] == "2872"


def test_the_card_reads_in_chinese():
    cards.fixed_task()
    with translation.override("zh-hans"):
        card = _card(cards.FIXED)
    assert card.standing_text == "已在 3.1.0 修复——此后测试的每个版本都通过（3.1.0, 3.3.1）；在 3.0.0 上失败"
    assert card.next_steps[1]["text"] == "修复的 PR 标题这样写，看板才能关联它："


def test_staff_get_the_diagnose_button_on_the_card_of_a_task_not_yet_diagnosed(client):
    from django.contrib.auth.models import User

    cards.failing_task(diagnose=False)
    anonymous = client.get(f"/tasks/{cards.FAILING}").content.decode()
    card = anonymous[anonymous.index('id="summary"'):anonymous.index("</section>")]
    assert "not yet diagnosed" in card and 'class="inline card-diagnose"' not in card
    client.force_login(User.objects.create_user("maint", is_staff=True))
    staff = client.get(f"/tasks/{cards.FAILING}").content.decode()
    card = staff[staff.index('id="summary"'):staff.index("</section>")]
    assert 'action="/runs/diagnose"' in card and f'name="task" value="{cards.FAILING}"' in card


def test_a_side_named_without_a_distance_says_by_what_not_by_none():
    """A gradient-check reading names the side with evidence and no max_abs (apitester/diagnosis/oracle.py gradient_check)."""
    from tracker.selectors.summary import _off_by

    reading = {"reading": "paddle_off", "oracle": "gradient_check",
               "evidence": "grad x2: Paddle's gradient is NaN where the one-sided derivatives are 0"}
    text = _off_by(reading)
    assert "None" not in text
    assert text == "; Paddle is off (gradient check: grad x2: Paddle's gradient is NaN where the one-sided derivatives are 0)"
    with_numbers = {"reading": "paddle_off", "paddle": {"max_abs": 8.72}, "torch": {"max_abs": 0.0}}
    assert _off_by(with_numbers) == "; Paddle is off a float64 reference by 8.72"
