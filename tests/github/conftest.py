import pytest

from tracker.models import Task, TaskStatus

from .fake_github import FakeGitHub

LOCK_REASON = "output dtype类型不同，暂不要报名"


@pytest.fixture
def board(db):
    """183 tasks shaped like the tracking issue's: 155–180 locked, the rest claimable."""
    tasks = []
    for number in range(1, 184):
        locked = 155 <= number <= 180
        tasks.append(Task(number=number, api=f"paddle.api_{number}", kernel="GPU" if number % 2 == 0 else "CPU",
                          locked_reason=LOCK_REASON if locked else "",
                          status=TaskStatus.LOCKED if locked else TaskStatus.OPEN))
    Task.objects.bulk_create(tasks)
    return {t.number: t for t in Task.objects.all()}


@pytest.fixture
def fake_github():
    server = FakeGitHub().start()
    yield server
    server.stop()


@pytest.fixture
def github_settings(settings, fake_github):
    settings.GITHUB_API_URL = fake_github.url
    settings.GITHUB_TOKEN = "ghs_test_token"
    settings.GITHUB_TRACKING_ISSUE = "PaddlePaddle/Paddle#72667"
    settings.GITHUB_PR_REPOS = ["PaddlePaddle/Paddle", "PFCCLab/PaddleAPITest"]
    settings.GITHUB_PR_TITLE_PREFIX = "Accuracy diff"
    settings.GITHUB_BOT_ACCOUNTS = ["paddle-bot", "paddle-ci-bot", "github-actions[bot]"]
    return settings
