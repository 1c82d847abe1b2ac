"""The decision table and the run page at 1,440 px in a real browser, in English and Chinese (issue #47): no sideways
scrolling, every table row one line high, ULP distances compact."""
import pytest

from tracker.models import TestRun

from .test_alignment_decisions import board, reading

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LONG_API = "paddle.incubate.nn.functional.fused_multi_head_attention_with_a_long_name"
DECISIONS = {"en": {"keep_paddle": "keep Paddle's kernel", "align_torch": "align to Torch", "undecided": "undecided"},
             "zh-hans": {"keep_paddle": "保留 Paddle 的 kernel", "align_torch": "对齐到 Torch", "undecided": "未决定"}}

FITS = """(selector) => {
  const rows = [...document.querySelectorAll(selector + " tbody tr")];
  const cell = getComputedStyle(document.querySelector(selector + " tbody td"));
  return {scroll: document.documentElement.scrollWidth, inner: window.innerWidth, rows: rows.length,
          tallest: Math.max(...rows.map(r => r.getBoundingClientRect().height)),
          line: parseFloat(cell.lineHeight) || 1.5 * parseFloat(cell.fontSize)};
}"""


def assert_fits(page, selector):
    found = page.evaluate(FITS, selector)
    assert found["rows"] > 0, selector
    assert found["scroll"] <= found["inner"], f"{page.url}: {found['scroll']} px wide in a {found['inner']} px window"
    # one line of text plus the cell's padding and border: a second line would add another line height
    assert found["tallest"] < 2 * found["line"] + 4, f"{page.url} {selector}: a row {found['tallest']} px high"


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_decision_table_and_run_page_fit_1440_px(live_server, browser, language):
    noisy = [reading(1 + i, "torch_off", nondeterministic="paddle" if i == 5 else "") for i in range(6)]
    board({LONG_API: [reading(1234567890, "paddle_off", status="accuracy_error"), reading(2, "paddle_off")],
           "paddle.keep": [reading(1, "torch_off"), reading(0)], "paddle.noisy": noisy,
           "paddle.unread": [reading(9)]})
    run = TestRun.objects.first()
    long_config = f'{LONG_API}(Tensor([{", ".join(["2"] * 60)}],"float32"), )'
    from tracker.models import FailingConfig
    from tracker.services.runs import store_result
    task = FailingConfig.objects.filter(config__startswith=LONG_API).first().task
    config = FailingConfig.objects.create(task=task, config=long_config, config_hash="long")
    store_result(run, config, {**reading(77, status="accuracy_error"), "max_abs": 0.123456789012, "max_rel": 3.5e-7,
                               "message": "the outputs differ " * 30, "worst_index": list(range(60))}, 0.1)

    context = browser.new_context(viewport={"width": 1440, "height": 900})
    context.add_cookies([{"name": "django_language", "value": language, "url": live_server.url}])
    page = context.new_page()
    try:
        page.goto(f"{live_server.url}/alignment")
        assert_fits(page, "#alignment")
        row = page.locator(f'#alignment tr[data-api="{LONG_API}"]')
        assert row.locator("td.num").nth(6).text_content() == "1.2e9"  # max ULP, compact
        for decision, text in DECISIONS[language].items():
            assert page.locator(f'#alignment tr[data-decision="{decision}"] td.decision').first.text_content() == text

        page.goto(f"{live_server.url}/alignment?api={LONG_API}&dtype=float32")
        assert_fits(page, "#alignment-configs")
        page.goto(f"{live_server.url}/runs/{run.pk}")
        assert_fits(page, "#run-results")
        assert page.locator("#run-results tbody tr").count() == 12
        # a matrix run: its lanes' table, one line each however many statuses a lane counts
        matrix = TestRun.objects.create(scope={"kind": "tasks"}, lane="cpu", release="matrix", state="done", total=12)
        TestRun.objects.filter(pk=run.pk).update(parent=matrix)
        page.goto(f"{live_server.url}/runs/{matrix.pk}")
        assert_fits(page, "#release-lanes")
    finally:
        context.close()
