"""One delivery must not stall the others: a real gunicorn server (scripts/serve.sh) taking signed deliveries.

- A comment of 65,536 characters made to make a backtracking parser work quadratically (spaces then `x`;
  it took 11 s at 16,000 spaces, holding SQLite's write lock) is answered at once, and a normal claim sent
  at the same time is applied.
- A `(for @x)` comment makes the board ask GitHub who the site's account is (GET /user). With GitHub
  answering after several seconds, a normal delivery sent meanwhile does not wait for it: the lookup runs
  before the delivery's write transaction, not inside it.
- JSON nested 100,000 deep is a 400, not a 500.
"""
from __future__ import annotations

import http.client
import json
import threading
import time

import pytest

from tests.github import payloads
from tests.github.fake_github import FakeGitHub

from . import concurrency as cc
from .servers import Served

SITE_LOGIN = "board-site-bot"
GITHUB_DELAY = 6.0  # seconds the slow GitHub stand-in takes to answer GET /user


@pytest.fixture(scope="module")
def github():
    fake = FakeGitHub(token_login=SITE_LOGIN).start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory, github):
    # No GITHUB_BOT_LOGIN: the site's account is asked from GitHub (GET /user) when a comment names someone.
    env = {"GITHUB_WEBHOOK_SECRET": cc.WEBHOOK_SECRET, "GITHUB_API_URL": github.url, "GITHUB_TOKEN": "ghs_test",
           "GITHUB_TRACKING_ISSUE": f"{payloads.REPO}#{payloads.ISSUE}", "GITHUB_BOT_ACCOUNTS": "paddle-bot",
           "GITHUB_PR_REPOS": payloads.REPO}
    server = Served(tmp_path_factory.mktemp("stalls"), workers=2, threads=4, extra_env=env)
    try:
        server.wait_ready()
        cc.shell(server.env, cc.SEED % {"tasks": cc.TASKS, "site_users": 0})
        yield server
    finally:
        server.stop()


def deliver(served, delivery_id: str, body: bytes, timeout: float = 30) -> tuple[int, dict, float]:
    """POST one signed issue_comment delivery; (status, JSON answer, seconds)."""
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=timeout)
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "issue_comment",
               "X-GitHub-Delivery": delivery_id, "X-Forwarded-Proto": "https",
               "X-Hub-Signature-256": payloads.signature(body, cc.WEBHOOK_SECRET)}
    started = time.perf_counter()
    try:
        connection.request("POST", "/github/webhook", body=body, headers=headers)
        response = connection.getresponse()
        raw = response.read()
    finally:
        connection.close()
    seconds = time.perf_counter() - started
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = {"raw": raw[:300].decode("utf-8", "replace")}
    return response.status, answer, seconds


def comment_body(comment_id: int, login: str, text: str) -> bytes:
    the_comment = payloads.comment(comment_id, login, text, "2025-05-12T03:21:45Z")
    return json.dumps(payloads.issue_comment_event("created", the_comment), ensure_ascii=False).encode()


class InBackground(threading.Thread):
    def __init__(self, function, *args):
        super().__init__(daemon=True)
        self.function, self.args, self.result, self.error = function, args, None, None
        self.start()

    def run(self):
        try:
            self.result = self.function(*self.args)
        except Exception as error:  # reported by the test
            self.error = error

    def outcome(self, timeout: float):
        self.join(timeout)
        assert not self.is_alive(), f"no answer within {timeout} s"
        assert self.error is None, f"the delivery failed: {self.error!r}"
        return self.result


def claims(served) -> list:
    return json.loads(cc.shell(served.env, cc.DUMP).strip().splitlines()[-1])["claims"]


def test_a_comment_of_65536_spaces_is_answered_at_once_and_a_claim_sent_meanwhile_applies(served):
    hostile = comment_body(4_000_000_001, "attacker", " " * 65_535 + "x")
    assert len(json.loads(hostile)["comment"]["body"]) == 65_536  # GitHub's limit for a comment
    attack = InBackground(deliver, served, "stall-spaces", hostile)
    status, answer, seconds = deliver(served, "stall-normal", comment_body(4_000_000_002, "BeingGod", "【报名】: 12"))
    assert status == 200 and answer["claimed"] == [12], answer
    assert seconds < 2, f"a normal claim took {seconds:.1f} s next to the hostile comment"

    status, answer, seconds = attack.outcome(60)
    assert status == 200 and answer["claimed"] == [], answer
    assert seconds < 2, f"65,536 spaces took {seconds:.1f} s"
    assert [12, "BeingGod", "comment", True] in claims(served)


def test_a_slow_github_lookup_does_not_hold_up_other_deliveries(served, github):
    github.delays["/user"] = GITHUB_DELAY
    try:
        # The site's account posts for @someone: the board asks GitHub who its account is.
        named = InBackground(deliver, served, "slow-for", comment_body(4_000_000_011, SITE_LOGIN,
                                                                        "【报名】: 21 (for @someone)"))
        deadline = time.monotonic() + 30
        while not github.requests_to("/user") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert github.requests_to("/user"), "the board never asked GitHub for its account"
        # GitHub is now taking its time; another delivery comes in.
        status, answer, seconds = deliver(served, "fast-normal", comment_body(4_000_000_012, "co63oc", "【报名】: 22"))
        assert status == 200 and answer["claimed"] == [22], answer
        assert seconds < GITHUB_DELAY / 2, f"a normal delivery waited {seconds:.1f} s for the GitHub lookup"

        status, answer, seconds = named.outcome(60)
        assert status == 200 and answer["claimed"] == [21], answer
        assert seconds >= GITHUB_DELAY  # it did wait for GitHub
    finally:
        github.delays.clear()
    state = claims(served)
    assert [21, "someone", "comment", True] in state and [22, "co63oc", "comment", True] in state


def test_json_nested_100000_deep_is_400(served):
    status, answer, _ = deliver(served, "deep-json", b"[" * 100_000)
    assert status == 400 and "nested too deeply" in answer["error"], answer
