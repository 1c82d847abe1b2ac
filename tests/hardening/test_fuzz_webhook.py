"""1,000+ hostile deliveries to POST /github/webhook: every one answered 4xx, none changes anything; and
signed deliveries with generated comment bodies and nesting: never a 5xx, never a second.

Unsigned, mis-signed, non-ASCII signature headers, oversized bodies, and correctly signed deliveries
whose JSON, headers or field types are wrong. Each starts from a real claim comment (which, delivered
intact, does claim a task — the last step proves the snapshot sees changes). The snapshot is every row
of every table the webhook can write.
"""
from __future__ import annotations

import copy
import hashlib
import json
import random
import time
import urllib.parse

import pytest
from django.test import Client

from tracker.models import Claim, Contributor, Event, IssueComment, PullRequest, SyncCursor, Task, WebhookDelivery

from tests.github import payloads
from tests.github.payloads import signature as sign
from tests.github.conftest import board  # noqa: F401  (the 183-task board fixture)

from .test_parser_time_budget import LIMIT, TEXT_PIECES, comment_bodies, mixture

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("webhook_settings")]

SEED = 72667
DELIVERIES = 1200


def snapshot() -> dict:
    tables = [Task, Claim, Contributor, PullRequest, PullRequest.tasks.through, Event, IssueComment, WebhookDelivery,
              SyncCursor]
    return {m.__name__: sorted(map(repr, m.objects.values_list())) for m in tables}


def claim_payload(n: int) -> dict:
    return payloads.issue_comment_event("created", payloads.comment(2_874_700_000 + n, "BeingGod", "【报名】: 12、13",
                                                                    "2025-05-12T03:21:45Z"))


def pr_payload(n: int) -> dict:
    return payloads.pull_request_event("opened", payloads.pull(72_000 + n, "[Accuracy diff No.12] fix", "BeingGod"))


# Signed payloads the board must refuse: (what, event, mutate(payload) -> payload).
def _set(path: list, value):
    def mutate(payload):
        target = payload
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return payload
    return mutate


SHAPE_MUTATIONS = [
    ("comment id as string", "issue_comment", _set(["comment", "id"], "2874700001")),
    ("comment id negative", "issue_comment", _set(["comment", "id"], -5)),
    ("comment id huge", "issue_comment", _set(["comment", "id"], 10**30)),
    ("comment id bool", "issue_comment", _set(["comment", "id"], True)),
    ("comment id float", "issue_comment", _set(["comment", "id"], 1.5)),
    ("comment missing", "issue_comment", lambda p: {k: v for k, v in p.items() if k != "comment"}),
    ("comment a list", "issue_comment", _set(["comment"], [1, 2])),
    ("body an int", "issue_comment", _set(["comment", "body"], 12)),
    ("body a list", "issue_comment", _set(["comment", "body"], ["【报名】: 12"])),
    ("body with NUL", "issue_comment", _set(["comment", "body"], "【报名】: 12\x00")),
    ("body too long", "issue_comment", _set(["comment", "body"], "【报名】: 12 " + "x" * 70_000)),
    ("user a string", "issue_comment", _set(["comment", "user"], "BeingGod")),
    ("login an int", "issue_comment", _set(["comment", "user", "login"], 7)),
    ("login too long", "issue_comment", _set(["comment", "user", "login"], "a" * 500)),
    ("created_at impossible", "issue_comment", _set(["comment", "created_at"], "2025-13-45T03:21:45Z")),
    ("created_at a number", "issue_comment", _set(["comment", "created_at"], 1747020105)),
    ("action a list", "issue_comment", _set(["action"], ["created"])),
    ("repository a string", "issue_comment", _set(["repository"], "PaddlePaddle/Paddle")),
    ("issue a string", "issue_comment", _set(["issue"], "72667")),
    ("pr number string", "pull_request", _set(["pull_request", "number"], "72001")),
    ("pr number huge", "pull_request", _set(["pull_request", "number"], 2**64)),
    ("pr title an int", "pull_request", _set(["pull_request", "title"], 12)),
    ("pr title too long", "pull_request", _set(["pull_request", "title"], "[Accuracy diff No.12] " + "x" * 600)),
    ("pr merged a string", "pull_request", _set(["pull_request", "merged"], "yes")),
    ("pr user a list", "pull_request", _set(["pull_request", "user"], ["BeingGod"])),
    ("pr base a string", "pull_request", _set(["pull_request", "base"], "develop")),
    ("pr updated_at impossible", "pull_request", _set(["pull_request", "updated_at"], "2025-02-30T00:00:00Z")),
    ("pull_request missing", "pull_request", lambda p: {k: v for k, v in p.items() if k != "pull_request"}),
]
NON_ASCII_SIGNATURES = ["sha256=²", "sha256=" + "é" * 64, "sha256=" + "😀" * 16, "sha256=ÿþ", "sha256=\u202e" + "0" * 63,
                        "²sha256=abc", "sha256=" + "０" * 64]


def build_delivery(rng: random.Random, i: int) -> tuple[str, dict]:
    """(category, request kwargs for Client.post) of one hostile delivery."""
    event, payload = ("issue_comment", claim_payload(i)) if rng.random() < 0.7 else ("pull_request", pr_payload(i))
    body = json.dumps(payload, ensure_ascii=False).encode()
    headers = {"HTTP_X_GITHUB_EVENT": event, "HTTP_X_GITHUB_DELIVERY": f"fuzz-{i}",
               "HTTP_USER_AGENT": "GitHub-Hookshot/044aadd"}
    content_type = "application/json"
    category = rng.choice(["unsigned", "mis-signed", "non-ascii signature", "oversized", "bad json", "bad shape",
                           "bad headers", "bad form"])
    if category == "unsigned":
        pass
    elif category == "mis-signed":
        headers["HTTP_X_HUB_SIGNATURE_256"] = rng.choice([
            "sha256=" + "%064x" % rng.getrandbits(256), sign(body, "another secret"), sign(body + b" "),
            sign(body)[:-1], sign(body).upper(), "sha1=" + hashlib.sha1(body).hexdigest(), "", "sha256=",
            sign(body).replace("sha256=", "sha512="), " " + sign(body)[:20]])
    elif category == "non-ascii signature":
        headers["HTTP_X_HUB_SIGNATURE_256"] = rng.choice(NON_ASCII_SIGNATURES)
    elif category == "oversized":
        payload["comment" if event == "issue_comment" else "pull_request"]["padding"] = "x" * (1024 * 1024 + rng.randint(1, 5000))
        body = json.dumps(payload).encode()
        headers["HTTP_X_HUB_SIGNATURE_256"] = sign(body)
    elif category == "bad json":
        body = rng.choice([body[: rng.randint(1, len(body) - 1)], b"not json", b"\xff\xfe\x00", b"[]", b"null", b"42",
                           b'"a string"', body.replace(b"{", b"(", 1), "【报名】: 12".encode("gb18030"), b""])
        headers["HTTP_X_HUB_SIGNATURE_256"] = sign(body)
    elif category == "bad shape":
        candidates = [m for m in SHAPE_MUTATIONS if m[1] == event]
        _, _, mutate = rng.choice(candidates)
        body = json.dumps(mutate(copy.deepcopy(payload)), ensure_ascii=False).encode()
        headers["HTTP_X_HUB_SIGNATURE_256"] = sign(body)
    elif category == "bad headers":
        headers["HTTP_X_HUB_SIGNATURE_256"] = sign(body)
        which = rng.choice(["no event", "no delivery", "long delivery", "non-ascii delivery", "non-ascii event",
                            "control delivery"])
        if which == "no event":
            del headers["HTTP_X_GITHUB_EVENT"]
        elif which == "no delivery":
            del headers["HTTP_X_GITHUB_DELIVERY"]
        elif which == "long delivery":
            headers["HTTP_X_GITHUB_DELIVERY"] = "d" * rng.randint(101, 5000)
        elif which == "non-ascii delivery":
            headers["HTTP_X_GITHUB_DELIVERY"] = f"报名-{i}"
        elif which == "non-ascii event":
            headers["HTTP_X_GITHUB_EVENT"] = "issue_comment²"
        else:
            headers["HTTP_X_GITHUB_DELIVERY"] = f"fuzz\n{i}"
    else:  # form-encoded without a usable payload
        content_type = "application/x-www-form-urlencoded"
        body = rng.choice([b"payload=", b"payload=%7B", b"other=1", b"payload=%ff%fe", b"payload=" +
                           urllib.parse.quote("[1, 2]").encode()])
        headers["HTTP_X_HUB_SIGNATURE_256"] = sign(body)
    return category, {"data": body, "content_type": content_type, **headers}


def test_hostile_deliveries_change_nothing_and_never_answer_5xx(board):
    rng = random.Random(SEED)
    client = Client()
    before = snapshot()
    tried, by_category, failures = 0, {}, []
    for i in range(DELIVERIES):
        category, request = build_delivery(rng, i)
        response = client.post("/github/webhook", **request)
        tried += 1
        by_category.setdefault(category, {}).setdefault(response.status_code, 0)
        by_category[category][response.status_code] += 1
        if not 400 <= response.status_code < 500:
            failures.append((category, response.status_code, response.content[:200]))
    after = snapshot()
    changed = {table for table in before if before[table] != after[table]}
    print(f"{tried} hostile deliveries: {by_category}; tables changed: {sorted(changed) or 'none'}")
    assert tried >= 1000 and len(by_category) == 8
    assert not failures, f"{len(failures)} deliveries not answered 4xx, e.g. {failures[:5]}"
    assert not changed

    # The same delivery, intact and signed, does change the board: the snapshot would have seen it.
    body = json.dumps(claim_payload(0), ensure_ascii=False).encode()
    response = client.post("/github/webhook", data=body, content_type="application/json",
                           HTTP_X_GITHUB_EVENT="issue_comment", HTTP_X_GITHUB_DELIVERY="fuzz-intact",
                           HTTP_X_HUB_SIGNATURE_256=sign(body))
    assert response.status_code == 200
    assert snapshot() != after and Claim.objects.filter(task__number__in=[12, 13], contributor__login="BeingGod").count() == 2


@pytest.mark.parametrize("header", NON_ASCII_SIGNATURES)
def test_non_ascii_signature_is_401(client, board, header):
    body = json.dumps(claim_payload(1)).encode()
    response = client.post("/github/webhook", data=body, content_type="application/json",
                           HTTP_X_GITHUB_EVENT="issue_comment", HTTP_X_GITHUB_DELIVERY="d-1",
                           HTTP_X_HUB_SIGNATURE_256=header)
    assert response.status_code == 401 and not WebhookDelivery.objects.exists()


def nested(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def signed_post(client, body: bytes, delivery: str, event: str = "issue_comment",
                content_type: str = "application/json"):
    started = time.perf_counter()
    response = client.post("/github/webhook", data=body, content_type=content_type, HTTP_X_GITHUB_EVENT=event,
                           HTTP_X_GITHUB_DELIVERY=delivery, HTTP_X_HUB_SIGNATURE_256=sign(body))
    return response, time.perf_counter() - started


def comment_json(n: int, body: str, login: str = "BeingGod", extra: str = "") -> bytes:
    """A signed-ready issue_comment delivery; `extra` is raw JSON spliced in as the comment's "extra" field
    (json.dumps cannot write a structure nested deeper than Python's recursion limit)."""
    text = json.dumps(payloads.issue_comment_event("created", payloads.comment(
        2_874_800_000 + n, login, body, "2025-05-12T03:21:45Z")), ensure_ascii=False)
    if extra:
        text = text.replace('"comment": {', '"comment": {"extra": ' + extra + ", ", 1)
    return text.encode()


def generated_bodies(rng: random.Random) -> list[str]:
    """Every worst-case body of the time-budget test, then random ones of every length up to GitHub's limit."""
    bodies = list(comment_bodies().values())
    for i in range(300):
        length = rng.choice([10, 100, 1000, 10_000, LIMIT])
        bodies.append(mixture(rng.randrange(10**9), TEXT_PIECES)[:rng.randint(1, length)])
    return bodies


def test_generated_bodies_and_nesting_never_answer_5xx_nor_take_a_second(board):
    """Signed deliveries whose comment bodies are generated (every parser's worst case within 65,536
    characters, random mixtures of marker pieces) are applied, each within a second; signed JSON nested
    too deep for the reader is a 400 that changes nothing. Counts are printed for docs/measurements.md."""
    rng = random.Random(SEED + 1)
    client = Client()
    statuses: dict[int, int] = {}
    slowest, failures = (0.0, ""), []

    def record(what: str, response, seconds: float):
        nonlocal slowest
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        slowest = max(slowest, (seconds, what))
        if response.status_code >= 500:
            failures.append((what, response.status_code, response.content[:200]))

    # Refused: nesting beyond what the JSON reader follows, anywhere in the payload. Nothing may change.
    before = snapshot()
    refused = 0
    for depth in (5_000, 20_000, 100_000, 160_000):  # 160,000 levels of {"a": stay under the 1 MB body cap
        for i, body in enumerate([nested(depth).encode(), nested(depth, "{\"a\":", "}").encode(),
                                  comment_json(depth, "【报名】: 12", extra=nested(depth))]):
            response, seconds = signed_post(client, body, f"nest-{depth}-{i}")
            record(f"nesting {depth} #{i}", response, seconds)
            refused += 1
            assert response.status_code == 400 and "nested too deeply" in response.json()["error"], response.content[:300]
        form = b"payload=" + urllib.parse.quote(nested(depth)).encode()
        response, seconds = signed_post(client, form, f"nest-form-{depth}", content_type="application/x-www-form-urlencoded")
        record(f"form nesting {depth}", response, seconds)
        refused += 1
        assert response.status_code == 400
    assert snapshot() == before, "a refused delivery changed the board"

    # Accepted: generated bodies, and nesting the reader does follow (extra fields are ignored).
    accepted = 0
    for n, body in enumerate(generated_bodies(rng)):
        extra = nested(rng.randint(1, 200)) if n % 7 == 0 else ""
        response, seconds = signed_post(client, comment_json(n, body, login=f"fuzz-{n % 50}", extra=extra), f"gen-{n}")
        record(f"generated body #{n} ({len(body)} characters)", response, seconds)
        accepted += 1
        assert response.status_code == 200, (n, response.content[:300])
    assert WebhookDelivery.objects.filter(delivery_id__startswith="gen-").count() == accepted
    assert Claim.objects.exists()  # the mixtures do claim tasks: the bodies are read, not dropped

    print(f"{refused + accepted} signed deliveries (generated bodies up to 65,536 characters, nesting up to "
          f"160,000 deep): statuses {statuses}; 5xx: {len(failures)}; slowest {slowest[0] * 1000:.0f} ms ({slowest[1]})")
    assert not failures, failures[:5]
    assert slowest[0] < 1.0, f"slowest request: {slowest[1]} took {slowest[0]:.2f} s"
