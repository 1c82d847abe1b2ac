"""Issue 45 item 6: the worker host a run ran on is for staff only — on the run page and in GET /api/runs/<id>
(the `host` key stays, empty for visitors: scripts read it)."""
import pytest
from django.contrib.auth.models import User

from tracker.models import TestRun
from tracker.services.runs import create_run

from tests.factories import make_task

pytestmark = pytest.mark.django_db

HOST = "gpu-box-7.internal.example:4242"


@pytest.fixture
def run_on_a_host():
    make_task(5, "paddle.abs", ['paddle.abs(Tensor([2, 2],"float32"), )'])
    run = create_run("task", tasks=[5], lane="cpu")
    TestRun.objects.filter(pk=run.pk).update(host=HOST, paddle_version="3.3.1", torch_version="2.13.0")
    return run


def test_visitors_never_see_the_worker_host(client, run_on_a_host):
    page = client.get(f"/runs/{run_on_a_host.pk}").content.decode()
    assert "Paddle 3.3.1" in page and "gpu-box-7" not in page
    body = client.get(f"/api/runs/{run_on_a_host.pk}").json()
    assert body["host"] == "" and "gpu-box-7" not in str(body)


def test_staff_see_it(client, run_on_a_host):
    client.force_login(User.objects.create_user("maint", is_staff=True))
    assert f'<span id="run-host">{HOST}</span>' in client.get(f"/runs/{run_on_a_host.pk}").content.decode()
    assert client.get(f"/api/runs/{run_on_a_host.pk}").json()["host"] == HOST
