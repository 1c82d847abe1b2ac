"""Issue 45 item 6: a GitHub commenter who claims nothing does not become a Contributor — only a claim that is taken
(or a pull request) makes one. Through the real webhook endpoint."""
import pytest

from tracker.models import Claim, Contributor, Event, IssueComment

from . import payloads
from .test_webhook import deliver

pytestmark = pytest.mark.usefixtures("webhook_settings")


def say(client, comment_id, login, body, action="created", when="2025-05-12T03:21:45Z"):
    event = payloads.issue_comment_event(action, payloads.comment(comment_id, login, body, when, updated_at=when))
    answer = deliver(client, "issue_comment", event, delivery=f"c-{comment_id}-{action}-{when}")
    assert answer.status_code == 200, answer.content
    return answer.json()


def logins():
    return sorted(Contributor.objects.values_list("login", flat=True))


@pytest.mark.parametrize("body", ["谢谢，请问这个任务还有人做吗？", "【取消报名】: 12", "【报名】: 160", "【报名】: 7到9",
                                  "【报名】: 999"])
def test_a_comment_that_takes_no_claim_makes_no_contributor(client, board, body):
    say(client, 2874700301, "curious-reader", body)
    assert IssueComment.objects.filter(author="curious-reader").exists()  # read and stored
    assert logins() == [] and not Claim.objects.exists()


def test_a_claim_makes_one_and_its_later_withdrawals_find_it(client, board):
    say(client, 2874700302, "BeingGod", "【报名】: 12")
    assert logins() == ["BeingGod"]
    say(client, 2874700303, "beinggod", "【取消报名】: 12")  # the same person in another case
    assert logins() == ["BeingGod"] and Claim.objects.get().withdrawn_at is not None


def test_deleting_a_comment_that_claimed_nothing_makes_no_contributor(client, board):
    say(client, 2874700304, "passer-by", "+1")
    say(client, 2874700304, "passer-by", "+1", action="deleted", when="2025-05-12T04:00:00Z")
    assert logins() == [] and IssueComment.objects.get(comment_id=2874700304).deleted


def test_a_pull_request_author_is_a_contributor(client, board):
    pull = payloads.pull(73120, "[Accuracy diff No.55] fix gelu", "fixer")
    assert deliver(client, "pull_request", payloads.pull_request_event("opened", pull), delivery="pr-1").status_code == 200
    assert logins() == ["fixer"] and Event.objects.filter(kind="pr_linked").exists()
