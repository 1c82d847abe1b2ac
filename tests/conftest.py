"""Fixtures shared by every test directory.

The browser is session-scoped and defined once here: Playwright's sync API runs an event loop, and a
second sync_playwright() started while another is alive fails, so all browser tests share this one.
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
