"""Server time of every dashboard page on a full-size database.

Fills a fresh SQLite database (a temp file) with the 183 board tasks (the committed board fixture when
present, else made-up tasks) and 50 000 ConfigResults over 20 runs from tracker.services.synthetic, then
requests each page through Django's test client and prints the median and worst time of N requests.
The target is < 300 ms per page.

    .venv/bin/python benchmarks/pages.py [--results 50000] [--runs 20] [--repeat 5]
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--budget-ms", type=float, default=300.0)
    args = parser.parse_args()

    db_path = Path(tempfile.mkdtemp()) / "pages-benchmark.sqlite3"
    os.environ["DATABASE_URL"] = f"sqlite:///{db_path}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["DJANGO_DEBUG"] = "0"
    # Production settings need a key; the pages are fetched as over HTTPS (secure=True below), and the
    # hashed static names need collectstatic's manifest.
    os.environ.setdefault("DJANGO_SECRET_KEY", "pages-benchmark-" + os.urandom(16).hex())
    os.environ["DJANGO_STATIC_ROOT"] = str(db_path.parent / "static")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("collectstatic", interactive=False, verbosity=0)
    from django.test import Client

    from tracker.models import ConfigResult, Task
    from tracker.services.synthetic import generate_results

    call_command("migrate", verbosity=0)
    fixture = ROOT / "fixtures" / "board.json"
    if fixture.exists():
        call_command("loaddata", str(fixture), verbosity=0)
    started = time.perf_counter()
    info = generate_results(runs=args.runs, results=args.results, seed=0)
    print(f"database: {Task.objects.count()} tasks, {ConfigResult.objects.count()} ConfigResults over "
          f"{info['runs']} runs (generated in {time.perf_counter() - started:.1f} s)")

    busiest = ConfigResult.objects.values_list("task__number", flat=True).first()
    result_with_map = ConfigResult.objects.filter(diff_map__isnull=False).values_list("id", "task__number").first()
    pages = [
        "/", "/?kernel=CPU&status=open", "/api/tasks", f"/tasks/{busiest}", f"/api/tasks/{busiest}",
        "/charts/overview", "/charts/heatmap", "/charts/heatmap?metric=log10rel", "/charts/contributors",
        "/charts/pass-fail-transitions", "/regressions", "/runs",
    ]
    if result_with_map:
        pages.append(f"/tasks/{result_with_map[1]}/results/{result_with_map[0]}/diff")
    client = Client()
    slowest = 0.0
    failures = 0
    print(f"{'page':45s} {'median ms':>10s} {'max ms':>8s} status")
    for url in pages:
        times, status = [], None
        for _ in range(args.repeat + 1):
            t0 = time.perf_counter()
            response = client.get(url, secure=True)
            times.append((time.perf_counter() - t0) * 1000)
            status = response.status_code
        times = times[1:]  # the first request warms template and URL caches
        med, worst = statistics.median(times), max(times)
        if status == 404:
            print(f"{url:45s} {'-':>10s} {'-':>8s} 404 (page not in this build)")
            failures += 1
            continue
        slowest = max(slowest, med)
        ok = status == 200 and med < args.budget_ms
        failures += not ok
        print(f"{url:45s} {med:10.1f} {worst:8.1f} {status}{'' if ok else '  <-- over budget or error'}")
    print(f"slowest page median: {slowest:.1f} ms (budget {args.budget_ms:.0f} ms); pages failing: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
