"""The REST poller against a local server that plays GitHub: pagination, ETag 304s, rate limits."""
import io
import time

import pytest
from django.core.management import CommandError, call_command

from tracker.github.client import GitHubClient, GitHubError, RateLimited
from tracker.services.github_sync import sync_github
from tracker.models import Claim, IssueComment, PullRequest, SyncCursor

from . import payloads

REPOS = ["PaddlePaddle/Paddle", "PFCCLab/PaddleAPITest"]


def seed_comments(fake):
    fake.add_comment(payloads.comment(2874800001, "BeingGod", "【报名】: 1-5、11-17、36-37、40-41、47-50、52-53、57、69",
                                      "2025-05-12T03:21:45Z"))
    fake.add_comment(payloads.comment(2874800002, "Z-NAVY", "【报名】: 36-37、40-42、48-49、52-53、55-56、65-66",
                                      "2025-05-12T06:02:11Z"))
    fake.add_comment(payloads.comment(2874800003, "lshpku", "@BeingGod 收到，任务已分配", "2025-05-12T07:00:00Z"))
    fake.add_comment(payloads.comment(2874800004, "ccsuzzh", "【报名】: 73", "2025-05-13T01:15:00Z"))
    fake.add_comment(payloads.comment(2874800005, "ooooo-create", "【报名】: 55-56、76-77、21、15",
                                      "2025-05-13T09:40:30Z"))


def active(number):
    return sorted(c.contributor.login for c in Claim.objects.filter(task__number=number, withdrawn_at__isnull=True))


def run_sync(fake, pr_repos=REPOS, **kw):
    client = GitHubClient(fake.url, "ghs_test_token", max_wait=5)
    return client, sync_github(client, repo="PaddlePaddle/Paddle", issue=72667, pr_repos=pr_repos,
                               prefix="Accuracy diff", **kw)


def test_comments_are_paginated_and_applied(board, fake_github):
    seed_comments(fake_github)
    client, report = run_sync(fake_github, pulls=False)
    comment_requests = fake_github.requests_to("/issues/72667/comments")
    assert len(comment_requests) == 3  # 5 comments, 2 per page, pages found through Link rel="next"
    assert [r["query"].get("page", ["1"])[0] for r in comment_requests] == ["1", "2", "3"]
    assert comment_requests[0]["headers"]["authorization"] == "Bearer ghs_test_token"
    assert report.comments_seen == 5
    assert active(36) == ["BeingGod", "Z-NAVY"]
    assert active(55) == ["Z-NAVY", "ooooo-create"]
    assert active(73) == ["ccsuzzh"]
    assert Claim.objects.filter(withdrawn_at__isnull=True).count() == 24 + 13 + 1 + 6
    cursor = SyncCursor.objects.get(key="comments:PaddlePaddle/Paddle#72667")
    assert cursor.since.isoformat() == "2025-05-13T09:40:30+00:00" and cursor.etag.startswith('W/"')


def test_unchanged_resource_costs_one_304(board, fake_github):
    seed_comments(fake_github)
    run_sync(fake_github, pulls=False)
    run_sync(fake_github, pulls=False)  # since moved: first page re-read, ETag stored for this URL
    before = len(fake_github.requests)
    client, report = run_sync(fake_github, pulls=False)
    new_requests = fake_github.requests[before:]
    assert len(new_requests) == 1
    assert new_requests[0]["headers"]["if-none-match"].startswith('W/"')
    assert new_requests[0]["query"]["since"] == ["2025-05-13T09:40:30Z"]
    assert report.not_modified == ["comments:PaddlePaddle/Paddle#72667"]
    assert client.log.not_modified == 1


def test_new_and_edited_comments_since_last_poll(board, fake_github):
    seed_comments(fake_github)
    run_sync(fake_github, pulls=False)
    fake_github.add_comment(payloads.comment(2874800006, "NKNaN", "【报名】: 25、146-147", "2025-05-20T02:00:00Z"))
    for c in fake_github.comments[("PaddlePaddle/Paddle", 72667)]:
        if c["id"] == 2874800004:
            c["body"], c["updated_at"] = "【报名】: 73、20", "2025-05-21T00:00:00Z"
    client, report = run_sync(fake_github, pulls=False)
    last = fake_github.requests_to("/issues/72667/comments")[-1]
    assert last["query"]["since"] == ["2025-05-13T09:40:30Z"]
    assert report.comments_changed == 2
    assert active(146) == ["NKNaN"] and active(20) == ["ccsuzzh"]


def test_full_sync_notices_deleted_comments(board, fake_github):
    seed_comments(fake_github)
    run_sync(fake_github, pulls=False)
    fake_github.remove_comment(2874800004)
    run_sync(fake_github, pulls=False)  # an incremental poll cannot see deletions
    assert active(73) == ["ccsuzzh"]
    client, report = run_sync(fake_github, pulls=False, full=True)
    assert report.comments_deleted == 1
    assert active(73) == []
    assert IssueComment.objects.get(comment_id=2874800004).deleted


def test_rate_limit_with_retry_after_is_waited_out(board, fake_github):
    seed_comments(fake_github)
    fake_github.rate_limit(403, Retry_After=1, X_RateLimit_Remaining=0)
    started = time.monotonic()
    client, report = run_sync(fake_github, pulls=False)
    assert time.monotonic() - started >= 1.0
    assert client.log.rate_limit_waits == [1.0]
    assert report.comments_seen == 5


def test_rate_limit_with_reset_time_on_429(board, fake_github):
    seed_comments(fake_github)
    fake_github.rate_limit(429, X_RateLimit_Remaining=0, X_RateLimit_Reset=int(time.time()) + 1)
    client, report = run_sync(fake_github, pulls=False)
    assert len(client.log.rate_limit_waits) == 1 and client.log.rate_limit_waits[0] <= 1.0
    assert report.comments_seen == 5


def test_long_rate_limit_is_reported_not_waited(board, fake_github):
    seed_comments(fake_github)
    fake_github.rate_limit(403, Retry_After=3600)
    client = GitHubClient(fake_github.url, "t", max_wait=2)
    started = time.monotonic()
    with pytest.raises(RateLimited) as raised:
        sync_github(client, repo="PaddlePaddle/Paddle", issue=72667, pr_repos=REPOS, prefix="Accuracy diff")
    assert time.monotonic() - started < 10  # reported at once, not slept through
    assert raised.value.wait_seconds == 3600 and raised.value.status == 403
    assert not Claim.objects.exists()
    assert SyncCursor.objects.get(key="comments:PaddlePaddle/Paddle#72667").since is None


def test_plain_403_is_an_error_not_a_wait(fake_github):
    fake_github.rate_limits.append({"status": 403, "headers": {}, "message": "Resource not accessible by integration"})
    with pytest.raises(GitHubError) as raised:
        GitHubClient(fake_github.url, "t").get("repos/PaddlePaddle/Paddle/issues/72667/comments")
    assert raised.value.status == 403 and not isinstance(raised.value, RateLimited)


def test_pull_requests_found_by_title_in_both_repos(board, fake_github):
    fake_github.pulls += [
        payloads.search_item(72992, "[Accuracy diff No.9-10、20] broadcast_to / expand", "ooooo-create",
                             state="closed", merged_at="2025-05-28T03:00:00Z", closed_at="2025-05-28T03:00:00Z",
                             updated_at="2025-05-28T03:00:00Z"),
        payloads.search_item(73492, "[Accuracy diff No.11、144] clip", "co63oc", updated_at="2025-05-29T00:00:00Z"),
        payloads.search_item(73999, "[Hackathon 8th No.11] other board", "someone", updated_at="2025-05-29T00:00:00Z"),
        payloads.search_item(280, "[Accuracy diff No.2-5, 14] all / any", "co63oc", repo="PFCCLab/PaddleAPITest",
                             state="closed", closed_at="2025-05-30T00:00:00Z", updated_at="2025-05-30T00:00:00Z"),
    ]
    client, report = run_sync(fake_github, comments=False)
    searches = fake_github.requests_to("/search/issues")
    assert [r["query"]["q"][0] for r in searches] == ['repo:PaddlePaddle/Paddle is:pr in:title "Accuracy diff"',
                                                      'repo:PFCCLab/PaddleAPITest is:pr in:title "Accuracy diff"']
    assert {(p.repo, p.number, p.state) for p in PullRequest.objects.all()} == {
        ("PaddlePaddle/Paddle", 72992, "merged"), ("PaddlePaddle/Paddle", 73492, "open"),
        ("PFCCLab/PaddleAPITest", 280, "closed")}
    assert Claim.objects.get(task__number=20).status == "完成任务"
    assert Claim.objects.get(task__number=144).status == "提交PR"
    assert Claim.objects.get(task__number=14).status == "报名"  # closed without merge
    # the next poll asks only for what changed since, and the same answer is a 304
    run_sync(fake_github, comments=False)
    client, report = run_sync(fake_github, comments=False)
    paddle_search, apitest_search = fake_github.requests_to("/search/issues")[-2:]
    assert paddle_search["query"]["q"] == [
        'repo:PaddlePaddle/Paddle is:pr in:title "Accuracy diff" updated:>=2025-05-28T23:59:00Z']
    assert apitest_search["query"]["q"] == [
        'repo:PFCCLab/PaddleAPITest is:pr in:title "Accuracy diff" updated:>=2025-05-29T23:59:00Z']
    assert paddle_search["headers"]["if-none-match"].startswith('W/"')
    assert len(report.not_modified) == 2


def test_pull_request_search_is_paged_like_the_comments(board, fake_github):
    """Both resources go through one pager: every search page is read and the cursor moves past them all."""
    fake_github.pulls += [
        payloads.search_item(73000 + n, f"[Accuracy diff No.{n}] fix", "co63oc", updated_at=f"2025-06-0{n}T00:00:00Z")
        for n in range(1, 6)
    ]
    client, report = run_sync(fake_github, comments=False, pr_repos=["PaddlePaddle/Paddle"])
    searches = fake_github.requests_to("/search/issues")
    assert [r["query"].get("page", ["1"])[0] for r in searches] == ["1", "2", "3"]  # 5 PRs, 2 per page
    assert report.prs_seen == 5 and report.prs_changed == 5
    assert sorted(PullRequest.objects.values_list("number", flat=True)) == [73001, 73002, 73003, 73004, 73005]
    cursor = SyncCursor.objects.get(key='pulls:PaddlePaddle/Paddle:Accuracy diff')
    assert cursor.since.isoformat() == "2025-06-05T00:00:00+00:00"  # the newest updated_at, on the last page
    assert cursor.etag.startswith('W/"')


def test_sync_github_command(board, fake_github, github_settings):
    seed_comments(fake_github)
    fake_github.pulls.append(payloads.search_item(72965, "[Accuracy diff No.38-39] nextafter", "ooooo-create",
                                                  updated_at="2025-05-22T00:00:00Z"))
    out = io.StringIO()
    call_command("sync_github", "--repo", "PaddlePaddle/Paddle", "--issue", "72667", stdout=out)
    text = out.getvalue()
    assert "comments: 5 read" in text and "pull requests: 1 read" in text
    assert Claim.objects.get(task__number=38).status == "提交PR"


def test_sync_github_command_reports_rate_limit(board, fake_github, github_settings):
    fake_github.rate_limit(403, Retry_After=7200)
    with pytest.raises(CommandError, match="rate limited"):
        call_command("sync_github", "--max-wait", "1", stdout=io.StringIO())


def test_secondary_rate_limit_without_headers_is_a_rate_limit(fake_github):
    fake_github.rate_limit(403)  # body: "API rate limit exceeded …", no Retry-After
    with pytest.raises(RateLimited) as raised:
        GitHubClient(fake_github.url, "t", max_wait=5).get("repos/PaddlePaddle/Paddle/issues/72667/comments")
    assert raised.value.wait_seconds == 60.0


def test_scheduled_poll_uses_the_settings(board, fake_github, github_settings):
    from tracker.tasks import poll_github_task

    seed_comments(fake_github)
    lines = poll_github_task()
    assert lines[0].startswith("comments: 5 read")
    assert fake_github.requests_to("/repos/PaddlePaddle/Paddle/issues/72667/comments")
    assert active(73) == ["ccsuzzh"]


def test_bad_comments_are_recorded_and_skipped_and_the_cursor_moves_past_them(board, fake_github, settings):
    from tracker.models import Event

    settings.CLAIM_MAX_TASKS = 80
    fake_github.add_comment(payloads.comment(2874900001, "ccsuzzh", "【报名】: 73", "2025-05-13T01:00:00Z"))
    # int() of this would raise ValueError (more than 4,300 digits) and used to stop the poller for good.
    fake_github.add_comment(payloads.comment(2874900002, "mallory", "【报名】: " + "9" * 5000, "2025-05-13T02:00:00Z"))
    fake_github.add_comment(payloads.comment(2874900003, "mallory", "【报名】: 1-50、51-100、101-150、151-183",
                                             "2025-05-13T03:00:00Z"))
    malformed = payloads.comment(2874900004, "mallory", "【报名】: 5", "2025-05-13T04:00:00Z")
    malformed["body"] = ["not", "a", "string"]  # a payload GitHub would never send
    fake_github.add_comment(malformed)
    fake_github.add_comment(payloads.comment(2874900005, "NKNaN", "【报名】: 25", "2025-05-13T05:00:00Z"))

    client, report = run_sync(fake_github, pulls=False)
    assert report.comments_seen == 5
    assert active(73) == ["ccsuzzh"] and active(25) == ["NKNaN"]
    assert not Claim.objects.filter(contributor__login="mallory").exists()
    assert len(report.errors) == 1 and report.errors[0].startswith("comment 2874900004 skipped: TypeError")
    stored = IssueComment.objects.get(comment_id=2874900002)
    assert stored.errors[0]["code"] == "number_too_long" and stored.claimed == []
    kinds = list(Event.objects.filter(kind__in=["comment_rejected", "comment_errors"]).order_by("id")
                 .values_list("kind", "source_ref"))
    assert kinds == [
        ("comment_errors", "https://github.com/PaddlePaddle/Paddle/issues/72667#issuecomment-2874900002"),
        ("comment_rejected", "https://github.com/PaddlePaddle/Paddle/issues/72667#issuecomment-2874900003"),
        ("comment_rejected", "https://github.com/PaddlePaddle/Paddle/issues/72667#issuecomment-2874900004"),
    ]
    cursor = SyncCursor.objects.get(key="comments:PaddlePaddle/Paddle#72667")
    assert cursor.since.isoformat() == "2025-05-13T05:00:00+00:00"  # past every bad comment
    # The next poll goes on from there: a new claim is applied.
    fake_github.add_comment(payloads.comment(2874900006, "Z-NAVY", "【报名】: 36", "2025-05-14T00:00:00Z"))
    run_sync(fake_github, pulls=False)
    assert active(36) == ["Z-NAVY"]
