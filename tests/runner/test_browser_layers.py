"""The task page shows a verdict's two layers in a real browser (issue 11)."""
import pytest
from django.utils import timezone

from apitester.engine.execute import run_config
from tracker.models import TestRun
from tracker.services.runs import create_run, store_result

from .conftest import make_task
from .test_verdict_layers import embedding_padding_configs

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_task_page_shows_strict_and_adapted_layers(live_server, page):
    config = embedding_padding_configs(1)[0]
    task = make_task(42, "paddle.nn.functional.embedding", [config])
    run = create_run("task", tasks=[42], lane="cpu")
    verdict = run_config(config)  # the real engine, in this process
    store_result(run, task.failing_configs.get(), verdict.to_dict(), verdict.seconds)
    TestRun.objects.filter(pk=run.pk).update(state="done", done=1, finished_at=timezone.now(),
                                             paddle_version="3.3.1")

    page.goto(f"{live_server.url}/tasks/42")
    verification = page.text_content(".verification")
    assert "differs from Torch by design" in verification and "fix verified" not in verification
    row = page.locator("#latest-verdicts tbody tr").first
    assert row.locator(".status-documented_difference").first.is_visible()
    strict = row.locator(".layer-strict").text_content()
    adapted = row.locator(".layer-adapted").text_content()
    assert "strict (plain Torch call)" in strict and "accuracy_error" in strict and "(forward)" in strict
    assert "adapted" in adapted and "pass" in adapted
    adaptation = row.locator(".adaptation-documented_semantics")
    assert adaptation.is_visible() and "padding_idx" in adaptation.text_content()
    assert adaptation.locator("a").get_attribute("href").endswith("/pull/73445")
