"""Every GET route of the site with generated, hostile query strings: never a 5xx.

The URL patterns come from the resolver itself (a route added later is fuzzed too), their path
parameters are filled with real ids and bogus values, and each URL gets seeded-random query strings:
unicode digits like `²`, numbers of thousands of digits, NaN/inf, negatives, repeated and empty
parameters, invalid percent-escapes, NUL. Anonymous and staff clients both walk them (staff reaches the
admin and the sign-in-only pages). Bad values answer 200 with the filter ignored and a note on the
page, or 400 — never 500 — and a GET changes nothing.
"""
from __future__ import annotations

import random
import re
import urllib.parse

import pytest
from django.contrib.auth.models import User
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tracker.models import (Claim, ConfigResult, Contributor, Event, FailingConfig, PullRequest, Task, TestRun,
                            WebhookDelivery)
from tracker.services import latest

pytestmark = pytest.mark.django_db

SEED = 20261203
QUERIES_PER_PATTERN = 6
EXTRA_QUERIES_ON_SITE_PATTERNS = 450  # the board's own pages (not admin/auth) get more attention
HUGE = "9" * 5000

PARAM_NAMES = ["q", "kernel", "status", "contributor", "open", "sort", "page", "category", "gone", "metric", "lane",
               "next", "o", "p", "e", "all", "_changelist_filters", "id__exact", "task__number__gt", "state",
               "created__gte", "action_flag__exact", "_popup", "_to_field", "language", "format", "callback"]
NASTY_VALUES = ["", "²", "٣", "①", "½", HUGE, "-" + HUGE, "1e309", "1e-400", "NaN", "nan", "inf", "-inf", "-1", "-0",
                "0", "00000000000000000000001", "18446744073709551616", "9223372036854775808", "2.5", "0x1F", "#12",
                "#²", " 12 ", "true", "null", "None", "[]", "{}", "'", '"', "\\", "%", "%%", "%ZZ", "\x00", "a\x00b",
                "\u202e", "\ud7ff", "\ufeff", "😀" * 50, "报名", "x" * 10_000, "<script>alert(1)</script>",
                "' OR 1=1 --", "../../etc/passwd", "//evil.example", "https://evil.example", "CPU", "GPU", "cpu",
                "open", "-number", "configs", "-", "log10rel", "fraction", "pass", "accuracy_error", "1", "2"]
RAW_QUERIES = ["%ff%fe", "%", "%%%", "&&&", "=", "==", "a=b=c", "q", "q=&q=&q=", "%00=%00", "q=%C0%AF", "+=+",
               ";q=1", "q[]=1&q[]=2", "page=1&page=" + HUGE, "sort=&sort=-&sort=--number"]


def _random_text(rng: random.Random) -> str:
    alphabet = "aZ09 _-.#@%&=+/?²³¹٣०①½∞ⅫＡ中文报名😀\u0301\u200b\u202e\t\n"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))


def generate_query(rng: random.Random) -> str:
    if rng.random() < 0.08:
        return rng.choice(RAW_QUERIES)
    pairs = []
    for _ in range(rng.randint(1, 5)):
        name = rng.choice(PARAM_NAMES) if rng.random() < 0.85 else _random_text(rng)
        value = rng.choice(NASTY_VALUES) if rng.random() < 0.7 else _random_text(rng)
        pairs.append((name, value))
        if rng.random() < 0.2:  # the same parameter again, different value
            pairs.append((name, rng.choice(NASTY_VALUES)))
    return "&".join(urllib.parse.quote(n, safe="") + "=" + urllib.parse.quote(v, safe="") for n, v in pairs)


def all_patterns() -> list[tuple[str, object]]:
    """(route text, pattern object) for every endpoint, includes flattened."""
    found = []

    def walk(patterns, prefix):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                found.append((prefix + str(pattern.pattern), pattern))

    walk(get_resolver().url_patterns, "")
    return found


def _fill_regex_groups(route: str, values: dict[str, str]) -> str:
    """Replace each (?P<name>…) group (balanced parentheses) by values[name]; drop ^ and $."""
    out, i = [], 0
    while i < len(route):
        match = re.compile(r"\(\?P<(\w+)>").match(route, i)
        if not match:
            out.append(route[i])
            i += 1
            continue
        depth, j = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(route[j], 0)
            j += 1
        out.append(values[match.group(1)])
        i = j
    return "".join(out).replace("^", "").replace("$", "")


def fill(route: str, real: dict[str, list[str]], rng: random.Random) -> str:
    """One concrete path for a route: its parameters from real ids (mostly) or bogus values."""
    bogus_int = ["0", "999999", "18446744073709551616", HUGE]
    bogus_text = ["nobody", "²", "%E2%80%AE", "..%2F..%2F", "x" * 300, "%00", "报名"]

    def value_for(name: str, converter: str) -> str:
        pool = real.get(name, ["1"])
        if rng.random() < 0.6:
            return rng.choice(pool)
        return rng.choice(bogus_int if converter == "int" else bogus_text + bogus_int)

    if "(?P<" in route:
        names = re.findall(r"\(\?P<(\w+)>", route)
        return "/" + _fill_regex_groups(route, {name: value_for(name, "str") for name in names})
    path = re.sub(r"<(?:(\w+):)?(\w+)>", lambda m: value_for(m.group(2), m.group(1) or "str"), route)
    return "/" + path


@pytest.fixture
def site():
    tasks = [Task.objects.create(number=n, api=f"paddle.fuzz_{n}", kernel="CPU" if n % 2 else "GPU") for n in (1, 2, 12)]
    alice = Contributor.objects.create(login="alice")
    Claim.objects.create(task=tasks[0], contributor=alice, source="comment", created="2025-05-12T03:21:45Z")
    pr = PullRequest.objects.create(repo="PaddlePaddle/Paddle", number=72700, title="[Accuracy diff No.1] fix", author=alice)
    pr.tasks.add(tasks[0])
    config = FailingConfig.objects.create(task=tasks[0], config='paddle.fuzz_1(Tensor([2, 3],"float32"), )',
                                          config_hash="fuzz-1", origin_file="fuzz", category="accuracy")
    run = TestRun.objects.create(scope={"kind": "task", "tasks": [1]}, state=TestRun.State.DONE, total=1, done=1)
    result = ConfigResult.objects.create(run=run, failing_config=config, task=tasks[0], status="accuracy_error",
                                         direction="forward", max_abs=0.5, max_rel=0.1,
                                         diff_map={"values": [[0.1, 0.2], [0.3, 0.4]], "mask": [[0, 1], [1, 0]]})
    latest.rebuild([config.pk])
    staff = User.objects.create_superuser("fuzz-admin", "a@example.org", "pw")
    content_type = ContentType.objects.get_for_model(Task)
    return {
        "number": ["1", "12", "2"], "run_id": [str(run.pk)], "result_id": [str(result.pk)], "login": ["alice", "ALICE"],
        "object_id": [str(tasks[0].pk), str(staff.pk), str(run.pk)], "content_type_id": [str(content_type.pk)],
        "id": [str(staff.pk)], "uidb64": ["MQ", "Zm9v"], "token": ["set-password", "abc-123"],
        "app_label": ["tracker", "auth", "django_q", "nope"], "url": ["nothing/here", "tracker/task/1/change/extra"],
        "staff": staff,
    }


def state_snapshot() -> dict:
    models = [Task, Claim, Contributor, PullRequest, FailingConfig, TestRun, ConfigResult, Event, WebhookDelivery]
    return {m.__name__: sorted(map(repr, m.objects.values_list())) for m in models}


def test_every_get_route_with_generated_queries_never_answers_5xx(site):
    rng = random.Random(SEED)
    anonymous, staff = Client(), Client()
    staff.force_login(site["staff"])
    patterns = all_patterns()
    assert len(patterns) > 100, "the resolver walk found too few routes"
    site_routes = [(route, p) for route, p in patterns if not route.startswith(("admin/", "accounts/", "i18n/"))]
    assert any(route == "" for route, _ in site_routes) and any("tasks/<int:number>" == r for r, _ in site_routes)

    plan = [(route, p) for route, p in patterns for _ in range(QUERIES_PER_PATTERN)]
    plan += [rng.choice(site_routes) for _ in range(EXTRA_QUERIES_ON_SITE_PATTERNS)]
    before = state_snapshot()
    tried, failures, statuses = 0, [], {}
    for route, pattern in plan:
        url = fill(route, site, rng) + "?" + generate_query(rng)
        client = staff if rng.random() < 0.5 else anonymous
        response = client.get(url)
        tried += 1
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        if response.status_code >= 500 or response.status_code not in {200, 301, 302, 304, 400, 401, 403, 404, 405, 429}:
            failures.append((response.status_code, url[:300]))
    print(f"fuzzed {tried} GET requests over {len(patterns)} URL patterns: statuses {dict(sorted(statuses.items()))}")
    assert tried >= 1000
    assert not failures, f"{len(failures)} of {tried} requests failed, e.g. {failures[:5]}"
    assert statuses.get(200, 0) > 300, "most pages should still answer 200 with the bad filters ignored"
    assert state_snapshot() == before, "a GET changed the database"


@pytest.mark.parametrize("url, expected_note", [
    ("/?q=%C2%B2", ""),
    ("/?q=" + HUGE, ""),
    ("/?kernel=%C2%B2", "Unknown kernel"),
    ("/?sort=" + HUGE, "Unknown sort"),
    ("/tasks/1?gone=%C2%B2", "Ignored gone="),
    ("/tasks/1?category=nope", "Ignored category="),
    ("/tasks/1?page=" + HUGE, "Ignored page="),
    ("/tasks/1?page=-1", "Ignored page="),
    ("/charts/heatmap?metric=NaN", "Ignored metric="),
    ("/regressions?lane=-1", "Ignored lane="),
])
def test_named_bad_inputs_answer_200_with_a_note(client, site, url, expected_note):
    response = client.get(url)
    assert response.status_code == 200
    assert expected_note in response.content.decode()


def test_bad_filter_is_ignored_not_applied(client, site):
    page = client.get("/tasks/1?category=nope").content.decode()
    assert "paddle.fuzz_1(Tensor([2, 3]" in page  # the config is still listed: the filter was dropped
    run = TestRun.objects.get()
    page = client.get(f"/runs/{run.pk}?status=%C2%B2").content.decode()
    assert "Ignored status=" in page and "paddle.fuzz_1(Tensor([2, 3]" in page


def test_api_answers_huge_and_unicode_queries(client, site):
    assert client.get("/api/tasks?q=" + HUGE).json() == {"count": 0, "tasks": []}
    assert client.get("/api/tasks?q=%C2%B2").json()["count"] == 0
    assert [t["number"] for t in client.get("/api/tasks?q=%2312").json()["tasks"]] == [12]
    bad = client.get("/api/tasks?kernel=%C2%B2&sort=" + HUGE)
    assert bad.status_code == 400 and len(bad.json()["errors"]) == 2


def test_nul_in_the_url_is_400(client, site):
    for url in ("/?q=%00", "/contributors/a%00b", "/api/tasks?contributor=x%00"):
        response = client.get(url)
        assert response.status_code == 400 and "NUL" in response.content.decode()
