"""The staff forms with generated values: never a 5xx, and a rejected request changes nothing.

A staff client (the real views, real SQLite) posts seeded-random values to every staff-only POST: the run
form (`/runs/start`: scope, lane, task numbers, API, releases, next), cancel (`/runs/<id>/cancel`), and the
admin's add/change forms of the rows staff edit (tasks, failing configs — the config edit form —, runs).
Values come from the route fuzzer's hostile list (numbers of thousands of digits, 25 nines, unicode digits,
NaN, NUL, markup) mixed with valid ones, so some requests are accepted. A rejected request (the form again
with its errors, or a redirect with the error message) must leave the database as it was; an accepted one may
change it, and then the pages that show those rows must still answer (no 5xx from what staff saved).
"""
from __future__ import annotations

import json
import random
import re
import time

import pytest
from django.test import Client
from django_q.models import OrmQ

from tracker.models import FailingConfig, Task, TestRun

from .test_fuzz_routes import HUGE, NASTY_VALUES, _random_text, site, state_snapshot  # noqa: F401 (site: fixture)

pytestmark = pytest.mark.django_db

SEED = 20261217
# Counts sized for the suite's 12 minutes (250/60/50 took 96 s of a loaded 2-core run, 2026-12-07): every form
# still gets accepted and rejected posts (the test asserts both per form below).
RUN_FORM_REQUESTS = 120
CANCEL_REQUESTS = 30
ADMIN_REQUESTS_PER_FORM = 25
PAGES_AFTER_ACCEPTED = ["/", "/runs", "/tasks/1", "/tasks/2", "/tasks/12", "/regressions", "/charts/",
                        "/charts/heatmap", "/charts/releases", "/charts/pass-fail-transitions", "/api/tasks", "/api/tasks/1"]
TWENTY_FIVE_NINES = "9" * 25
NUMBERS = ["1", "2", "12", "0", "-1", TWENTY_FIVE_NINES, "-" + TWENTY_FIVE_NINES, HUGE, "²", "٣", " 1 ", "1.0", "1e3"]


# How often a field gets a valid value: high enough that whole forms are accepted now and then (a form
# is as valid as its least valid field), so the pages after accepted edits are checked too.
VALID_SHARE = 0.8


def _value(rng: random.Random, *valid: str) -> str:
    """A valid value (VALID_SHARE of the time) or a hostile one."""
    if valid and rng.random() < VALID_SHARE:
        return rng.choice(valid)
    return rng.choice(NASTY_VALUES + NUMBERS) if rng.random() < 0.8 else _random_text(rng)


def run_form(rng: random.Random) -> dict:
    data = {"scope": _value(rng, "task", "tasks", "api", "all_open", "all"), "lane": _value(rng, "cpu", "gpu"),
            "task": [_value(rng, *NUMBERS[:3]) for _ in range(rng.randint(0, 4))],
            "next": _value(rng, "/tasks/1", "/", "//evil.example")}
    if rng.random() < 0.5:
        data["api"] = _value(rng, "paddle.fuzz_1", "paddle.fuzz_2")
    if rng.random() < 0.3:
        data["releases"] = _value(rng, "all", "3.3.1", "3.0.0,3.3.1")
    return data


def _hostile(rng: random.Random) -> str:
    return rng.choice(NASTY_VALUES + NUMBERS) if rng.random() < 0.8 else _random_text(rng)


def admin_form(rng: random.Random, valid: dict, extra_hostile: dict | None = None) -> dict:
    """A valid admin form with none to three of its fields replaced by hostile values (a JSON field also gets
    hostile JSON: huge numbers, deep nesting, odd shapes)."""
    data = dict(valid)
    for name in rng.sample(sorted(valid), k=min(len(valid), rng.choice([0, 1, 1, 2, 3]))):
        pool = (extra_hostile or {}).get(name)
        data[name] = rng.choice(pool) if pool and rng.random() < 0.6 else _hostile(rng)
    return data


HOSTILE_JSON = ["[" * 100_000, "9" * 5000, "[" + "9" * 5000 + "]", '{"tasks": "1"}', '{"tasks": [' + "9" * 25 + "]}",
                '{"tasks": [' + "9" * 4000 + "]}", '{"tasks": null}', '{"tasks": [{"n": 1}]}', "[]", "7", '"x"',
                "NaN", '{"kind": "api"}', '{"tasks": [1, "No.1"]}']


def task_form(rng: random.Random) -> dict:
    valid = {"number": str(rng.randint(40, 10**6)), "api": "paddle.fuzz_9", "kernel": rng.choice(["CPU", "GPU"]),
             "status": rng.choice(["open", "claimed", "pr_submitted", "completed", "locked"]),
             "locked_reason": rng.choice(["", "output dtype类型不同，暂不要报名"])}
    return admin_form(rng, valid, {"number": ["2147483648", "9223372036854775808", TWENTY_FIVE_NINES, "1"]})


def failing_config_form(rng: random.Random, task_ids: list[str]) -> dict:
    valid = {"task": rng.choice(task_ids), "config": rng.choice(['paddle.fuzz_1(Tensor([2, 3],"float32"), )',
                                                                'paddle.fuzz_1(Tensor([1' + "0" * 320 + '],"float32"), )']),
             "config_hash": f"fuzz-{rng.randint(2, 10**9)}", "origin_file": "fuzz", "origin_date": "2025-05-12",
             "category": rng.choice(["", "accuracy", "paddle_error"]), "origins": '[{"file": "x"}]',
             "first_seen": "2025-05-12", "last_seen": "2026-12-03", "gone_since": "", "in_latest_report": "on"}
    return admin_form(rng, valid, {"origins": HOSTILE_JSON, "config_hash": ["fuzz-1", "x" * 65]})


def run_change_form(rng: random.Random) -> dict:
    return admin_form(rng, valid_run_form(rng.choice(["queued", "running", "done", "cancelled", "failed"])),
                      {"scope": HOSTILE_JSON, "total": [TWENTY_FIVE_NINES, "-1"], "requeues": [TWENTY_FIVE_NINES]})


def valid_run_form(state: str) -> dict:
    return {"scope": '{"kind": "task", "tasks": [1]}', "lane": "cpu", "release": "", "parent": "", "state": state,
            "paddle_version": "3.3.1", "paddle_commit": "", "torch_version": "", "host": "", "requested_by": "maint",
            "started_at_0": "2026-12-03", "started_at_1": "12:00:00", "finished_at_0": "", "finished_at_1": "",
            "total": "1", "done": "1", "message": "", "executor": "", "heartbeat_at_0": "", "heartbeat_at_1": "",
            "requeues": "0"}


def snapshot() -> tuple:
    return state_snapshot(), OrmQ.objects.count()


def test_staff_forms_with_generated_values_never_answer_5xx_and_rejections_change_nothing(site):
    rng = random.Random(SEED)
    staff = Client()
    staff.force_login(site["staff"])
    counts = {"requests": 0, "accepted": 0, "rejected": 0, "page_checks": 0}
    statuses: dict[int, int] = {}
    failures: list = []
    slowest = (0.0, "")

    per_form: dict[str, list[int]] = {}

    def post(url: str, data: dict, accepted, pages=()) -> None:
        nonlocal slowest
        form = re.sub(r"/\d+/", "/<id>/", re.sub(r"^/runs/[^/]+/cancel$", "/runs/<id>/cancel", url))
        tally = per_form.setdefault(form, [0, 0])
        before = snapshot()
        started = time.perf_counter()
        response = staff.post(url, data)
        seconds = time.perf_counter() - started
        slowest = max(slowest, (seconds, url))
        counts["requests"] += 1
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        if response.status_code >= 500 or response.status_code not in {200, 302, 400, 404}:
            failures.append((response.status_code, url, data))
            return
        if accepted(response):
            counts["accepted"] += 1
            tally[0] += 1
            for page in [*pages, *rng.sample(PAGES_AFTER_ACCEPTED, k=3)]:
                counts["page_checks"] += 1
                answer = staff.get(page)
                if answer.status_code >= 500:
                    failures.append((answer.status_code, f"GET {page} after {url}", data))
        else:
            counts["rejected"] += 1
            tally[1] += 1
            if snapshot() != before:
                failures.append(("changed the database on rejection", url, data))

    def new_run(response) -> bool:
        match = re.fullmatch(r"/runs/(\d+)", response.get("Location", ""))
        return response.status_code == 302 and bool(match) and TestRun.objects.filter(pk=int(match[1])).exists()

    for _ in range(RUN_FORM_REQUESTS):
        runs_before = set(TestRun.objects.values_list("pk", flat=True))
        post("/runs/start", run_form(rng),
             lambda r: new_run(r) and int(r["Location"].rsplit("/", 1)[1]) not in runs_before)

    run_ids = [str(pk) for pk in TestRun.objects.values_list("pk", flat=True)[:5]]
    for _ in range(CANCEL_REQUESTS):
        run_id = rng.choice(run_ids + ["0", "999999", "18446744073709551616", TWENTY_FIVE_NINES, HUGE])
        active = TestRun.objects.filter(pk__in=[int(run_id)] if len(run_id) < 19 else [],
                                        state__in=["queued", "running"]).exists()
        post(f"/runs/{run_id}/cancel", {"next": _value(rng, "/")}, lambda r, active=active: active)

    def saved(response) -> bool:  # the admin redirects after a save and re-renders the form on errors
        return response.status_code == 302

    for _ in range(ADMIN_REQUESTS_PER_FORM):
        post("/admin/tracker/task/add/", task_form(rng), saved)
    task_ids = [str(pk) for pk in Task.objects.values_list("pk", flat=True)]
    config = FailingConfig.objects.order_by("pk").first()
    for _ in range(ADMIN_REQUESTS_PER_FORM):
        post(f"/admin/tracker/failingconfig/{config.pk}/change/", failing_config_form(rng, task_ids), saved,
             pages=["/tasks/1"])
    for _ in range(ADMIN_REQUESTS_PER_FORM):
        post("/admin/tracker/failingconfig/add/", failing_config_form(rng, task_ids), saved)
    run = TestRun.objects.order_by("pk").first()
    for _ in range(ADMIN_REQUESTS_PER_FORM):
        # What a saved run shows on: its page, its JSON, and the task page's run panel (active runs by scope).
        post(f"/admin/tracker/testrun/{run.pk}/change/", run_change_form(rng), saved,
             pages=[f"/runs/{run.pk}", f"/api/runs/{run.pk}", "/tasks/1", "/"])

    # Every hostile scope on an active run (the task page lists active runs by their scope's task numbers).
    for scope in HOSTILE_JSON:
        for state in ("queued", "running"):
            post(f"/admin/tracker/testrun/{run.pk}/change/", {**valid_run_form(state), "scope": scope}, saved,
                 pages=[f"/runs/{run.pk}", f"/api/runs/{run.pk}", "/tasks/1", "/"])

    print(f"fuzzed {counts['requests']} staff POSTs: {counts['accepted']} accepted, {counts['rejected']} rejected, "
          f"{counts['page_checks']} page checks after accepted ones; statuses {dict(sorted(statuses.items()))}; "
          f"slowest {slowest[0] * 1000:.0f} ms ({slowest[1]}); accepted/rejected per form {per_form}")
    assert not failures, f"{len(failures)} failures, e.g. {failures[:3]}"
    assert counts["requests"] == RUN_FORM_REQUESTS + CANCEL_REQUESTS + 4 * ADMIN_REQUESTS_PER_FORM + 2 * len(HOSTILE_JSON)
    for form, (accepted, rejected) in per_form.items():  # every form saw both kinds
        assert accepted >= 1 and rejected >= 10, (form, accepted, rejected)
