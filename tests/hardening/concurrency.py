"""Real processes writing at once: a gunicorn server taking signed webhook deliveries from several client
processes, pollers (`manage.py sync_github`) reading the same comments from a fake GitHub, and site
claims made by another process. Used by tests/hardening/test_concurrent_writes.py and by
benchmarks/webhook_throughput.py.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.github import payloads

from .production import PYTHON, REPO

WEBHOOK_SECRET = "concurrency-webhook-secret"
TASKS = 183
FIRST_SITE_TASK = 150  # site claims take tasks from here; comments take tasks from 1

# Site users signed in with GitHub (django-allauth's SocialAccount holds the proven login).
SEED = """
from allauth.socialaccount.models import SocialAccount
from django.contrib.auth.models import User
from tracker.models import Task
Task.objects.bulk_create([Task(number=n, api=f"paddle.api_{n}", kernel="CPU") for n in range(1, %(tasks)d + 1)])
for i in range(%(site_users)d):
    user = User.objects.create_user(f"site-user-{i}", password="pw")
    SocialAccount.objects.create(user=user, provider="github", uid=str(700000 + i),
                                 extra_data={"login": f"site-login-{i}", "id": 700000 + i})
"""

SITE_CLAIMS = """
import json
from django.contrib.auth.models import User
from tracker.models import Task
from tracker.services.site_claims import claim_on_site
outcomes = []
for i in range(%(site_users)d):
    user = User.objects.get(username=f"site-user-{i}")
    outcome = claim_on_site(user, Task.objects.get(number=%(first)d + i))
    outcomes.append(outcome.ok and bool(outcome.posted_url))
print(json.dumps(outcomes))
"""

DUMP = """
import json
from django.db.models import Count
from tracker.models import Claim, Event, IssueComment, WebhookDelivery
print(json.dumps({
    "claims": sorted([c.task.number, c.contributor.login, c.source, c.withdrawn_at is None]
                     for c in Claim.objects.select_related("task", "contributor")),
    "claimed_events": sorted([e["task__number"], e["n"]] for e in
                             Event.objects.filter(kind="claimed").values("task__number").annotate(n=Count("pk"))),
    "issue_comments": IssueComment.objects.count(),
    "deliveries": WebhookDelivery.objects.count(),
}))
"""

# One client process: POSTs its share of signed deliveries over a keep-alive connection and prints
# {"statuses": {...}, "seconds": ...}. Runs with plain python (no Django).
CLIENT = r"""
import hashlib, hmac, http.client, json, sys, time
port, secret, path = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
deliveries = json.load(open(path))
statuses = {}
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
started = time.perf_counter()
for delivery in deliveries:
    body = json.dumps(delivery["payload"], ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "issue_comment",
               "X-GitHub-Delivery": delivery["id"], "X-Forwarded-Proto": "https",
               "X-Hub-Signature-256": "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()}
    for attempt in range(3):
        try:
            connection.request("POST", "/github/webhook", body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read()
            break
        except (ConnectionError, http.client.HTTPException):
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    key = str(response.status)
    if response.status >= 500:
        key += " " + answer[:80].decode("utf-8", "replace")
    statuses[key] = statuses.get(key, 0) + 1
print(json.dumps({"statuses": statuses, "seconds": time.perf_counter() - started}))
"""


def manage(env: dict, *args: str, timeout: float = 300) -> str:
    result = subprocess.run([PYTHON, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"manage.py {args[0]} exited {result.returncode}: {result.stderr[-3000:]}"
    return result.stdout


def shell(env: dict, code: str, timeout: float = 300) -> str:
    return manage(env, "shell", "-v", "0", "-c", code, timeout=timeout)


def claim_comments(count: int) -> list[dict]:
    """`count` claim comments by distinct authors, comment i claiming task i (1-based, wrapping)."""
    return [payloads.comment(3_000_000_000 + i, f"login-{i}", f"【报名】: {(i % (FIRST_SITE_TASK - 1)) + 1}",
                             f"2025-05-12T03:{(i // 60) % 60:02d}:{i % 60:02d}Z")
            for i in range(count)]


def delivery_plan(comments: list[dict], clients: int, redeliver_every: int = 0) -> list[list[dict]]:
    """Deliveries split over `clients`; every `redeliver_every`-th one is also sent again (same delivery id)
    by the next client, as GitHub's redelivery does."""
    deliveries = [{"id": f"delivery-{c['id']}", "payload": payloads.issue_comment_event("created", c)} for c in comments]
    shares: list[list[dict]] = [[] for _ in range(clients)]
    for i, delivery in enumerate(deliveries):
        shares[i % clients].append(delivery)
        if redeliver_every and i % redeliver_every == 0:
            shares[(i + 1) % clients].append(delivery)
    return shares


def start_clients(port: int, shares: list[list[dict]], workdir: Path) -> list[subprocess.Popen]:
    processes = []
    for i, share in enumerate(shares):
        path = workdir / f"deliveries-{i}.json"
        path.write_text(json.dumps(share, ensure_ascii=False), encoding="utf-8")
        processes.append(subprocess.Popen([sys.executable, "-c", CLIENT, str(port), WEBHOOK_SECRET, str(path)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return processes


def collect(processes: list[subprocess.Popen], timeout: float = 600) -> list[dict]:
    results = []
    deadline = time.monotonic() + timeout
    for process in processes:
        out, err = process.communicate(timeout=max(1, deadline - time.monotonic()))
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results
