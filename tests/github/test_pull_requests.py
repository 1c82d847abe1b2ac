"""PR titles link tasks; PR state moves the author's status forward and never backwards."""
import pytest

from tracker.models import Claim, Event, PullRequest, TaskStatus
from tracker.services.claims import apply_comment
from tracker.services.pull_requests import apply_pull_request

from . import payloads

TITLE = "[Accuracy diff No.55-56、76-77] Fix accuracy diff for paddle.nn.functional.gelu"


@pytest.fixture(autouse=True)
def pr_settings(settings):
    settings.GITHUB_PR_TITLE_PREFIX = "Accuracy diff"


def status_of(login, number):
    return Claim.objects.get(task__number=number, contributor__login=login).status


def opened(number=73012, title=TITLE, login="ooooo-create", **kw):
    return payloads.pull(number, title, login, **kw)


def merged(number=73012, title=TITLE, login="ooooo-create", when="2025-05-25T09:30:00Z", **kw):
    return payloads.pull(number, title, login, state="closed", merged=True, updated_at=when, closed_at=when,
                         merged_at=when, **kw)


def test_open_pr_links_tasks_and_marks_pr_submitted(board):
    result = apply_pull_request(opened())
    pr = PullRequest.objects.get(repo="PaddlePaddle/Paddle", number=73012)
    assert sorted(t.number for t in pr.tasks.all()) == [55, 56, 76, 77]
    assert pr.state == "open" and pr.author.login == "ooooo-create" and pr.title == TITLE
    assert status_of("ooooo-create", 55) == "提交PR"
    board[76].refresh_from_db()
    assert board[76].status == TaskStatus.PR_SUBMITTED
    linked = Event.objects.get(task__number=55, kind="pr_linked")
    assert linked.source == "pr" and linked.source_ref == "https://github.com/PaddlePaddle/Paddle/pull/73012"
    assert result.changes > 0
    assert apply_pull_request(opened()).changes == 0  # same event again: nothing new


def test_merge_completes_and_part_marks_partial(board):
    apply_comment(payloads.comment(2874600001, "ooooo-create", "【报名】: 55-56", "2025-05-14T01:00:00Z"))
    apply_pull_request(opened())
    assert status_of("ooooo-create", 55) == "提交PR"
    apply_pull_request(merged())
    assert PullRequest.objects.get(number=73012).state == "merged"
    assert status_of("ooooo-create", 55) == "完成任务"
    board[55].refresh_from_db()
    assert board[55].status == TaskStatus.COMPLETED
    kinds = set(Event.objects.filter(task__number=55).values_list("kind", flat=True))
    assert {"claimed", "pr_linked", "claim_status", "pr_state"} <= kinds

    part_title = "[Accuracy diff No.12-part] Fix cumsum for float16"
    apply_pull_request(merged(73100, part_title, "BeingGod"))
    assert status_of("BeingGod", 12) == "部分完成"
    board[12].refresh_from_db()
    assert board[12].status == TaskStatus.PR_SUBMITTED


def closed(number, title, login, when="2025-05-26T00:00:00Z"):
    return payloads.pull(number, title, login, state="closed", updated_at=when, closed_at=when)


def test_closed_without_merge_takes_back_pr_submitted(board):
    apply_comment(payloads.comment(2874600002, "Z-NAVY", "【报名】: 36", "2025-05-14T01:00:00Z"))
    apply_pull_request(opened(73200, "[Accuracy diff No.36] maximum", "Z-NAVY"))
    assert status_of("Z-NAVY", 36) == "提交PR"
    board[36].refresh_from_db()
    assert board[36].status == TaskStatus.PR_SUBMITTED
    result = apply_pull_request(closed(73200, "[Accuracy diff No.36] maximum", "Z-NAVY"))
    pr = PullRequest.objects.get(number=73200)
    assert pr.state == "closed"
    claim = Claim.objects.get(task__number=36, contributor__login="Z-NAVY")
    assert claim.withdrawn_at is None and claim.status == "报名"  # the claim stays, the status goes back
    board[36].refresh_from_db()
    assert board[36].status == TaskStatus.CLAIMED
    taken_back = Event.objects.filter(task__number=36, kind="claim_status").latest("id")
    assert taken_back.message == ("@Z-NAVY on No.36: 提交PR → 报名 "
                                  "(PaddlePaddle/Paddle#73200 closed without merge)")
    assert taken_back.source_ref == "https://github.com/PaddlePaddle/Paddle/pull/73200"
    assert Event.objects.filter(task__number=36, kind="pr_state", message__contains="open → closed").exists()
    assert result.changes > 0
    # The same "closed" delivery again changes nothing; reopening sets 提交PR again.
    assert apply_pull_request(closed(73200, "[Accuracy diff No.36] maximum", "Z-NAVY")).changes == 0
    apply_pull_request(opened(73200, "[Accuracy diff No.36] maximum", "Z-NAVY", updated_at="2025-05-27T00:00:00Z"))
    assert status_of("Z-NAVY", 36) == "提交PR"


def test_closed_without_merge_keeps_pr_submitted_while_another_open_pr_backs_it(board):
    apply_pull_request(opened(73200, "[Accuracy diff No.36] maximum", "Z-NAVY"))
    apply_pull_request(opened(73201, "[Accuracy diff No.36] maximum, second try", "Z-NAVY"))
    apply_pull_request(closed(73200, "[Accuracy diff No.36] maximum", "Z-NAVY"))
    assert status_of("Z-NAVY", 36) == "提交PR"
    kept = Event.objects.get(task__number=36, kind="claim_kept")
    assert "PaddlePaddle/Paddle#73201 (open) still backs it" in kept.message
    board[36].refresh_from_db()
    assert board[36].status == TaskStatus.PR_SUBMITTED
    # When the second one is closed unmerged too, nothing backs 提交PR any more.
    apply_pull_request(closed(73201, "[Accuracy diff No.36] maximum, second try", "Z-NAVY",
                              when="2025-05-28T00:00:00Z"))
    assert status_of("Z-NAVY", 36) == "报名"
    board[36].refresh_from_db()
    assert board[36].status == TaskStatus.CLAIMED


def test_closed_without_merge_keeps_a_merged_pr_s_status(board):
    apply_pull_request(merged(73300, "[Accuracy diff No.21] heaviside", "ooooo-create"))
    apply_pull_request(opened(73301, "[Accuracy diff No.21] heaviside follow-up", "ooooo-create",
                              updated_at="2025-05-26T00:00:00Z"))
    apply_pull_request(closed(73301, "[Accuracy diff No.21] heaviside follow-up", "ooooo-create",
                              when="2025-05-27T00:00:00Z"))
    assert status_of("ooooo-create", 21) == "完成任务"
    board[21].refresh_from_db()
    assert board[21].status == TaskStatus.COMPLETED


def test_a_pr_naming_every_task_is_rejected_and_changes_nothing(board, settings):
    settings.CLAIM_MAX_TASKS = 80
    title = "[Accuracy diff No.1-50、51-100、101-150、151-183] x"
    events = Event.objects.count()
    result = apply_pull_request(opened(74000, title, "mallory"))
    assert result.changes == 0 and result.claimed == []
    assert result.skipped == "PaddlePaddle/Paddle#74000: the title names 183 tasks; at most 80 in one pull request"
    assert not PullRequest.objects.exists() and not Claim.objects.exists()
    assert set(board[1].__class__.objects.values_list("status", flat=True)) == {"open", "locked"}
    rejected = Event.objects.get(kind="pr_rejected")
    assert rejected.source_ref == "https://github.com/PaddlePaddle/Paddle/pull/74000" and rejected.actor == "mallory"
    assert rejected.data["reason"] == "the title names 183 tasks; at most 80 in one pull request"
    assert Event.objects.count() == events + 1
    apply_pull_request(opened(74000, title, "mallory", updated_at="2025-05-21T00:00:00Z"))  # seen again
    assert Event.objects.filter(kind="pr_rejected").count() == 1
    # Under the limit it links as usual.
    settings.CLAIM_MAX_TASKS = 200
    apply_pull_request(opened(74000, title, "mallory", updated_at="2025-05-22T00:00:00Z"))
    assert PullRequest.objects.get(number=74000).tasks.count() == 183


def test_out_of_order_events_never_move_status_backwards(board):
    apply_pull_request(merged(73300, "[Accuracy diff No.21] heaviside", "ooooo-create", when="2025-05-25T10:00:00Z"))
    events = Event.objects.count()
    # the "opened" delivery arrives late
    late = opened(73300, "[Accuracy diff No.21] heaviside", "ooooo-create", updated_at="2025-05-20T08:00:00Z")
    result = apply_pull_request(late)
    assert result.skipped.startswith("older")
    assert PullRequest.objects.get(number=73300).state == "merged"
    assert status_of("ooooo-create", 21) == "完成任务"
    assert Event.objects.count() == events


def test_newer_open_pr_does_not_undo_completion(board):
    apply_pull_request(merged(73400, "[Accuracy diff No.8] bitwise_right_shift", "ooooo-create"))
    apply_pull_request(opened(73401, "[Accuracy diff No.8] follow-up test", "ooooo-create",
                              updated_at="2025-06-01T00:00:00Z"))
    assert status_of("ooooo-create", 8) == "完成任务"


def test_reopened_pr_after_close(board):
    title = "[Accuracy diff No.40] cosine_similarity"
    apply_pull_request(opened(73500, title, "Cutelemon6"))
    apply_pull_request(payloads.pull(73500, title, "Cutelemon6", state="closed", updated_at="2025-05-21T00:00:00Z",
                                     closed_at="2025-05-21T00:00:00Z"))
    apply_pull_request(payloads.pull(73500, title, "Cutelemon6", state="open", updated_at="2025-05-22T00:00:00Z"))
    assert PullRequest.objects.get(number=73500).state == "open"
    assert status_of("Cutelemon6", 40) == "提交PR"


def test_title_edit_moves_links_but_keeps_links_from_elsewhere(board):
    apply_pull_request(opened(73600, "[Accuracy diff No.9] broadcast_to", "ooooo-create"))
    pr = PullRequest.objects.get(number=73600)
    pr.tasks.add(board[20])  # linked by the board import, not by the title
    apply_pull_request(opened(73600, "[Accuracy diff No.10] broadcast_to", "ooooo-create",
                              updated_at="2025-05-21T00:00:00Z"))
    assert sorted(t.number for t in pr.tasks.all()) == [10, 20]
    assert Event.objects.filter(task__number=9, kind="pr_unlinked").exists()


@pytest.mark.parametrize("title", [
    'Revert "[Accuracy diff No.55-56] Fix gelu"',
    "[Hackathon 8th No.55] Add API",
    "[CINN] Accuracy diff No.55 reduce",
    "Fix typo in docs",
])
def test_titles_that_link_nothing(board, title):
    result = apply_pull_request(opened(73700, title, "someone"))
    assert result.skipped
    assert not PullRequest.objects.exists() and not Claim.objects.exists()


def test_pr_for_a_locked_task_is_linked_but_claims_nothing(board):
    apply_pull_request(opened(73800, "[Accuracy diff No.160, 30] frexp", "co63oc"))
    pr = PullRequest.objects.get(number=73800)
    assert sorted(t.number for t in pr.tasks.all()) == [30, 160]
    assert not Claim.objects.filter(task__number=160).exists()
    assert status_of("co63oc", 30) == "提交PR"
    board[160].refresh_from_db()
    assert board[160].status == TaskStatus.LOCKED


def test_unknown_task_numbers_are_reported(board):
    result = apply_pull_request(opened(73900, "[Accuracy diff No.30, 999] x", "co63oc"))
    assert result.errors and result.errors[0]["numbers"] == [999]
    assert Event.objects.filter(kind="pr_unknown_task").count() == 1


def test_paddleapitest_search_item(board):
    item = payloads.search_item(280, "[Accuracy diff No.2-5, 14] all / any", "co63oc",
                                repo="PFCCLab/PaddleAPITest", state="closed", merged_at="2025-05-30T00:00:00Z",
                                closed_at="2025-05-30T00:00:00Z", updated_at="2025-05-30T00:00:00Z")
    apply_pull_request(item)
    pr = PullRequest.objects.get(repo="PFCCLab/PaddleAPITest", number=280)
    assert pr.state == "merged" and pr.url == "https://github.com/PFCCLab/PaddleAPITest/pull/280"
    assert status_of("co63oc", 14) == "完成任务"
