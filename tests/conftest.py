"""Fixtures shared by every test directory, and the rules that let the suite run in parallel.

The browser is session-scoped and defined once here: Playwright's sync API runs an event loop, and a
second sync_playwright() started while another is alive fails, so all browser tests of one process share
this one (under pytest-xdist: one chromium per worker).

scripts/test.sh runs the suite with pytest-xdist (`-n <cores> --dist loadfile`): each test file runs whole on
one worker process, files run side by side. A test is xdist-safe when it follows these rules:

- Ports: bind port 0 and read the port back (live_server, tests/github/fake_github.py, free_port() in
  tests/deployment/conftest.py); never a fixed port.
- Files: write only under tmp_path / tmp_path_factory; never under the repository, var/ or /tmp by a fixed
  name. var/paddle-envs is read-only: a test that builds or breaks an env points settings.PADDLE_ENVS_DIR
  at tmp_path.
- Databases: the test database of the pytest process is the worker's own (pytest-django suffixes it per
  worker). A process the test starts gets its own DATABASE_URL — a SQLite file in tmp_path or a uniquely
  named PostgreSQL database (tests/deployment/conftest.py `postgres_db`) — never the default db.sqlite3.
- Redis: a key prefix of the test's own (`redis_ns`); never FLUSHDB / FLUSHALL.
- Environment: monkeypatch.setenv, or an `env=` for the process started; never os.environ[...] = in a
  test (other tests of the same worker would inherit it).
- Processes: start them in their own session and stop them by pid / process group at teardown; never
  by name (another worker runs the same commands).
- Time: another worker shares the cores, so a wait has a generous deadline (tests/waiting.py `wait_for`);
  a time budget asserted on the machine's speed measures CPU time or a ratio, not wall time.
- State shared inside a file (module-scoped fixtures) is fine — a file stays on one worker — but no file
  relies on another having run, or on the order of files.
- A file that takes 15 s or more goes in SLOW_FILES below, so that it starts first instead of finishing last.
"""
import os

import pytest

# The settings turn DEBUG on inside pytest; the manage.py / server processes that tests start inherit
# this so that they too run as a developer's machine would (tests of the production settings pass
# their own environment).
os.environ.setdefault("DJANGO_DEBUG", "1")

CHROMIUM = "/usr/bin/chromium"


@pytest.fixture(scope="session")
def browser():
    """Debian's chromium driven by Playwright (never a downloaded browser)."""
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (scripts/test.sh does)")
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made by the test
    # body in the same thread are still synchronous, so allow them explicitly.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A fresh 1400×1000 context; console errors and page errors collect in page.console_errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.console_errors = errors
    yield page
    context.close()


# Files of 15 s or more (measured: docs/measurements/suite-speed.md), slowest first. pytest-xdist hands out files
# in collection order (scripts/test.sh: --no-loadscope-reorder), so these start first and the short files fill
# the other worker around them instead of one long file finishing alone at the end.
SLOW_FILES = [  # seconds summed over the file's tests (run 2 of docs/measurements/suite-speed.md)
    # (~: run 2's figure × the file's after/before ratio alone, "2026-12-07: trimmed" in suite-speed.md)
    "tests/runner/test_shards_releases.py",  # 142 s
    "tests/runner/test_pool.py",  # ~112 s (191 s before the trim)
    "tests/runner/test_resume.py",  # ~96 s (106 s)
    "tests/deployment/test_shards_deployment.py",  # 92 s
    "tests/runner/test_conventions_board.py",  # 60 s (a run, then a diagnosis process)
    "tests/hardening/test_public_reads.py",  # 37 s at load 12 (two tasks' run histories, pages read cold)
    "tests/runner/test_shards_hosts.py",  # 83 s
    "tests/deployment/test_shared_deployment.py",  # 78 s
    "tests/engine/test_cli.py",  # 69 s
    "tests/charts/test_browser.py",  # 65 s
    "tests/runner/test_diagnosis_board.py",  # ~62 s (84 s)
    "tests/releases/test_bisect_runs.py",  # ~60 s (200 s)
    "tests/runner/test_runs.py",  # 59 s
    "tests/engine/test_draws.py",  # 52 s
    "tests/runner/test_gradient_reading_board.py",  # 42-58 s alone on the loaded 2-core host (load average 11)
    "tests/board/test_report_import.py",  # 50 s
    "tests/hardening/test_concurrent_writes.py",  # 40 s
    "tests/hardening/test_fuzz_staff_forms.py",  # 38 s
    "tests/engine/test_verdict_layers.py",  # 35 s
    "tests/engine/test_references.py",  # 30 s (refs-core branch, a loaded 2-core machine)
    "tests/runner/test_shards.py",  # 30 s
    "tests/runner/test_first_verdicts.py",  # ~23 s (29 s)
    "tests/runner/test_requeue_limit.py",  # 27 s
    "tests/runner/test_flakiness.py",  # 20-95 s on the loaded 2-core host (two runs, a fresh worker pool each)
    "tests/qa/test_site_walk.py",  # 24 s
    "tests/hardening/test_first_sight_race.py",  # 23 s
    "tests/engine/test_conventions.py",  # 25 s
    "tests/engine/test_repro.py",  # 21 s
    "tests/runner/test_hostile_configs.py",  # 20 s
    "tests/hardening/test_webhook_stalls.py",  # 18 s
    "tests/releases/test_release_runs.py",  # 18 s
    # (the next two measured on the shared 2-core host at load 5 with other suites running: 30 s and 33 s; at load 10
    # 48 s and 60-90 s — each starts paddle+torch processes: flag probes, pools, CLI runs)
    "tests/releases/test_paddle_flags.py",
    "tests/engine/test_paddle_flags.py",
    "tests/hardening/test_shared_limits.py",  # 17 s
    # (issue 45, serve.sh and nginx limits; on the shared 2-core host at load 12: 65 s and 57 s, half of it the
    # server's start)
    "tests/hardening/test_slow_clients.py",
    "tests/hardening/test_nginx_proxy.py",
    "tests/board/test_board_rows_browser.py",  # 20-45 s (issue 37 round, on a loaded 2-core machine)
    "tests/engine/test_threads_axis.py",  # 30 s (issue 46: a CLI process and paddle+torch in-process, loaded host)
    "tests/runner/test_provenance_runs.py",  # issue 46: two real runs (1 and 2 threads), a worker pool each
]


def pytest_collection_modifyitems(config, items):
    """The slow files first (in SLOW_FILES order), every other test in its collected order."""
    rank = {path: index for index, path in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_sessionfinish(session, exitstatus):
    """A run in which no test passed (every one skipped) fails: a suite that proves nothing must not read
    as green (no test collected at all is pytest's exit 5, which scripts/test.sh fails). Checked where the
    results are reported: the xdist controller, or the one pytest process."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if hasattr(session.config, "workerinput") or exitstatus != 0 or reporter is None:
        return
    if not reporter.stats.get("passed"):
        reporter.write_line("no test passed (every test was skipped): failing on purpose", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_sessionstart(session):
    """Tests that need the PaddleAPITest data fail without it, everywhere; in CI the run refuses
    to start at all, so a misconfigured job fails at once with one clear message."""
    if os.environ.get("CI", "").lower() not in {"1", "true", "yes"}:
        return
    from apitester.reports import reports_dir

    reports = reports_dir() / "reports"
    if not reports.is_dir():
        raise pytest.UsageError(f"CI run without the PaddleAPITest reports at {reports} (set PADDLEAPITEST_REPORTS)")


@pytest.fixture
def webhook_settings(settings):
    """The GitHub webhook as the board is configured for the tracking issue, signed with
    tests.github.payloads.WEBHOOK_SECRET (a module opts in with pytest.mark.usefixtures("webhook_settings"))."""
    from tests.github.payloads import WEBHOOK_SECRET

    settings.GITHUB_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.GITHUB_TRACKING_ISSUE = "PaddlePaddle/Paddle#72667"
    settings.GITHUB_PR_REPOS = ["PaddlePaddle/Paddle", "PFCCLab/PaddleAPITest"]
    settings.GITHUB_BOT_ACCOUNTS = ["paddle-bot"]
    return settings


@pytest.fixture(autouse=True)
def _default_language():
    """Each test starts in the site's default language: a zh page request leaves its language active in the
    thread, and the next test's selector texts would read Chinese."""
    from django.utils import translation

    yield
    translation.deactivate()
