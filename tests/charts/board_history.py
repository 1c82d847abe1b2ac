"""A small, known board history for the chart tests, made through the board's real write paths.

Claims and pull requests arrive as signed GitHub webhook deliveries (the services write the claims, the
PR rows and their Events as they would in production); the fix is verified by a real run of a real
config through the worker pool. Only the report history (first/last seen of a failing config, which
the report import reads from files) is written directly.
"""
import hashlib
import json
from datetime import date, datetime, time, timedelta, timezone as dt_timezone
from itertools import count

from django.test import Client, override_settings
from django.utils import timezone

from apitester.pool import TimeBudget
from tests.github import payloads
from tests.factories import make_task
from tests.runner.conftest import PASSING
from tracker.models import FailingConfig, Task
from tracker.services.runs import create_run, execute_run

SECRET = "board-history-secret"
GITHUB = {
    "GITHUB_WEBHOOK_SECRET": SECRET,
    "GITHUB_TRACKING_ISSUE": f"{payloads.REPO}#{payloads.ISSUE}",
    "GITHUB_PR_REPOS": [payloads.REPO],
    "GITHUB_PR_TITLE_PREFIX": "Accuracy diff",
    "GITHUB_BOT_ACCOUNTS": ["paddle-bot"],
}
# The history spans the last three days, so that the run verifying the fix (now) falls on its last day.
DAY0 = datetime.combine(timezone.now().date() - timedelta(days=2), time(), tzinfo=dt_timezone.utc)
DAYS = [(DAY0 + timedelta(days=i)).date().isoformat() for i in range(3)]
RUN_OPTIONS = {"time_budget": TimeBudget(base=20.0, per_million_elements=5.0)}

_ids = count(1)


def at(day: int, hour: int = 0) -> str:
    """GitHub's timestamp for `hour` o'clock of day `day` of the history."""
    return (DAY0 + timedelta(days=day, hours=hour)).strftime("%Y-%m-%dT%H:%M:%SZ")


def deliver(event: str, payload: dict) -> dict:
    """POST one signed delivery to /github/webhook, as GitHub sends it; returns the board's answer."""
    body = json.dumps(payload, ensure_ascii=False).encode()
    with override_settings(**GITHUB):
        response = Client().post(
            "/github/webhook", data=body, content_type="application/json",
            HTTP_X_GITHUB_EVENT=event, HTTP_X_GITHUB_DELIVERY=f"board-history-{next(_ids)}",
            HTTP_X_HUB_SIGNATURE_256=payloads.signature(body, SECRET))
    assert response.status_code == 200, response.content
    return response.json()


def comment(login: str, body: str, when: str) -> dict:
    return deliver("issue_comment", payloads.issue_comment_event(
        "created", payloads.comment(2_874_700_000 + next(_ids), login, body, when)))


def pull_request(action: str, pull: dict) -> dict:
    return deliver("pull_request", payloads.pull_request_event(action, pull))


def report_config(task: Task, config: str, first: int, last: int) -> FailingConfig:
    return FailingConfig.objects.create(
        task=task, config=config, config_hash=hashlib.sha256(config.encode()).hexdigest(),
        origin_file="reports/ci_ce_cpu/error_config.txt",
        first_seen=date.fromisoformat(DAYS[first]), last_seen=date.fromisoformat(DAYS[last]))


def verify(task: Task) -> None:
    """A real cpu run of the task's configs (real paddle and torch in a pool worker)."""
    execute_run(create_run("tasks", tasks=[task.number], lane="cpu").pk, workers=1, options=RUN_OPTIONS)


def seed_history(first_number: int = 1) -> tuple[Task, Task, Task]:
    """Three unlocked CPU tasks numbered from `first_number`: `done` is claimed, PR'd, merged and verified;
    `pr_open` claimed and PR'd; `fresh` claimed on the last day. alice works on the first two, bob on
    the third. Returns (done, pr_open, fresh)."""
    n = first_number
    done = make_task(n, "paddle.logit")
    pr_open = make_task(n + 1, "paddle.clip")
    fresh = make_task(n + 2, "paddle.maximum")
    # The report history: `done`'s config listed on days 0–1, `pr_open`'s on days 1–2. `done`'s is a
    # config the installed Paddle gets right, so the run below verifies its fix.
    report_config(done, PASSING[0], 0, 1)
    report_config(pr_open, PASSING[1], 1, 2)

    comment("alice", f"【报名】: {n}", at(0, 9))
    comment("alice", f"【报名】: {n + 1}", at(1, 9))
    pull_request("opened", payloads.pull(73_001, f"[Accuracy diff No.{n}] logit", "alice",
                                         created_at=at(1, 10), updated_at=at(1, 10)))
    comment("bob", f"【报名】: {n + 2}", at(2, 1))
    pull_request("opened", payloads.pull(73_002, f"[Accuracy diff No.{n + 1}] clip", "alice",
                                         created_at=at(2, 3), updated_at=at(2, 3)))
    pull_request("closed", payloads.pull(73_001, f"[Accuracy diff No.{n}] logit", "alice", state="closed",
                                         merged=True, created_at=at(1, 10), updated_at=at(2, 4),
                                         closed_at=at(2, 4), merged_at=at(2, 4)))
    verify(done)
    return done, pr_open, fresh
