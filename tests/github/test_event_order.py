"""Events that tie in time, applied by meaning, and a retitled PR letting go of the task it no longer names.

GitHub's updated_at has one-second steps: a comment edited in the second it was created, or a PR closed and
reopened in one second, sends deliveries with the same time, in any order. Every delivery here is signed and
POSTed to the real webhook endpoint; GitHub's REST API is the fake GitHub over real HTTP on 127.0.0.1."""
import time

import pytest

from tracker.models import Claim, ClaimStatus, Event, PullRequest, Task, TaskStatus

from . import payloads
from .payloads import WEBHOOK_SECRET as SECRET
from .test_webhook import deliver

T0, T1 = "2025-05-20T08:00:00Z", "2025-05-21T09:30:00Z"


@pytest.fixture
def hooked(github_settings, fake_github):
    """The webhook's secret, and GitHub (for re-reads) at the fake, answering within 0.3 s or not at all."""
    github_settings.GITHUB_WEBHOOK_SECRET = SECRET
    github_settings.GITHUB_BOT_LOGIN = "paddle-bot"
    github_settings.GITHUB_API_TIMEOUT = 0.3
    fake_github.fault_seconds = 2.0
    return fake_github


class Deliveries:
    """Signed deliveries with fresh ids."""

    def __init__(self, client):
        self.client, self.count = client, 0

    def __call__(self, event: str, payload: dict) -> dict:
        self.count += 1
        response = deliver(self.client, event, payload, delivery=f"order-{self.count}")
        assert response.status_code == 200, response.content
        return response.json()

    def pull(self, action: str, number: int, title: str, login: str = "co63oc", **fields) -> dict:
        return self("pull_request", payloads.pull_request_event(action, payloads.pull(number, title, login, **fields)))

    def comment(self, action: str, comment_id: int, body: str, login: str = "co63oc", **times) -> dict:
        the_comment = payloads.comment(comment_id, login, body, **times)
        return self("issue_comment", payloads.issue_comment_event(action, the_comment))


@pytest.fixture
def send(client, board, hooked):
    return Deliveries(client)


def active(number: int) -> dict[str, str]:
    return dict(Claim.objects.filter(task__number=number, withdrawn_at__isnull=True)
                .values_list("contributor__login", "status"))


def status_of(number: int) -> str:
    return Task.objects.get(number=number).status


# --- a comment edited in the second it was created ---------------------------------------------

@pytest.mark.parametrize("order", [("edited", "created"), ("created", "edited")])
def test_an_edit_in_the_creation_s_second_wins_in_either_order(send, order):
    bodies = {"created": "【报名】: 12", "edited": "【报名】: 13"}
    answers = {action: send.comment(action, 2877000001, bodies[action], created_at=T0, updated_at=T0)
               for action in order}
    assert active(12) == {} and active(13) == {"co63oc": ClaimStatus.CLAIMED}
    assert status_of(12) == TaskStatus.OPEN and status_of(13) == TaskStatus.CLAIMED
    if order[0] == "edited":
        assert "creation, after an edit" in answers["created"]["skipped"]
        assert not Event.objects.filter(task__number=12).exists()  # 12 was never claimed, even for a moment


# --- a PR closed and reopened in one second ----------------------------------------------------

def opened_then_reopened_and_closed_in_one_second(send, number=72990):
    """Opened at T0; at T1 closed and reopened (GitHub shows it open), the reopened delivery arriving first."""
    title = "[Accuracy diff No.20] fix"
    send.pull("opened", number, title, created_at=T0, updated_at=T0)
    send.pull("reopened", number, title, created_at=T0, updated_at=T1)
    return send.pull("closed", number, title, state="closed", created_at=T0, updated_at=T1, closed_at=T1)


def test_a_tie_is_settled_by_github_s_pr_as_it_is_now(send, hooked):
    hooked.set_pull_request(payloads.pull(72990, "[Accuracy diff No.20] fix", "co63oc", created_at=T0, updated_at=T1))
    answer = opened_then_reopened_and_closed_in_one_second(send)
    assert [r["path"] for r in hooked.requests_to("/pulls/")] == ["/repos/PaddlePaddle/Paddle/pulls/72990"]
    assert answer["skipped"] == ""
    assert PullRequest.objects.get(number=72990).state == PullRequest.State.OPEN
    assert active(20) == {"co63oc": ClaimStatus.PR_SUBMITTED} and status_of(20) == TaskStatus.PR_SUBMITTED


def test_github_s_answer_wins_the_tie_even_against_the_tie_rule(send, hooked):
    """Reopened then closed for real (GitHub shows it closed), delivered in that order: the re-read says closed."""
    title = "[Accuracy diff No.20] fix"
    hooked.set_pull_request(payloads.pull(72991, title, "co63oc", state="closed", created_at=T0, updated_at=T1,
                                          closed_at=T1))
    send.pull("opened", 72991, title, created_at=T0, updated_at=T0)
    send.pull("reopened", 72991, title, created_at=T0, updated_at=T1)
    send.pull("closed", 72991, title, state="closed", created_at=T0, updated_at=T1, closed_at=T1)
    assert PullRequest.objects.get(number=72991).state == PullRequest.State.CLOSED
    assert active(20) == {"co63oc": ClaimStatus.CLAIMED} and status_of(20) == TaskStatus.CLAIMED


@pytest.mark.parametrize("fault", ["hang", "reset", "not-json", "another-pr"])
def test_without_github_the_tie_rule_keeps_open_over_closed(send, hooked, fault):
    if fault == "another-pr":  # GitHub answers, but not with this pull request
        hooked.pull_requests[(payloads.REPO, 72990)] = payloads.pull(1, "[Accuracy diff No.20] fix", "x", state="closed")
    else:
        hooked.faults["/repos/PaddlePaddle/Paddle/pulls/72990"] = fault
    started = time.monotonic()
    answer = opened_then_reopened_and_closed_in_one_second(send)
    assert time.monotonic() - started < 3
    assert hooked.requests_to("/pulls/72990")  # GitHub was asked
    assert "open outranks closed" in answer["skipped"]
    assert PullRequest.objects.get(number=72990).state == PullRequest.State.OPEN
    assert active(20) == {"co63oc": ClaimStatus.PR_SUBMITTED}


def test_without_github_a_tying_reopen_after_close_is_applied(send, hooked):
    hooked.faults["/repos/PaddlePaddle/Paddle/pulls/72992"] = "hang"
    title = "[Accuracy diff No.20] fix"
    send.pull("opened", 72992, title, created_at=T0, updated_at=T0)
    send.pull("closed", 72992, title, state="closed", created_at=T0, updated_at=T1, closed_at=T1)
    assert active(20) == {"co63oc": ClaimStatus.CLAIMED}
    send.pull("reopened", 72992, title, created_at=T0, updated_at=T1)
    assert PullRequest.objects.get(number=72992).state == PullRequest.State.OPEN
    assert active(20) == {"co63oc": ClaimStatus.PR_SUBMITTED}


def test_no_tie_asks_github_nothing(send, hooked):
    title = "[Accuracy diff No.20] fix"
    send.pull("opened", 72993, title, created_at=T0, updated_at=T0)
    send.pull("closed", 72993, title, state="closed", created_at=T0, updated_at=T1, closed_at=T1)
    send.pull("closed", 72993, title, state="closed", created_at=T0, updated_at=T1, closed_at=T1)  # same fact
    assert hooked.requests_to("/pulls/") == []
    assert PullRequest.objects.get(number=72993).state == PullRequest.State.CLOSED


# --- a retitled PR --------------------------------------------------------------------------

def retitled(send, number=72994, **first):
    send.pull("opened", number, "[Accuracy diff No.101] fix", created_at=T0, updated_at=T0, **first)
    return send.pull("edited", number, "[Accuracy diff No.102] fix", created_at=T0, updated_at=T1)


def test_a_retitled_pr_lets_go_of_a_task_the_author_claimed_in_a_comment(send):
    send.comment("created", 2877000010, "【报名】: 101", created_at=T0)
    assert retitled(send)["changes"] >= 2
    pr = PullRequest.objects.get(number=72994)
    assert list(pr.tasks.values_list("number", flat=True)) == [102]
    # 101: the comment's claim stays, back at 报名; the task is claimed again, not 提交PR.
    assert active(101) == {"co63oc": ClaimStatus.CLAIMED} and status_of(101) == TaskStatus.CLAIMED
    assert active(102) == {"co63oc": ClaimStatus.PR_SUBMITTED} and status_of(102) == TaskStatus.PR_SUBMITTED
    unlinked = Event.objects.get(kind="pr_unlinked", task__number=101)
    assert "no longer names No.101" in unlinked.message and unlinked.source_ref.endswith("/pull/72994")
    back = Event.objects.filter(kind="claim_status", task__number=101).latest("id")
    assert (back.data["from"], back.data["to"]) == (ClaimStatus.PR_SUBMITTED, ClaimStatus.CLAIMED)


def test_a_retitled_pr_withdraws_the_claim_it_made_itself(send):
    retitled(send)
    assert active(101) == {} and status_of(101) == TaskStatus.OPEN
    assert Event.objects.filter(kind="withdrawn", task__number=101, source="pr").exists()
    assert active(102) == {"co63oc": ClaimStatus.PR_SUBMITTED}
    # Titled back: the PR links and claims 101 again.
    send.pull("edited", 72994, "[Accuracy diff No.101] fix", created_at=T0, updated_at="2025-05-22T00:00:00Z")
    assert active(101) == {"co63oc": ClaimStatus.PR_SUBMITTED} and status_of(101) == TaskStatus.PR_SUBMITTED
    assert active(102) == {} and status_of(102) == TaskStatus.OPEN


def test_a_retitled_pr_leaves_a_task_another_open_pr_of_the_author_backs(send):
    send.pull("opened", 72995, "[Accuracy diff No.101] other part", created_at=T0, updated_at=T0)
    retitled(send)
    assert active(101) == {"co63oc": ClaimStatus.PR_SUBMITTED} and status_of(101) == TaskStatus.PR_SUBMITTED
    kept = Event.objects.get(kind="claim_kept", task__number=101)
    assert "PaddlePaddle/Paddle#72995" in kept.message


def test_a_retitled_merged_pr_takes_back_the_completion(send):
    send.comment("created", 2877000011, "【报名】: 101", created_at=T0)
    send.pull("closed", 72996, "[Accuracy diff No.101] fix", state="closed", merged=True, created_at=T0,
              updated_at=T0, closed_at=T0, merged_at=T0)
    assert status_of(101) == TaskStatus.COMPLETED
    send.pull("edited", 72996, "[Accuracy diff No.102] fix", state="closed", merged=True, created_at=T0,
              updated_at=T1, closed_at=T0, merged_at=T0)
    assert active(101) == {"co63oc": ClaimStatus.CLAIMED} and status_of(101) == TaskStatus.CLAIMED
    assert status_of(102) == TaskStatus.COMPLETED
