"""A board a year old (issue 45): every public page and API on PostgreSQL, cold and warm, 16 and 64 clients.

Fills a uniquely named PostgreSQL database on 127.0.0.1:5432 (dropped at the end unless --keep) with the board
fixture, PaddleAPITest's reports (PADDLEAPITEST_REPORTS) and a year of results: every CPU-task config x RELEASES
(8) x WEEKS (52) weekly runs, plus one CPU-evidence run of each of the ten largest GPU tasks, written with
PostgreSQL's COPY (the insert time is printed). Then serves it the production way (scripts/serve.sh: gunicorn,
the production environment of docs/deployment.md), optionally behind the documented nginx
(deploy/nginx/board-proxy.conf included verbatim, --nginx), and measures each public page and API:

* first (first clients count only): C clients ask at once for a page this server has never rendered;
* cold: right after a data change (a claim on the page's task: every page's data version changes), C clients
  ask for the page at once — the first answers compute it, or, with WEB_STALE_SECONDS (--stale-seconds, 300 as
  docs/deployment.md sets), are answered with the page's previous rendering while it is computed (column "prev");
* warm: the same page again, C clients x N requests, from the per-data-version cache.

For each (page, clients, round): p50, p95, max, 5xx, timeouts (no answer within --timeout s) and previous renderings.

    .venv/bin/python benchmarks/year_old_board.py [--weeks 52] [--releases 8] [--clients 16,64] [--nginx]
    .venv/bin/python benchmarks/year_old_board.py --keep --fill-only          # fill once, print the database name
    .venv/bin/python benchmarks/year_old_board.py --database NAME             # measure an already filled one
    .venv/bin/python benchmarks/year_old_board.py --database NAME --in-process  # per request, no HTTP server
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
    from tracker.services import latest

    started = time.perf_counter()  # COPY bypasses store_result: each config's newest verdicts, as the migration fills
    info["latest_rows"] = latest.rebuild()
    info["latest_seconds"] = time.perf_counter() - started
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    info["analyze_seconds"] = time.perf_counter() - started
    return info


# ----------------------------------------------------------------------------- the measurement


def public_pages() -> dict[str, tuple[str, int | None]]:
    """name -> (path, the task whose data the page shows, None for the whole board)."""
    from django.db.models import Count

    from tracker.models import ConfigResult, Contributor, Task, TestRun
    from tracker.vocab import Kernel

    def largest(kernel):
        return (Task.objects.filter(kernel=kernel).annotate(n=Count("failing_configs")).order_by("-n")
                .values_list("id", "number").first())

    cpu_id, cpu = largest(Kernel.CPU)
    gpu_id, gpu = largest(Kernel.GPU)
    run = TestRun.objects.filter(release="", lane="cpu").order_by("-id").values_list("id", flat=True).first()
    login = Contributor.objects.order_by("login").values_list("login", flat=True).first()
    result = ConfigResult.objects.filter(task_id=cpu_id).order_by("-id").values_list("id", flat=True).first()
    return {
        "board": ("/", None), "board_filtered": ("/?kernel=CPU&open=1&sort=-number", None),
        "api_tasks": ("/api/tasks", None),
        "task_cpu": (f"/tasks/{cpu}", cpu_id), "task_cpu_unknown_param": (f"/tasks/{cpu}?x=1", cpu_id),
        "task_gpu": (f"/tasks/{gpu}", gpu_id),
        "api_task_cpu": (f"/api/tasks/{cpu}", cpu_id), "api_task_gpu": (f"/api/tasks/{gpu}", gpu_id),
        "alignment": ("/alignment", None), "api_alignment": ("/api/alignment", None),
        "charts_overview": ("/charts/overview", None), "charts_heatmap": ("/charts/heatmap", None),
        "charts_releases": ("/charts/releases", None), "charts_contributors": ("/charts/contributors", None),
        "charts_transitions": ("/charts/pass-fail-transitions", None), "regressions": ("/regressions", None),
        "runs": ("/runs", None), "run": (f"/runs/{run}", None), "api_run": (f"/api/runs/{run}", None),
        "flaky": ("/flaky", None), "api_flaky": ("/api/flaky", None),
        "contributor": (f"/contributors/{login}", None),
        "diff": (f"/tasks/{cpu}/results/{result}/diff", cpu_id),
    }


def change_data(task_id: int | None, n: int) -> None:
    """A data change every page shows: a new contributor (the board's version) and an event on the task (its
    page's version) — what a claim does, without GitHub."""
    from django.utils import timezone

    from tracker.models import Contributor, Event

    Contributor.objects.create(login=f"year-old-board-{os.getpid()}-{n}")
    if task_id is not None:
        Event.objects.create(task_id=task_id, kind="note", source="admin", message=f"benchmark change {n}",
                             created=timezone.now())


def _client(port: int, path: str, requests: int, timeout: float, start,
            source: str | None = None) -> list[tuple[float, int, bool]]:
    """One keep-alive client: [(ms, status, answered from the page's previous rendering)]; status 0 = no answer
    within `timeout` (the client gives up). `source`: the loopback address it connects from (127.0.0.0/8 is all
    loopback): behind nginx, each client is then its own address, as visitors are, for the per-address limits."""
    import http.client

    out = []
    source_address = (source, 0) if source else None
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=source_address)
    start.wait()
    for _ in range(requests):
        began = time.perf_counter()
        try:
            connection.request("GET", path, headers={"X-Forwarded-Proto": "https", "Accept-Encoding": "gzip"})
            response = connection.getresponse()
            response.read()
            out.append(((time.perf_counter() - began) * 1000, response.status,
                        response.getheader("X-Board-Rendering") == "previous"))
        except (OSError, http.client.HTTPException):
            out.append(((time.perf_counter() - began) * 1000, 0, False))
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=source_address)
    connection.close()
    return out


def _client_process(port: int, path: str, threads: int, requests: int, timeout: float, first_source: int = 0) -> list[tuple]:
    import threading

    start = threading.Barrier(threads)
    found: list = []
    lock = threading.Lock()

    def run(index):
        source = f"127.0.{(first_source + index) // 250}.{2 + (first_source + index) % 250}" if first_source else None
        mine = _client(port, path, requests, timeout, start, source)
        with lock:
            found.extend(mine)

    workers = [threading.Thread(target=run, args=(index,)) for index in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return found


def hammer(pool, port: int, path: str, clients: int, requests: int, timeout: float, processes: int,
           own_addresses: bool = False) -> dict:
    """`clients` clients at once (over `processes` client processes: one interpreter would serialise them),
    each making `requests` requests."""
    per = clients // processes
    parts = pool.starmap(_client_process, [(port, path, per, requests, timeout, 1 + i * per if own_addresses else 0)
                                           for i in range(processes)])
    rows = sorted(x for part in parts for x in part)
    ms = [m for m, _status, _previous in rows]
    return {"p50": ms[len(ms) // 2], "p95": ms[max(0, int(len(ms) * 0.95) - 1)], "max": ms[-1], "n": len(ms),
            "5xx": sum(1 for _m, s, _p in rows if s >= 500), "timeouts": sum(1 for _m, s, _p in rows if s == 0),
            "previous": sum(1 for _m, _s, p in rows if p), "statuses": sorted({s for _m, s, _p in rows})}


def start_nginx(workdir: Path, upstream: int):
    import shutil
    import socket
    import subprocess

    from tests.hardening.servers import free_port
    from tests.hardening.test_nginx_proxy import nginx_config

    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    port = free_port()
    (workdir / "nginx.conf").write_text(nginx_config(workdir, port, upstream).replace("keepalive 16;", "keepalive 64;"))
    process = subprocess.Popen([nginx, "-p", str(workdir), "-c", str(workdir / "nginx.conf"), "-e",
                                str(workdir / "error.log")], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                               start_new_session=True)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, port
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError((workdir / "error.log").read_text())
            time.sleep(0.2)


def in_process(args) -> int:
    """Per request in this process (Django's test client, one client, no HTTP): cold = the page cache emptied,
    warm = the median of 5 from the cache. What the server itself costs, without the queue of clients."""
    import statistics

    from django.core.cache import caches
    from django.test import Client
    from django.test.utils import override_settings

    client = Client()
    pages = public_pages()
    if args.pages:
        pages = {k: v for k, v in pages.items() if k in args.pages.split(",")}
    print(f"{'page':26s} {'path':40s} status {'cold ms':>9s} {'warm ms':>8s}", flush=True)
    with override_settings(WEB_READ_SECONDS=0):
        for page, (path, _task) in pages.items():
            caches["pages"].clear()
            began = time.perf_counter()
            status = client.get(path, secure=True).status_code
            cold = (time.perf_counter() - began) * 1000
            warm = []
            for _ in range(5):
                began = time.perf_counter()
                client.get(path, secure=True)
                warm.append((time.perf_counter() - began) * 1000)
            print(f"{page:26s} {path:40s} {status:6d} {cold:9.0f} {statistics.median(warm):8.1f}", flush=True)
    print(f"load average: {os.getloadavg()[0]:.1f} (2 cores, shared with other jobs)")
    return 0


def wait_for_new_rendering(port: int, path: str, timeout: float) -> float | None:
    """Seconds until a read of `path` is no longer answered from its previous rendering (at most `timeout`)."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        _ms, _status, previous = _client(port, path, 1, timeout, _NO_WAIT)[0]
        if not previous:
            break
        time.sleep(0.25)  # 4 a second: under nginx's per-address rate (5 r/s)
    return time.monotonic() - began


class _NoWait:
    def wait(self):
        return None


_NO_WAIT = _NoWait()


def wait_for_warming(server, timeout: float = 1800) -> float | None:
    """Seconds until serve.sh's warm_pages (beside gunicorn's start: the site's pages, then every task's) said it was
    done, None if it did not."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        server.log.flush()
        with open(server.log.name) as log:
            lines = [line for line in log if line.startswith("warm_pages:")]
        if any("warmed " in line or "Error" in line for line in lines):
            return time.monotonic() - began
        time.sleep(1)
    return None


def measure(name: str, args) -> int:
    import multiprocessing
    import signal
    import tempfile

    from tests.hardening.servers import Served

    pages = public_pages()
    if args.pages:
        pages = {k: v for k, v in pages.items() if k in args.pages.split(",")}
    workdir = Path(tempfile.mkdtemp(prefix="year-old-board-"))
    extra = {"DJANGO_SECURE_SSL_REDIRECT": "0"} if args.nginx else {}  # plain HTTP between nginx and the clients
    if args.read_seconds:
        extra["WEB_READ_SECONDS"] = args.read_seconds
    extra["WEB_VERSION_SECONDS"] = args.version_seconds
    extra["WEB_STALE_SECONDS"] = args.stale_seconds
    extra["WEB_SHARED_RENDERINGS"] = args.shared_renderings
    server = Served(workdir, database_url=database_url(name), workers=args.workers, threads=args.threads,
                    extra_env=extra)
    nginx = None
    processes = 4
    try:
        server.wait_ready()
        warmed = wait_for_warming(server) if args.shared_renderings == "1" else None
        port = server.port
        if args.nginx:
            nginx, port = start_nginx(workdir, server.port)
        print(f"gunicorn (scripts/serve.sh): {args.workers} workers x {args.threads} threads, WEB_VERSION_SECONDS="
              f"{args.version_seconds}, WEB_STALE_SECONDS={args.stale_seconds}, WEB_SHARED_RENDERINGS="
              f"{args.shared_renderings}{f' (serve.sh warmed the site pages and every task page in {warmed:.0f} s)' if warmed else ''}"
              f"{', behind nginx (deploy/nginx/board-proxy.conf)' if args.nginx else ''}; load average before: "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        print(f"{'page':26s} {'clients':>7s} {'round':5s} {'p50 ms':>8s} {'p95 ms':>8s} {'max ms':>8s} {'n':>5s} "
              f"{'5xx':>4s} {'t/o':>4s} {'prev':>4s} statuses", flush=True)
        failures, n = 0, 0
        with multiprocessing.Pool(processes) as pool:
            for round_index, clients in enumerate(int(c) for c in args.clients.split(",")):
                for page, (path, task_id) in pages.items():
                    rounds = []
                    if round_index == 0:  # the page's first rendering in this server: nothing to answer before it
                        rounds.append(("first", hammer(pool, port, path, clients, 1, args.timeout, processes,
                                                       args.nginx)))
                    n += 1
                    change_data(task_id, n)
                    # a visitor's data version is read again only after WEB_VERSION_SECONDS: wait it out, so the
                    # "cold" round meets the change (not the page from before it)
                    time.sleep(float(args.version_seconds))
                    rounds.append(("cold", hammer(pool, port, path, clients, 1, args.timeout, processes, args.nginx)))
                    # the cold round's previous renderings start the new one after their answers: the warm round
                    # measures the cache once it is there (how long visitors got the previous one is printed)
                    refreshed = wait_for_new_rendering(port, path, args.timeout)
                    rounds.append(("warm", hammer(pool, port, path, clients, args.warm_requests, args.timeout,
                                                  processes, args.nginx)))
                    for label, row in rounds:
                        print(f"{page:26s} {clients:7d} {label:5s} {row['p50']:8.1f} {row['p95']:8.1f} "
                              f"{row['max']:8.1f} {row['n']:5d} {row['5xx']:4d} {row['timeouts']:4d} "
                              f"{row['previous']:4d} {row['statuses']}"
                              + (f"  new rendering after {refreshed:.1f} s" if label == "cold" and row["previous"] else ""),
                              flush=True)
                        failures += bool(row["5xx"] or row["timeouts"])
        print(f"load average after: {os.getloadavg()[0]:.1f} (2 cores, shared with other jobs)")
        return 1 if failures else 0
    finally:
        if nginx is not None and nginx.poll() is None:
            os.killpg(nginx.pid, signal.SIGTERM)
            nginx.wait(timeout=20)
        server.stop()


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
    parser.add_argument("--in-process", action="store_true", help="per request in this process, no HTTP server")
    parser.add_argument("--read-seconds", default="", help="WEB_READ_SECONDS for the server (default: the setting's)")
    parser.add_argument("--version-seconds", default="1",
                        help="WEB_VERSION_SECONDS for the server (default 1, as docs/deployment.md sets; 0: off)")
    parser.add_argument("--stale-seconds", default="300",
                        help="WEB_STALE_SECONDS for the server (default 300, as docs/deployment.md sets; 0: off)")
    parser.add_argument("--shared-renderings", default="1", choices=["0", "1"],
                        help="WEB_SHARED_RENDERINGS for the server (default 1, as docs/deployment.md sets)")
    args = parser.parse_args()

    name = args.database or create_database()
    try:
        setup_django(name)
        if not args.database:
            info = fill(name, args.weeks, args.releases)
            print(f"database {name}: {info['tasks']} tasks, {info['cpu_configs']:,} CPU-task configs x "
                  f"{len(info['releases'])} releases x {info['weeks']} weeks = {info['results']:,} results + "
                  f"{info['evidence_results']:,} CPU-evidence results, COPY'd in {info['seconds']:.0f} s "
                  f"(ANALYZE {info['analyze_seconds']:.0f} s; {info['latest_rows']:,} newest-verdict rows in "
                  f"{info['latest_seconds']:.0f} s)", flush=True)
        if args.fill_only:
            return 0
        if args.in_process:
            return in_process(args)
        return measure(name, args)
    finally:
        if not (args.keep or args.database):
            drop_database(name)
        elif not args.database:
            print(f"kept database {name} (drop it with: psql -h 127.0.0.1 -U postgres -d test "
                  f"-c 'DROP DATABASE \"{name}\" WITH (FORCE)')")


if __name__ == "__main__":
    raise SystemExit(main())
