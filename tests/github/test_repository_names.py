"""Issue 45 item 6: GitHub's repository names ignore case — a pull request named `paddlepaddle/paddle#N` (a typed
board line, a configured name) is the one stored as `PaddlePaddle/Paddle#N`, and the row takes GitHub's spelling.
Through the real board import, webhook endpoint and poller path."""
import pytest

from tracker.models import PullRequest
from tracker.services.pull_requests import apply_pull_request, find_pull_request, normalize_pull_request

from . import payloads
from .test_webhook import deliver

pytestmark = pytest.mark.usefixtures("webhook_settings")


def test_a_case_variant_of_a_stored_repository_is_the_same_pull_request(client, board):
    PullRequest.objects.create(repo="paddlepaddle/paddle", number=73130)  # typed on the tracking issue's board
    pull = payloads.pull(73130, "[Accuracy diff No.55] fix gelu", "fixer")
    assert deliver(client, "pull_request", payloads.pull_request_event("opened", pull), delivery="r-1").status_code == 200
    stored = PullRequest.objects.get()
    assert stored.repo == "PaddlePaddle/Paddle" and stored.title == "[Accuracy diff No.55] fix gelu"
    assert find_pull_request("PADDLEPADDLE/PADDLE", 73130) == stored


def test_a_configured_name_in_another_case_stores_githubs_spelling(board):
    item = payloads.search_item(73131, "[Accuracy diff No.57] fix", "fixer")  # GitHub spells it PaddlePaddle/Paddle
    assert normalize_pull_request(item, "paddlepaddle/PADDLE")["repo"] == "PaddlePaddle/Paddle"
    apply_pull_request(item, repo="paddlepaddle/PADDLE", current=True)
    apply_pull_request(item, repo="PaddlePaddle/paddle", current=True)
    assert list(PullRequest.objects.values_list("repo", "number")) == [("PaddlePaddle/Paddle", 73131)]
    # another repository than the payload's keeps the caller's word (never silently merged into it)
    assert normalize_pull_request(item, "PFCCLab/PaddleAPITest")["repo"] == "PFCCLab/PaddleAPITest"
