"""No lost writes: webhook deliveries, pollers and site claims at once, in real processes, apply each change once.

A gunicorn server (scripts/serve.sh, 2 workers x 4 threads) takes signed claim comments from four
client processes (every fifth delivered twice with the same delivery id, as GitHub's redelivery does);
meanwhile two `manage.py sync_github` processes poll the same comments from a fake GitHub, and a third
process claims tasks on the site (posting its comments to the fake GitHub, which the pollers then see
too). On SQLite (WAL, BEGIN IMMEDIATE) and on PostgreSQL: every delivery answered 200, every comment
applied exactly once, every site claim stored once.
"""
from __future__ import annotations

import json
import subprocess

from tests.github.fake_github import FakeGitHub

from . import concurrency as cc
from .production import PYTHON, REPO
from .servers import Served

COMMENTS = 120
CLIENTS = 4
SITE_CLAIMS = 12


def test_webhook_poller_and_site_claims_at_once_apply_each_change_once(tmp_path, database_url):
    fake = FakeGitHub(page_size=30, token_login="board-site-bot").start()
    comments = cc.claim_comments(COMMENTS)
    for comment in comments:
        fake.add_comment(comment)
    github = {"GITHUB_WEBHOOK_SECRET": cc.WEBHOOK_SECRET, "GITHUB_API_URL": fake.url, "GITHUB_TOKEN": "ghs_test",
              "GITHUB_TRACKING_ISSUE": "PaddlePaddle/Paddle#72667", "GITHUB_BOT_ACCOUNTS": "paddle-bot",
              "GITHUB_BOT_LOGIN": "board-site-bot", "SITE_CLAIM_RATE_LIMIT": "1000",
              "GITHUB_PR_REPOS": "PaddlePaddle/Paddle"}
    server = Served(tmp_path, database_url=database_url, workers=2, threads=4, extra_env=github)
    try:
        server.wait_ready()
        env = server.env
        cc.shell(env, cc.SEED % {"tasks": cc.TASKS, "site_users": SITE_CLAIMS})

        shares = cc.delivery_plan(comments, CLIENTS, redeliver_every=5)
        clients = cc.start_clients(server.port, shares, tmp_path)
        pollers = [subprocess.Popen([PYTHON, "manage.py", "sync_github", "--no-pulls", "--full"], cwd=REPO, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        site = subprocess.Popen([PYTHON, "manage.py", "shell", "-v", "0", "-c",
                                 cc.SITE_CLAIMS % {"site_users": SITE_CLAIMS, "first": cc.FIRST_SITE_TASK}],
                                cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        answers = cc.collect(clients)
        for poller in pollers:
            out, err = poller.communicate(timeout=600)
            assert poller.returncode == 0, f"sync_github failed: {err[-3000:]}"
        out, err = site.communicate(timeout=600)
        assert site.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1]) == [True] * SITE_CLAIMS
        # A last poll after everything: it sees the site's own comments too, and must change nothing.
        cc.manage(env, "sync_github", "--no-pulls", "--full")
        state = json.loads(cc.shell(env, cc.DUMP).strip().splitlines()[-1])
    finally:
        server.stop()
        fake.stop()

    statuses: dict[str, int] = {}
    for answer in answers:
        for status, n in answer["statuses"].items():
            statuses[status] = statuses.get(status, 0) + n
    sent = sum(len(share) for share in shares)
    assert statuses == {"200": sent}, f"not every delivery answered 200: {statuses}"

    expected = sorted([(i % (cc.FIRST_SITE_TASK - 1)) + 1, f"login-{i}", "comment", True] for i in range(COMMENTS))
    expected += [[cc.FIRST_SITE_TASK + i, f"site-login-{i}", "web", True] for i in range(SITE_CLAIMS)]
    assert state["claims"] == sorted(expected), "a claim is missing, doubled or attributed wrongly"
    per_task: dict[int, int] = {}
    for number, *_ in expected:
        per_task[number] = per_task.get(number, 0) + 1
    assert state["claimed_events"] == sorted([n, k] for n, k in per_task.items()), "a claim event is doubled"
    assert state["deliveries"] == COMMENTS  # redeliveries of one id are stored once
    assert state["issue_comments"] == COMMENTS + SITE_CLAIMS  # the site's posted comments are known once
