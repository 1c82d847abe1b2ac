"""Applying tracking-issue comments to the board: claims, edits, deletions, bots, errors, events."""
import pytest

from tracker.github.comments import MAX_MARKER_LINES
from tracker.models import Claim, Contributor, Event, IssueComment, PullRequest, TaskStatus
from tracker.services.claims import apply_comment, delete_comment, read_comment

from . import payloads


def active(task_number):
    return sorted(c.contributor.login for c in Claim.objects.filter(task__number=task_number, withdrawn_at__isnull=True))


@pytest.fixture(autouse=True)
def bot_settings(settings):
    settings.GITHUB_BOT_ACCOUNTS = ["paddle-bot", "paddle-ci-bot", "github-actions[bot]"]


def test_claim_comment_creates_claims_with_events(board):
    c = payloads.comment(2874511001, "BeingGod", "【报名】: 1-5、11-17、36-37", "2025-05-12T03:21:45Z")
    result = apply_comment(c)
    assert result.claimed == [1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 17, 36, 37]
    claim = Claim.objects.get(task__number=12)
    assert claim.contributor.login == "BeingGod"
    assert claim.source == "comment" and claim.source_ref == c["html_url"]
    assert claim.created.isoformat() == "2025-05-12T03:21:45+00:00"
    board[12].refresh_from_db()
    assert board[12].status == TaskStatus.CLAIMED
    event = Event.objects.get(task__number=12, kind="claimed")
    assert event.source == "comment" and event.source_ref == c["html_url"]
    assert event.actor == "BeingGod"


def test_same_comment_twice_changes_nothing(board):
    c = payloads.comment(2874511002, "Z-NAVY", "【报名】: 36-37、40-42", "2025-05-12T04:00:00Z")
    apply_comment(c)
    events = Event.objects.count()
    again = apply_comment(c)
    assert again.changes == 0 and again.skipped == "unchanged"
    assert Event.objects.count() == events


def test_bot_comments_are_never_claims(board, settings):
    body = "@BeingGod 报名成功：\n【报名】: 1-5"
    result = apply_comment(payloads.comment(2874511003, "paddle-bot", body, "2025-05-12T05:00:00Z"))
    assert result.claimed == [] and "bot" in result.skipped
    result = apply_comment(payloads.comment(2874511004, "dependabot[bot]", "【报名】: 6", "2025-05-12T05:00:00Z"))
    assert result.claimed == []
    assert Claim.objects.count() == 0
    app = payloads.comment(2874511020, "paddle-ci", "【报名】: 8", "2025-05-12T05:00:00Z")
    app["user"]["type"] = "Bot"
    assert apply_comment(app).claimed == []
    settings.GITHUB_BOT_ACCOUNTS = ["HappyOpenSourceBot"]
    apply_comment(payloads.comment(2874511005, "happyopensourcebot", "【报名】: 7", "2025-05-12T05:00:00Z"))
    assert Claim.objects.count() == 0


def test_locked_task_is_rejected_with_reason_on_its_history(board):
    result = apply_comment(payloads.comment(2874511006, "co63oc", "【报名】: 160、20", "2025-05-13T01:00:00Z"))
    assert result.claimed == [20]
    assert active(160) == []
    event = Event.objects.get(task__number=160, kind="claim_rejected")
    assert "暂不要报名" in event.message and event.actor == "co63oc"
    assert IssueComment.objects.get(comment_id=2874511006).errors[0]["code"] == "locked"


def test_other_errors_are_recorded_and_the_rest_applies(board):
    result = apply_comment(payloads.comment(2874511007, "cszdrg", "【报名】: 6-7、300\n【报名】: 9-8",
                                            "2025-05-13T01:00:00Z"))
    assert result.claimed == [6, 7]
    event = Event.objects.get(kind="comment_errors")
    assert event.task is None
    assert "line 1: task 300 is not on the board" in event.message
    assert "line 2: range 9-8 is reversed" in event.message


def test_edit_withdraws_what_the_comment_no_longer_claims(board):
    c = payloads.comment(2874511008, "ooooo-create", "【报名】: 55-56、76-77", "2025-05-14T01:00:00Z")
    apply_comment(c)
    edited = dict(c, body="【报名】: 55、76、78", updated_at="2025-05-14T02:00:00Z")
    result = apply_comment(edited)
    assert result.claimed == [78]
    assert result.withdrawn == [56, 77]
    assert active(56) == [] and active(55) == ["ooooo-create"] and active(78) == ["ooooo-create"]
    withdrawn = Event.objects.get(task__number=56, kind="withdrawn")
    assert withdrawn.source_ref == c["html_url"]
    board[56].refresh_from_db()
    assert board[56].status == TaskStatus.OPEN


def test_stale_edit_is_ignored(board):
    c = payloads.comment(2874511009, "NKNaN", "【报名】: 25", "2025-05-14T01:00:00Z", "2025-05-14T03:00:00Z")
    apply_comment(c)
    older = dict(c, body="【报名】: 26", updated_at="2025-05-14T02:00:00Z")
    result = apply_comment(older)
    assert result.skipped.startswith("older")
    assert active(25) == ["NKNaN"] and active(26) == []


def test_delete_withdraws_claims(board):
    c = payloads.comment(2874511010, "Cutelemon6", "【报名】: 40-41", "2025-05-14T01:00:00Z")
    apply_comment(c)
    result = delete_comment(c)
    assert sorted(result.withdrawn) == [40, 41]
    assert active(40) == []
    assert IssueComment.objects.get(comment_id=2874511010).deleted
    # a late "edited" delivery for the deleted comment changes nothing
    assert apply_comment(dict(c, updated_at="2025-05-15T00:00:00Z")).skipped == "comment was deleted"
    assert active(40) == []


def test_claim_backed_by_another_comment_or_a_pr_stays(board):
    first = payloads.comment(2874511011, "co63oc", "【报名】: 2-5", "2025-05-14T01:00:00Z")
    second = payloads.comment(2874511012, "co63oc", "【报名】: 4", "2025-05-15T01:00:00Z")
    apply_comment(first)
    apply_comment(second)
    pr = PullRequest.objects.create(repo="PFCCLab/PaddleAPITest", number=280, state="open",
                                    author=Contributor.objects.get(login="co63oc"))
    pr.tasks.add(board[2])
    delete_comment(first)
    assert active(2) == ["co63oc"]  # the person's PR backs it
    assert active(3) == []
    assert active(4) == ["co63oc"]  # the second comment still claims it
    assert Event.objects.filter(kind="claim_kept", task__number=4).exists()


def test_explicit_withdrawal(board):
    apply_comment(payloads.comment(2874511013, "ccsuzzh", "【报名】: 73、20", "2025-05-14T01:00:00Z"))
    result = apply_comment(payloads.comment(2874511014, "ccsuzzh", "不好意思，这个没时间做了\n【取消报名】: 73",
                                            "2025-05-20T01:00:00Z"))
    assert result.withdrawn == [73]
    assert active(73) == [] and active(20) == ["ccsuzzh"]


def test_claim_again_after_withdrawal_reuses_the_claim(board):
    apply_comment(payloads.comment(2874511015, "ccsuzzh", "【报名】: 73", "2025-05-14T01:00:00Z"))
    apply_comment(payloads.comment(2874511016, "ccsuzzh", "【取消报名】: 73", "2025-05-15T01:00:00Z"))
    apply_comment(payloads.comment(2874511017, "ccsuzzh", "【报名】: 73", "2025-05-16T01:00:00Z"))
    assert Claim.objects.filter(task__number=73).count() == 1
    assert active(73) == ["ccsuzzh"]
    assert list(Event.objects.filter(task__number=73).order_by("created").values_list("kind", flat=True)) == [
        "claimed", "withdrawn", "claimed"]


def test_logins_are_case_insensitive(board):
    Contributor.objects.create(login="BeingGod")
    apply_comment(payloads.comment(2874511018, "beinggod", "【报名】: 1", "2025-05-14T01:00:00Z"))
    assert Contributor.objects.count() == 1
    assert active(1) == ["BeingGod"]


def test_quoted_claims_in_a_reply_do_not_claim_for_the_replier(board):
    body = "> 【报名】: 1-5、11-17\n\n@BeingGod 12 我已经修好了，可以看 #72992"
    result = apply_comment(payloads.comment(2874511019, "ooooo-create", body, "2025-05-14T01:00:00Z"))
    assert result.claimed == [] and Claim.objects.count() == 0


# --- abuse limits and comments the site posts for someone ------------------------------------

def test_a_comment_claiming_the_whole_board_is_rejected_and_recorded(board, settings):
    settings.CLAIM_MAX_TASKS = 80
    body = "【报名】: 1-50、51-100、101-150、151-183"
    result = apply_comment(payloads.comment(2875000001, "mallory", body, "2025-05-20T00:00:00Z"))
    assert result.claimed == [] and not Claim.objects.exists()
    assert result.skipped == "the comment names 183 tasks; at most 80 in one comment, so none of it was applied"
    rejected = Event.objects.get(kind="comment_rejected")
    assert rejected.task is None and rejected.actor == "mallory"
    assert rejected.source_ref == "https://github.com/PaddlePaddle/Paddle/issues/72667#issuecomment-2875000001"
    assert rejected.message == f"comment by @mallory rejected: {result.skipped}"
    assert {t.status for t in board.values()} == {"open", "locked"}


def test_an_edit_to_too_many_tasks_changes_nothing(board, settings):
    settings.CLAIM_MAX_TASKS = 80
    apply_comment(payloads.comment(2875000002, "NKNaN", "【报名】: 25", "2025-05-20T00:00:00Z"))
    apply_comment(payloads.comment(2875000002, "NKNaN", "【报名】: 1-50、51-100", "2025-05-20T00:00:00Z",
                                   "2025-05-21T00:00:00Z"))
    assert active(25) == ["NKNaN"] and Claim.objects.count() == 1
    assert Event.objects.filter(kind="comment_rejected").count() == 1


def test_site_account_comment_is_credited_to_the_named_login(board, settings):
    settings.GITHUB_BOT_LOGIN = "board-poster"
    settings.GITHUB_BOT_ACCOUNTS = ["paddle-bot", "board-poster"]  # also listed as a bot: still credited
    apply_comment(payloads.comment(2875000003, "board-poster", "【报名】: 21 (for @ooooo-create)",
                                   "2025-05-20T00:00:00Z"))
    assert active(21) == ["ooooo-create"]
    assert IssueComment.objects.get(comment_id=2875000003).on_behalf_of == "ooooo-create"
    assert Event.objects.get(kind="claimed", task__number=21).actor == "ooooo-create"
    # Its withdrawal comment withdraws for the same person; deleting the claim comment keeps nothing else.
    apply_comment(payloads.comment(2875000004, "board-poster", "【取消报名】: 21 (for @ooooo-create)",
                                   "2025-05-21T00:00:00Z"))
    assert active(21) == []
    # The site's account writing without "(for @…)" claims nothing, for nobody.
    apply_comment(payloads.comment(2875000005, "board-poster", "【报名】: 22", "2025-05-21T00:00:00Z"))
    settings.GITHUB_BOT_ACCOUNTS = ["paddle-bot"]  # even when not listed as a bot
    result = apply_comment(payloads.comment(2875000015, "board-poster", "【报名】: 23", "2025-05-21T00:00:00Z"))
    assert active(22) == [] and active(23) == [] and result.skipped == "the site's account board-poster names nobody"


def test_for_login_by_anyone_else_claims_for_the_author(board, settings):
    settings.GITHUB_BOT_LOGIN = "board-poster"
    apply_comment(payloads.comment(2875000006, "mallory", "【报名】: 21 (for @ooooo-create)", "2025-05-20T00:00:00Z"))
    assert active(21) == ["mallory"]
    assert IssueComment.objects.get(comment_id=2875000006).on_behalf_of == ""


def test_deleting_a_site_comment_withdraws_for_the_named_login(board, settings):
    settings.GITHUB_BOT_LOGIN = "board-poster"
    apply_comment(payloads.comment(2875000007, "board-poster", "【报名】: 30 (for @NKNaN)", "2025-05-20T00:00:00Z"))
    delete_comment({"id": 2875000007})
    assert active(30) == []
    assert Event.objects.filter(kind="withdrawn", task__number=30, actor="NKNaN").exists()


def test_site_account_is_discovered_through_the_token(board, github_settings, fake_github):
    github_settings.GITHUB_BOT_LOGIN = ""
    fake_github.token_login = "board-poster"
    from django.core.cache import cache
    cache.clear()
    apply_comment(payloads.comment(2875000008, "board-poster", "【报名】: 40 (for @BeingGod)", "2025-05-20T00:00:00Z"))
    apply_comment(payloads.comment(2875000009, "board-poster", "【报名】: 41 (for @BeingGod)", "2025-05-20T00:00:00Z"))
    assert active(40) == ["BeingGod"] and active(41) == ["BeingGod"]
    user_requests = fake_github.requests_to("/user")
    assert len(user_requests) == 1  # asked once, then cached
    assert user_requests[0]["headers"]["authorization"] == "Bearer ghs_test_token"


def test_a_comment_read_before_its_transaction_is_applied_against_the_board_as_it_is_then(board):
    """The webhook reads a comment (parse, GitHub lookup) before it takes the write lock; a task locked in
    between is still refused, and a comment read while nothing changed applies as read."""
    c = payloads.comment(2875000020, "BeingGod", "【报名】: 12、13", "2025-05-20T00:00:00Z")
    reading = read_comment(c)
    assert reading.parsed.claim == [12, 13] and not IssueComment.objects.exists()  # reading writes nothing
    board[13].locked_reason = "output dtype类型不同，暂不要报名"
    board[13].save()
    result = apply_comment(c, reading=reading)
    assert result.claimed == [12] and active(13) == []
    assert [e["code"] for e in result.errors] == ["locked"]

    d = payloads.comment(2875000021, "Z-NAVY", "【报名】: 14", "2025-05-20T00:00:00Z")
    assert apply_comment(d, reading=read_comment(d)).claimed == [14]


def test_a_comment_over_the_line_limit_is_rejected_and_recorded(board):
    body = "【报名】: 12\n" * (MAX_MARKER_LINES + 1)
    result = apply_comment(payloads.comment(2875000022, "mallory", body, "2025-05-20T00:00:00Z"))
    assert result.claimed == [] and not Claim.objects.exists()
    assert result.skipped == f"the comment has more than {MAX_MARKER_LINES} claim lines, so none of it was applied"
    assert Event.objects.get(kind="comment_rejected").message == f"comment by @mallory rejected: {result.skipped}"
