"""Screenshot of the board at 1440 px, as a newcomer sees it after `bash scripts/run.sh`: docs/screenshots/board.png.

    .venv/bin/python scripts/screenshot_board.py [--language en|zh-hans] [--out docs/screenshots/board.png]

A throwaway SQLite database in a temporary directory gets the migrations and `bootstrap_board` (the board fixture,
and PaddleAPITest's failing configs when PADDLEAPITEST_REPORTS / ../shared has them); `runserver` serves it on a free
127.0.0.1 port and Debian's chromium (Playwright, headless) takes the first screen of the board. Nothing outside
the temporary directory and the output file is touched.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
WIDTH, HEIGHT = 1440, 900


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def manage(env: dict, *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)


def wait_ready(url: str, deadline: float = 120) -> None:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"the board did not answer at {url} within {deadline:.0f} s")


def screenshot(url: str, language: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        context.add_cookies([{"name": "django_language", "value": language, "url": url}])
        page = context.new_page()
        page.goto(url + "/")
        page.wait_for_selector("table.board tbody tr")
        out.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(out), full_page=False)
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", default="en", choices=["en", "zh-hans"])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots" / "board.png")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="board-shot-") as tmp:
        env = {**os.environ, "DJANGO_DEBUG": "1", "DATABASE_URL": f"sqlite:///{Path(tmp) / 'board.sqlite3'}"}
        manage(env, "migrate", "--noinput")
        manage(env, "bootstrap_board")
        port = free_port()
        server = subprocess.Popen([sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url)
            screenshot(url, options.language, options.out)
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)
    print(f"wrote {options.out} ({WIDTH}×{HEIGHT}, {options.language})")


if __name__ == "__main__":
    main()
