"""The task card in a real browser (Debian's chromium via Playwright, one live server and one browser for the
module): on a failing task (the real engine's verdict and diagnosis), a task fixed in a release and a documented
difference, in English and Chinese; `#summary` is the first element of the page's main content; the copy
button puts the smallest repro on the clipboard.

docs/screenshots/task-card.png is taken here (the failing task, English, 1440 px wide):
    SCREENSHOT_DIR=docs/screenshots .venv/bin/python -m pytest -p no:xdist tests/summary/test_task_card_browser.py
"""
import os
from pathlib import Path

import pytest

from tests.runner.test_verdict_layers import embedding_padding_configs

from . import cards

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# number -> language -> (the card's facts that must be there: selector -> words)
EXPECTED = {
    cards.FAILING: {
        "en": {".card-diff": "float16 paddle.Tensor.__mul__ of 64 elements: the worst element is inf in Paddle, "
                             "2872 in Torch; Paddle is off a float64 reference by inf.",
               ".card-off": "Paddle is off the float64 value; Torch is close to it",
               ".card-standing": "failing on every release tested (3.3.1)",
               ".card-repro": "python -m apitester --api_config='paddle.Tensor.__mul__(Tensor([1, 1],\"float16\")",
               ".card-next": "[Accuracy diff No.301] …"},
        "zh-hans": {".card-diff": "float16 paddle.Tensor.__mul__，共 64 个元素：差异最大的元素在 Paddle 中为 inf，"
                                  "在 Torch 中为 2872；Paddle 与 float64 参考值相差 inf。",
                    ".card-off": "Paddle 偏离 float64 精确值；Torch 接近它",
                    ".card-standing": "在测试过的每个版本上都失败（3.3.1）",
                    ".card-repro": "诊断找到的最小失败输入",
                    ".card-next": "修复的 PR 标题这样写，看板才能关联它："},
    },
    cards.FIXED: {
        "en": {".card-standing": "fixed in 3.1.0 — passes on every later release tested (3.1.0, 3.3.1); fails on 3.0.0",
               ".card-diff": "On Paddle 3.0.0, paddle.clip: its values differ from Torch's, max abs 3.4e+38"},
        "zh-hans": {".card-standing": "已在 3.1.0 修复——此后测试的每个版本都通过（3.1.0, 3.3.1）；在 3.0.0 上失败",
                    ".card-diff": "在 Paddle 3.0.0 上，paddle.clip：其数值与 Torch 不同，最大绝对误差 3.4e+38"},
    },
    cards.BY_DESIGN: {
        "en": {".card-standing": "differs by design: Paddle documents an all-zero output row",
               ".card-diff": "(a documented difference: Paddle does this by design)",
               ".card-off": "not yet diagnosed"},
        "zh-hans": {".card-standing": "按设计存在差异：Paddle documents an all-zero output row",
                    ".card-diff": "（有文档说明的差异：Paddle 有意如此设计）",
                    ".card-off": "尚未诊断"},
    },
}
SCREENSHOTS = Path(os.environ["SCREENSHOT_DIR"]) if os.environ.get("SCREENSHOT_DIR") else None
HEADINGS = {"en": "Task No.{n} in brief", "zh-hans": "任务 No.{n} 概要"}


def _page(browser, language: str, **options):
    context = browser.new_context(viewport={"width": 1440, "height": 1000},
                                  extra_http_headers={"Accept-Language": language}, **options)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda msg: page.console_errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: page.console_errors.append(str(exc)))
    return context, page


def _screenshot(page, path: Path):
    """The top of the page down to the card's bottom edge, the viewport's full 1440 px wide."""
    bottom = page.evaluate("() => document.getElementById('summary').getBoundingClientRect().bottom")
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), clip={"x": 0, "y": 0, "width": 1440, "height": bottom + 12})


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_card_on_a_failing_a_fixed_and_a_by_design_task_in_english_and_chinese(live_server, browser):
    cards.failing_task()
    cards.fixed_task()
    cards.by_design_task(embedding_padding_configs(1)[0])
    for language in ("en", "zh-hans"):
        context, page = _page(browser, language)
        for number, expected in EXPECTED.items():
            page.goto(f"{live_server.url}/tasks/{number}")
            first = page.evaluate("() => document.querySelector('main').firstElementChild.id")
            assert first == "summary", (language, number)
            card = page.locator("#summary")
            assert card.is_visible()
            assert card.locator("h2").inner_text() == HEADINGS[language].format(n=number)
            for selector, words in expected[language].items():
                assert _words(words) in _words(card.locator(selector).inner_text()), (language, number, selector)
            # The card sits above the panels it summarises.
            above = page.evaluate("() => document.getElementById('summary').getBoundingClientRect().bottom"
                                  " <= document.getElementById('diagnosis').getBoundingClientRect().top")
            assert above
            if SCREENSHOTS and language == "en" and number == cards.FAILING:
                _screenshot(page, SCREENSHOTS / "task-card.png")
        # Not staff: no diagnose button on the card, a link to the diagnosis panel instead.
        page.goto(f"{live_server.url}/tasks/{cards.BY_DESIGN}")
        assert page.locator("#summary form.card-diagnose").count() == 0
        assert page.locator("#summary .card-off a[href='#diagnosis']").count() == 1
        assert page.console_errors == [], (language, page.console_errors)
        context.close()


def test_the_copy_button_puts_the_smallest_repro_on_the_clipboard(live_server, browser):
    cards.failing_task(diagnose=False)
    context, page = _page(browser, "en", permissions=["clipboard-read", "clipboard-write"])
    page.goto(f"{live_server.url}/tasks/{cards.FAILING}")
    command = page.locator("#summary-repro").inner_text()
    assert command.startswith("python -m apitester --accuracy=True --api_config='paddle.Tensor.__mul__(")
    button = page.locator("#summary .card-repro button.copy")
    button.click()
    page.wait_for_function("() => document.getElementById('summary-clipboard').value.length > 0", timeout=5000)
    assert page.locator("#summary-clipboard").input_value() == command
    assert button.get_attribute("data-copied-text") == command
    assert page.evaluate("() => navigator.clipboard.readText()") == command
    assert button.inner_text() == "Copied"
    # The confirm step's copy button copies its own command.
    page.locator("#summary .step-confirm button.copy").click()
    page.wait_for_function("() => document.getElementById('summary-clipboard').value.includes('--accuracy=True')"
                           " && !document.getElementById('summary-clipboard').value.includes('--draw')", timeout=5000)
    assert page.evaluate("() => navigator.clipboard.readText()") == page.locator("#summary-step-confirm").inner_text()
    assert page.console_errors == []
    context.close()
