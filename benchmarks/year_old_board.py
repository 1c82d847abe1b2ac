"""A board a year old (issue 45): every public page and API on PostgreSQL, cold and warm, 16 and 64 clients.

Fills a uniquely named PostgreSQL database on 127.0.0.1:5432 (dropped at the end unless --keep) with the board
fixture, PaddleAPITest's reports (PADDLEAPITEST_REPORTS) and a year of results: every CPU-task config x RELEASES
(8) x WEEKS (52) weekly runs, plus one CPU-evidence run of each of the ten largest GPU tasks, written with
PostgreSQL's COPY (the insert time is printed). Then serves it the production way (scripts/serve.sh: gunicorn,
the production environment of docs/deployment.md), optionally behind the documented nginx
(deploy/nginx/board-proxy.conf included verbatim, --nginx), and measures each public page and API:

* cold: right after a data change (a claim on the page's task: every page's data version changes), C clients
  ask for the page at once — the first answers compute it;
* warm: the same page again, C clients x N requests, from the per-data-version cache.

For each (page, clients, cold/warm): p50, p95, max, 5xx and timeouts (no answer within --timeout s).

    .venv/bin/python benchmarks/year_old_board.py [--weeks 52] [--releases 8] [--clients 16,64] [--nginx]
    .venv/bin/python benchmarks/year_old_board.py --keep --fill-only          # fill once, print the database name
    .venv/bin/python benchmarks/year_old_board.py --database NAME             # measure an already filled one
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PG = {"host": "127.0.0.1", "port": 5432, "user": os.environ.get("TEST_POSTGRES_USER", "postgres")}
ADMIN_DB = os.environ.get("TEST_POSTGRES_DB", "test")
# Seven older Paddle releases and the main environment's (runs with release "" record its version).
OLDER_RELEASES = ["2.6.2", "3.0.0", "3.1.0", "3.1.1", "3.2.0", "3.2.1", "3.2.2"]


def database_url(name: str) -> str:
    return f"postgres://{PG['user']}@{PG['host']}:{PG['port']}/{name}"


def create_database() -> str:
    import psycopg

    name = f"year_old_board_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dbname=ADMIN_DB, autocommit=True, **PG) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(dbname=ADMIN_DB, autocommit=True, **PG) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def setup_django(name: str) -> None:
    os.environ["DATABASE_URL"] = database_url(name)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DJANGO_DEBUG"] = "1"  # this process only fills the database
    import django

    django.setup()


# ----------------------------------------------------------------------------- the fill


def _copy_rows(model, columns: dict, rows) -> int:
    """COPY `rows` (tuples in the order of `columns`' overrides) into the model's table; every other column gets
    the field's Python default (Django's defaults are not the database's)."""
    from django.db import connection

    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    defaults = {}
    for field in fields:
        value = field.get_default()
        defaults[field.column] = json.dumps(value) if field.get_internal_type() == "JSONField" and value is not None else value
    fixed = [f.column for f in fields if f.column not in columns]
    names = list(columns) + fixed
    tail = tuple(defaults[c] for c in fixed)
    n = 0
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY {model._meta.db_table} ({', '.join(names)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row + tail)
                n += 1
    return n


def _status(rng: random.Random, fixed_at: int, release_index: int, week: int, fix_week: int) -> str:
    from tracker.vocab import Status

    if rng.random() < 0.01:
        return Status.UNSUPPORTED
    # Fixed on release `fixed_at` and newer; on the newest release only from its fix week on.
    passing = release_index > fixed_at or (release_index == fixed_at and week >= fix_week)
    return Status.PASS if passing else Status.ACCURACY_ERROR


def fill_year(weeks: int, n_releases: int, seed: int = 0) -> dict:
    """The year of results, COPY'd: returns the counts and seconds."""
    from django.db import transaction
    from django.utils import timezone

    from tracker.models import ConfigResult, FailingConfig, Task, TestRun
    from tracker.selectors.envs import main_version
    from tracker.vocab import Kernel, ScopeKind, Status

    rng = random.Random(seed)
    main = main_version() or "3.3.1"
    releases = OLDER_RELEASES[-(n_releases - 1):] + [main] if n_releases > 1 else [main]
    configs = list(FailingConfig.objects.filter(task__kernel=Kernel.CPU).values_list("id", "task_id").order_by("id"))
    fixed = {cid: (rng.randint(0, len(releases)), rng.randint(0, weeks)) for cid, _task in configs}
    start = timezone.now() - timedelta(weeks=weeks)
    started = time.perf_counter()
    results = 0
    with transaction.atomic():
        for week in range(weeks):
            for index, release in enumerate(releases):
                when = start + timedelta(weeks=week, hours=index)
                run = TestRun.objects.create(
                    scope={"kind": ScopeKind.ALL_OPEN}, lane="cpu", release="" if release == main else release,
                    state=TestRun.State.DONE, paddle_version=release, torch_version="2.13.0", host="year-old-board",
                    total=len(configs), done=len(configs), started_at=when, finished_at=when + timedelta(hours=1))
                rows = ((run.id, cid, task_id, status, "forward" if status == Status.ACCURACY_ERROR else "",
                         rng.uniform(0, 1) if status != Status.PASS else 0.0, release, when)
                        for cid, task_id in configs
                        for status in [_status(rng, fixed[cid][0], index, week, fixed[cid][1])])
                results += _copy_rows(ConfigResult, {"run_id": 0, "failing_config_id": 0, "task_id": 0, "status": 0,
                                                     "direction": 0, "max_abs": 0, "paddle_version": 0, "created": 0},
                                      rows)
            if week % 8 == 7:
                print(f"  week {week + 1}/{weeks}: {results:,} results in {time.perf_counter() - started:.0f} s",
                      flush=True)
        evidence = _cpu_evidence_runs(main, rng, start + timedelta(weeks=weeks))
    seconds = time.perf_counter() - started
    return {"cpu_configs": len(configs), "releases": releases, "weeks": weeks, "results": results,
            "evidence_results": evidence, "seconds": seconds, "tasks": Task.objects.count()}


def _cpu_evidence_runs(main: str, rng: random.Random, when) -> int:
    """One CPU-evidence run (the cpu lane, main env) of each of the ten largest GPU tasks."""
    from django.db.models import Count

    from tracker.models import ConfigResult, FailingConfig, Task, TestRun
    from tracker.vocab import Kernel, ScopeKind, Status

    largest = list(Task.objects.filter(kernel=Kernel.GPU).annotate(n=Count("failing_configs"))
                   .order_by("-n").values_list("id", "number")[:10])
    n = 0
    for task_id, number in largest:
        configs = list(FailingConfig.objects.filter(task_id=task_id).values_list("id", flat=True))
        run = TestRun.objects.create(
            scope={"kind": ScopeKind.TASKS, "tasks": [number], "config_ids": configs}, lane="cpu", state=TestRun.State.DONE,
            paddle_version=main, torch_version="2.13.0", host="year-old-board", total=len(configs), done=len(configs),
            started_at=when, finished_at=when + timedelta(hours=2))
        rows = ((run.id, cid, task_id, status, rng.uniform(0, 1) if status != Status.PASS else 0.0, main, when)
                for cid in configs for status in [Status.ACCURACY_ERROR if rng.random() < 0.6 else Status.PASS])
        n += _copy_rows(ConfigResult, {"run_id": 0, "failing_config_id": 0, "task_id": 0, "status": 0, "max_abs": 0,
                                       "paddle_version": 0, "created": 0}, rows)
    return n


def fill(name: str, weeks: int, n_releases: int) -> dict:
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    call_command("createcachetable", verbosity=0)
    started = time.perf_counter()
    call_command("bootstrap_board", reports=settings.PADDLEAPITEST_REPORTS, verbosity=0)
    print(f"board fixture + reports imported in {time.perf_counter() - started:.0f} s", flush=True)
    info = fill_year(weeks, n_releases)
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    info["analyze_seconds"] = time.perf_counter() - started
    return info


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=52)
    parser.add_argument("--releases", type=int, default=8)
    parser.add_argument("--database", help="measure this already filled database (no fill, never dropped)")
    parser.add_argument("--keep", action="store_true", help="keep the database (print its name)")
    parser.add_argument("--fill-only", action="store_true")
    parser.add_argument("--clients", default="16,64")
    parser.add_argument("--warm-requests", type=int, default=4, help="requests per client in the warm round")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--nginx", action="store_true", help="through deploy/nginx/board-proxy.conf")
    parser.add_argument("--pages", default="", help="comma-separated subset of the page names")
    args = parser.parse_args()

    name = args.database or create_database()
    try:
        setup_django(name)
        if not args.database:
            info = fill(name, args.weeks, args.releases)
            print(f"database {name}: {info['tasks']} tasks, {info['cpu_configs']:,} CPU-task configs x "
                  f"{len(info['releases'])} releases x {info['weeks']} weeks = {info['results']:,} results + "
                  f"{info['evidence_results']:,} CPU-evidence results, COPY'd in {info['seconds']:.0f} s "
                  f"(ANALYZE {info['analyze_seconds']:.0f} s)", flush=True)
        if args.fill_only:
            return 0
        from benchmarks.year_old_measure import measure

        return measure(name, args)
    finally:
        if not (args.keep or args.database):
            drop_database(name)
        elif not args.database:
            print(f"kept database {name} (drop it with: psql -h 127.0.0.1 -U postgres -d test "
                  f"-c 'DROP DATABASE \"{name}\" WITH (FORCE)')")


if __name__ == "__main__":
    raise SystemExit(main())
