"""Paddle flags on a run (issue 35 item 5): ``retest --paddle-flags`` and the staff form set them in the run's
workers, each stored result's run records them and the pages show them; a flag the run's release does not define
(asked of the release's own Paddle: the real 3.0.0 env) or a malformed string is refused before anything is
queued."""
from importlib.metadata import version
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django_q.models import OrmQ

from apitester.builds import probe_flags
from tracker.models import ConfigResult, FailingConfig, TestRun
from tracker.services import paddle_envs
from tracker.services.runs import WrongBuild, create_run, execute_run, store_result

from ..factories import make_task
from .conftest import OLD_RELEASE

pytestmark = pytest.mark.django_db

MAIN = version("paddlepaddle")
FLAG = "FLAGS_use_accuracy_compatible_kernel"
# Depthwise conv2d_transpose (groups == in_channels): the path the flag switches on this CPU build (see
# tests/engine/test_paddle_flags.py for what changes: the float16 error names the kernel dispatched to).
DEPTHWISE_F16 = 'paddle.nn.functional.conv2d_transpose(Tensor([2, 4, 5, 5],"float16"), Tensor([4, 1, 3, 3],"float16"), stride=2, groups=4, )'
DEPTHWISE_F32 = 'paddle.nn.functional.conv2d_transpose(Tensor([2, 4, 5, 5],"float32"), Tensor([4, 1, 3, 3],"float32"), stride=2, groups=4, )'


def _nothing_queued():
    assert not TestRun.objects.exists() and not OrmQ.objects.exists() and not ConfigResult.objects.exists()


def test_a_flag_3_0_0_does_not_define_is_refused_naming_the_release_and_nothing_is_queued(old_env, monkeypatch):
    make_task(41, "paddle.nn.functional.conv2d_transpose", [DEPTHWISE_F32])
    with pytest.raises(CommandError) as caught:
        call_command("retest", "--task", "41", "--releases", OLD_RELEASE, "--paddle-flags", f"{FLAG}=1")
    assert f"Paddle {OLD_RELEASE} does not define {FLAG}" in str(caught.value)
    assert "nothing queued" in str(caught.value)
    _nothing_queued()
    # The main release defines it, so a matrix over both is refused as well, naming the release that lacks it.
    with pytest.raises(CommandError, match=f"Paddle {OLD_RELEASE} does not define {FLAG}"):
        call_command("retest", "--task", "41", "--releases", f"{OLD_RELEASE},{MAIN}", "--paddle-flags", f"{FLAG}=1")
    _nothing_queued()
    # 3.0.0's answer is kept per release build: asked again, its Paddle is not started again.
    assert paddle_envs._DEFINED_FLAGS[(old_env.python, f"{OLD_RELEASE} {old_env.paddle_commit}", FLAG)] is None

    def not_again(*args, **kwargs):
        raise AssertionError("the 3.0.0 env was probed a second time")
    monkeypatch.setattr(paddle_envs, "probe_flags", not_again)
    with pytest.raises(CommandError, match=f"Paddle {OLD_RELEASE} does not define"):
        call_command("retest", "--task", "41", "--releases", OLD_RELEASE, "--paddle-flags", f"{FLAG}=1")
    _nothing_queued()
    # What the cache holds is what 3.0.0's own interpreter answers, and a flag both releases define passes.
    assert probe_flags(old_env.python, [FLAG, "FLAGS_check_nan_inf"]) == {FLAG: None, "FLAGS_check_nan_inf": "bool"}


@pytest.mark.parametrize("flags, said", [
    (FLAG, "write NAME=VALUE"),
    (f"{FLAG}=", f"Paddle flag {FLAG} has no value"),
    ("accuracy_compatible=1", "a name is FLAGS_ followed by"),
    (f"{FLAG}=1,{FLAG}=0", "is given twice"),
    (f"{FLAG}=on;rm", "malformed value"),
    (f"{FLAG}=maybe", "is a boolean: give 1 or 0"),   # well-formed, but not a value the flag takes
    ("FLAGS_no_such_flag_here=1", f"Paddle {MAIN} does not define FLAGS_no_such_flag_here"),
])
def test_a_malformed_or_unknown_flag_string_gets_a_clear_error_and_queues_nothing(flags, said):
    make_task(42, "paddle.nn.functional.conv2d_transpose", [DEPTHWISE_F32])
    for extra in ([], ["--inline"]):
        with pytest.raises(CommandError) as caught:
            call_command("retest", "--task", "42", "--paddle-flags", flags, *extra)
        assert said in str(caught.value) and "nothing queued" in str(caught.value)
        _nothing_queued()


def test_paddle_flags_are_refused_for_an_existing_run():
    with pytest.raises(CommandError, match="an existing run keeps the flags it was queued with"):
        call_command("retest", "--resume", "--paddle-flags", f"{FLAG}=1")


def test_a_real_inline_run_records_the_flags_its_worker_ran_with_and_the_pages_show_them(client):
    task = make_task(43, "paddle.nn.functional.conv2d_transpose", [DEPTHWISE_F16, DEPTHWISE_F32])
    out = StringIO()
    call_command("retest", "--task", "43", "--inline", "--workers", "1", "--paddle-flags", f"{FLAG}=true", stdout=out)
    run = TestRun.objects.get()
    assert f"run {run.pk}: 2 configs, lane cpu, Paddle flags {FLAG}=1" in out.getvalue()
    assert run.state == "done" and run.paddle_flags == {FLAG: "1"}  # checked, and the bool spelled 1
    results = {r.failing_config.config: r for r in ConfigResult.objects.select_related("failing_config", "run")}
    # The worker read the flag: the depthwise call went to conv2d_transpose (with the flag off Paddle names
    # depthwise_conv2d_transpose here: tests/engine/test_paddle_flags.py runs both).
    f16 = results[DEPTHWISE_F16]
    assert f16.status == "paddle_error" and "of kernel `conv2d_transpose` is not registered" in f16.message
    assert results[DEPTHWISE_F32].status == "pass"
    assert all(r.run.paddle_flags == {FLAG: "1"} for r in results.values())

    shown = f"{FLAG}=1"
    assert shown in client.get(f"/runs/{run.pk}").content.decode()
    assert shown in client.get("/runs").content.decode()
    assert client.get(f"/api/runs/{run.pk}").json()["paddle_flags"] == {FLAG: "1"}
    task_page = client.get(f"/tasks/{task.number}").content.decode()
    assert f'<a href="/runs/{run.pk}">#{run.pk}</a>' in task_page
    assert task_page.count(shown) == 2  # beside the run named in each config's row of the latest verdicts
    zh = client.get(f"/tasks/{task.number}", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert f"Paddle 标志: <code>{shown}</code>" in zh

    # A run without flags shows none.
    plain = create_run("task", tasks=[43])
    assert plain.paddle_flags == {} and "Paddle flags" not in client.get(f"/runs/{plain.pk}").content.decode()


def test_a_verdict_given_with_other_flags_than_the_runs_is_never_stored():
    make_task(44, "paddle.nn.functional.conv2d_transpose", [DEPTHWISE_F32])
    run = create_run("task", tasks=[44], paddle_flags=f"{FLAG}=1")
    fc = FailingConfig.objects.get()
    verdict = {"status": "pass", "message": "ok"}
    build = {"paddle_version": MAIN, "paddle_commit": "x", "torch_version": version("torch")}
    for read in (None, {FLAG: False}, {FLAG: True, "FLAGS_check_nan_inf": False}):
        with pytest.raises(WrongBuild, match=f"runs with Paddle flags {FLAG}=1"):
            store_result(run, fc, verdict, 0.1, build={**build, **({"paddle_flags": read} if read else {})})
    assert not ConfigResult.objects.exists()
    # A run without flags refuses a verdict from a worker that read some.
    plain = create_run("task", tasks=[44])
    with pytest.raises(WrongBuild, match="runs with Paddle flags none"):
        store_result(plain, fc, verdict, 0.1, build={**build, "paddle_flags": {FLAG: True}})
    assert store_result(run, fc, verdict, 0.1, build={**build, "paddle_flags": {FLAG: True}})
    assert ConfigResult.objects.get().run == run


def test_the_executor_ends_a_run_whose_workers_did_not_read_its_flags():
    """A flag that got past the request's check (the run row edited, the env changed since) never gives a verdict:
    the worker reports what paddle.get_flags read, and the run ends failed saying so."""
    make_task(46, "paddle.nn.functional.conv2d_transpose", [DEPTHWISE_F32])
    run = create_run("task", tasks=[46])
    TestRun.objects.filter(pk=run.pk).update(paddle_flags={"FLAGS_no_such_flag_here": "1"})
    execute_run(run.pk, workers=1)
    run.refresh_from_db()
    assert run.state == "failed" and not ConfigResult.objects.exists()
    assert "runs with Paddle flags FLAGS_no_such_flag_here=1 but the worker read FLAGS_no_such_flag_here=None" \
        in run.message


@pytest.fixture
def staff(client):
    client.force_login(User.objects.create_user("maint", password="pw", is_staff=True))


def test_the_staff_form_queues_a_run_with_flags_and_refuses_bad_ones(client, staff, old_env):
    make_task(45, "paddle.nn.functional.conv2d_transpose", [DEPTHWISE_F32])
    page = client.get("/tasks/45").content.decode()
    assert 'name="paddle_flags"' in page  # the re-test form and the every-release form take flags

    def start(flags, **more):
        response = client.post("/runs/start", {"scope": "task", "task": "45", "lane": "cpu", "next": "/tasks/45",
                                               "paddle_flags": flags, **more})
        messages = [str(m) for m in response.wsgi_request._messages]
        client.get(response["Location"])  # shown there, so the next request's messages are its own
        return response, messages

    for flags, said in ((FLAG, "write NAME=VALUE"), (f"{FLAG}=2", "is a boolean")):
        response, messages = start(flags)
        assert response.status_code == 302 and response["Location"] == "/tasks/45"
        assert len(messages) == 1 and said in messages[0] and "nothing queued" in messages[0]
        _nothing_queued()
    response, messages = start(f"{FLAG}=1", releases=OLD_RELEASE)  # "Re-test on every release" with a flag
    assert f"Paddle {OLD_RELEASE} does not define {FLAG}" in messages[0]
    _nothing_queued()

    response, messages = start(f" {FLAG}=1 ")
    run = TestRun.objects.get()
    assert response["Location"] == f"/runs/{run.pk}" and run.paddle_flags == {FLAG: "1"}
    assert OrmQ.objects.count() == 1 and run.state == "queued"
    assert messages == [f"Run {run.pk} queued: 1 configs, with Paddle flags {FLAG}=1."]
    assert f"{FLAG}=1" in client.get("/tasks/45").content.decode()  # the run in progress names its flags
