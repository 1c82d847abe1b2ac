"""The shared deployment, end to end on the real servers: PostgreSQL holds the board, Redis carries the
django-q2 queue, and every component is a real `manage.py` process (migrate, bootstrap_board, qcluster,
retest, runserver) started with DATABASE_URL / REDIS_URL the way a deployment sets them.

The tests of this module share one deployment (database, Redis namespace, worker, web server) to
stay quick; they run in file order (the CPU run test starts the worker only after it has seen the job
waiting in Redis), and each one also works when selected on its own.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import signal
import threading
import time
from importlib.metadata import version

import pytest

from tests.github import payloads

from .conftest import (
    CLIP_CPU_TASK, CLIP_GPU_TASK, CPU_CONFIGS, GPU_CONFIG, MUL_CPU_TASK, REPO, SECRET_KEY, WEBHOOK_SECRET, free_port, http,
    pg_rows, pg_url, pg_value, wait_until,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

RUN_TIMEOUT = 150  # seconds for a 3-config CPU run, worker start (paddle + torch import) included


@pytest.fixture(scope="module")
def deployment(postgres_db, redis_ns, tmp_path_factory):
    """Environment of the deployment's processes, a small real reports dir, and the board bootstrapped."""
    root = tmp_path_factory.mktemp("deployment")
    reports = root / "paddleapitest"
    cpu = reports / "reports" / "ci_ce_cpu"
    cpu.mkdir(parents=True)
    (cpu / "error_config.txt").write_text("\n".join(CPU_CONFIGS) + "\n", encoding="utf-8")
    gpu = reports / "reports" / "ci_ce_gpu" / "test_history" / "20250606" / "error"
    gpu.mkdir(parents=True)
    (gpu / "error_config.txt").write_text(GPU_CONFIG + "\n", encoding="utf-8")

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "Q_CLUSTER_NAME")}
    env.update({
        "DATABASE_URL": pg_url(postgres_db),
        "REDIS_URL": redis_ns.url,
        "Q_SITE_NAME": redis_ns.site,  # CPU queue = site name; also django-q's signing salt
        "RUNNER_GPU_QUEUE": redis_ns.gpu_queue,
        "DJANGO_SECRET_KEY": SECRET_KEY,
        "GITHUB_WEBHOOK_SECRET": WEBHOOK_SECRET,
        "GITHUB_TOKEN": "",  # never talk to the real GitHub
        "GITHUB_API_URL": "http://127.0.0.1:9",
        "PADDLEAPITEST_REPORTS": str(reports),
        "RUNNER_WORKERS": "1",  # the CI machine has 2 cores and other tests running
        "Q_WORKERS": "1",
        "PYTHONUNBUFFERED": "1",
        # Test-only slow specs for the kill -9 test; pool workers import them from the repo.
        "APITESTER_EXTRA_SPECS": "tests.fake_specs.workers",
        "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    })
    return {"env": env, "db": postgres_db, "redis": redis_ns, "reports": reports, "logs": root}


def manage(procs, deployment, name, *args, timeout=120, extra_env=None):
    proc = procs(name, list(args), {**deployment["env"], **(extra_env or {})}, deployment["logs"])
    code = proc.wait(timeout)
    assert code == 0, f"manage.py {' '.join(args)} exited {code}; {proc.describe()}"
    return proc.output


@pytest.fixture(scope="module")
def board(procs, deployment):
    db = deployment["db"]
    assert pg_value(db, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == 0, "database not fresh"
    manage(procs, deployment, "migrate", "migrate", "--noinput")
    output = manage(procs, deployment, "bootstrap_board", "bootstrap_board", "--reports", str(deployment["reports"]))
    assert "loaded 183 tasks" in output, output
    return deployment


@pytest.fixture(scope="module")
def qcluster(procs, board):
    """`manage.py qcluster` on the Redis broker; ready once its cluster stat is in Redis."""
    ns = board["redis"]
    proc = procs("qcluster", ["qcluster"], board["env"], board["logs"])
    wait_until(lambda: proc.popen.poll() is not None or any(":cluster:" in k for k in ns.keys()), 90,
               "the qcluster to register in Redis", context=proc.describe)
    assert proc.popen.poll() is None, f"qcluster exited; {proc.describe()}"
    return proc


@pytest.fixture(scope="module")
def webserver(procs, board):
    port = free_port()
    proc = procs("runserver", ["runserver", f"127.0.0.1:{port}", "--noreload"], board["env"], board["logs"])
    base = f"http://127.0.0.1:{port}"

    def answering():
        if proc.popen.poll() is not None:
            pytest.fail(f"runserver exited; {proc.describe()}", pytrace=False)
        try:
            return http("GET", f"{base}/api/tasks/{MUL_CPU_TASK}", timeout=5)[0] == 200
        except OSError:
            return False

    wait_until(answering, 60, f"runserver on {base}", context=proc.describe)
    return base


def get_json(url):
    status, body = http("GET", url)
    assert status == 200, (url, status, body[:500])
    return json.loads(body)


# ----------------------------------------------------------------------------- 1. migrate + bootstrap


def test_migrate_and_bootstrap_fill_a_fresh_postgres_database(procs, board):
    db = board["db"]
    assert pg_value(db, "SELECT count(*) FROM tracker_task") == 183
    assert pg_value(db, "SELECT count(*) FROM tracker_task WHERE kernel = 'CPU'") == 76
    attached = pg_rows(db, "SELECT t.number, f.config FROM tracker_failingconfig f JOIN tracker_task t "
                           "ON t.id = f.task_id ORDER BY t.number, f.config")
    expected = sorted([(CLIP_CPU_TASK, c) for c in CPU_CONFIGS if c.startswith("paddle.clip")]
                      + [(MUL_CPU_TASK, c) for c in CPU_CONFIGS if c.startswith("paddle.Tensor.__mul__")]
                      + [(CLIP_GPU_TASK, GPU_CONFIG)])
    assert attached == expected
    # The PostgreSQL-only unique constraints exist (the runner and the webhook rely on them).
    constraints = {row[0] for row in pg_rows(db, "SELECT conname FROM pg_constraint WHERE contype = 'u'")}
    assert {"one_result_per_config_and_run", "unique_config_per_task", "tracker_webhookdelivery_delivery_id_key"} <= constraints

    # Running it again (every start of the dashboard does) changes nothing.
    counts = pg_rows(db, "SELECT (SELECT count(*) FROM tracker_task), (SELECT count(*) FROM tracker_failingconfig), "
                         "(SELECT count(*) FROM tracker_event), (SELECT max(updated) FROM tracker_task)")
    output = manage(procs, board, "bootstrap_board-again", "bootstrap_board", "--reports", str(board["reports"]))
    assert "board already holds 183 tasks" in output
    assert pg_rows(db, "SELECT (SELECT count(*) FROM tracker_task), (SELECT count(*) FROM tracker_failingconfig), "
                       "(SELECT count(*) FROM tracker_event), (SELECT max(updated) FROM tracker_task)") == counts


# ----------------------------------------------------------------------------- 2-3. runs through Redis


def test_cpu_run_goes_through_redis_to_the_qcluster_and_stores_verdicts_in_postgres(request, procs, board):
    db, ns = board["db"], board["redis"]
    assert ns.client.llen(ns.cpu_queue_key) == 0
    tasks = [CLIP_CPU_TASK, MUL_CPU_TASK]
    retest = procs("retest-cpu", ["retest", "--task", *map(str, tasks), "--lane", "cpu", "--wait"],
                   board["env"], board["logs"])
    run_id = int(wait_until(lambda: re.search(r"^run (\d+): 3 configs, lane cpu$", retest.output, re.M), 60,
                            "retest to print the run id", context=retest.describe).group(1))

    # Queued before any worker exists: the job is a signed django-q package in the site's Redis list,
    # and the ORM broker's table in PostgreSQL stays empty.
    wait_until(lambda: ns.client.llen(ns.cpu_queue_key) == 1, 10, f"the job in Redis list {ns.cpu_queue_key}")
    [package] = ns.queued_tasks(ns.cpu_queue_key)
    assert package["func"] == "tracker.tasks.execute_run_task" and tuple(package["args"]) == (run_id,)
    assert pg_value(db, "SELECT count(*) FROM django_q_ormq") == 0
    assert pg_value(db, "SELECT state FROM tracker_testrun WHERE id = %s", (run_id,)) == "queued"
    wait_until(lambda: "waiting for a worker" in retest.output, 10, "retest --wait to say no worker is there",
               context=retest.describe)

    cluster = request.getfixturevalue("qcluster")
    code = retest.wait(RUN_TIMEOUT)
    assert code == 0, retest.describe()
    assert re.search(rf"^run {run_id} done: counts ", retest.output, re.M), retest.describe()
    assert ns.client.llen(ns.cpu_queue_key) == 0  # the cluster took it off the Redis list

    state, done, total, paddle_version, host = pg_rows(
        db, "SELECT state, done, total, paddle_version, host FROM tracker_testrun WHERE id = %s", (run_id,))[0]
    assert (state, done, total) == ("done", 3, 3), cluster.describe()
    assert paddle_version == version("paddlepaddle")
    results = pg_rows(db, "SELECT f.config, r.status, r.direction, r.message, t.number, r.mismatched, "
                          "r.total_elements FROM tracker_configresult r "
                          "JOIN tracker_failingconfig f ON f.id = r.failing_config_id "
                          "JOIN tracker_task t ON t.id = r.task_id WHERE r.run_id = %s", (run_id,))
    assert len(results) == len(CPU_CONFIGS)  # one per config
    verdicts = {row[0]: (row[1], row[2]) for row in results}
    assert verdicts == CPU_CONFIGS, cluster.describe()
    # float16 overflows where Torch's result doesn't: infinite differences, kept in the message.
    mul = next(r for r in results if r[0].startswith("paddle.Tensor.__mul__"))
    assert mul[4] == MUL_CPU_TASK and mul[6] == 64 and 0 < mul[5] < 64
    assert "max_abs=inf" in mul[3], mul[3]
    # The run's outcome is recorded: neither task is verified fixed on this build — the multiply overflows
    # and one of No.11's two clip configs still fails (strictly) in backward.
    verified = pg_rows(db, "SELECT t.number, e.message FROM tracker_event e JOIN tracker_task t ON t.id = e.task_id "
                           "WHERE e.kind = 'fix_verified'")
    assert verified == []

    # The cluster that ran it is the Redis one: django-q recorded the task as a success in PostgreSQL,
    # and the worker advertised the CPU lane (and only that) in WorkerHeartbeat.
    # (django-q's monitor saves the result just after the task returns, so wait for it.)
    wait_until(lambda: pg_rows(db, "SELECT success FROM django_q_task WHERE func = 'tracker.tasks.execute_run_task'"),
               30, "django-q to save the task's result", context=cluster.describe)
    assert pg_rows(db, "SELECT success FROM django_q_task WHERE func = 'tracker.tasks.execute_run_task'") == [(True,)]
    lanes = pg_rows(db, "SELECT lanes FROM tracker_workerheartbeat")
    assert lanes and all(row[0] == ["cpu"] for row in lanes)
    assert any(key.startswith(f"django_q:{ns.site}:cluster:") for key in ns.keys()), cluster.describe()


def test_gpu_run_waits_for_a_gpu_worker_when_only_a_cpu_worker_runs(procs, board, qcluster, webserver):
    db, ns = board["db"], board["redis"]
    output = procs("retest-gpu", ["retest", "--task", str(CLIP_GPU_TASK), "--lane", "gpu"], board["env"],
                   board["logs"])
    assert output.wait(60) == 0, output.describe()
    run_id = int(re.search(r"^run (\d+): 1 configs, lane gpu$", output.output, re.M).group(1))

    # On the GPU queue's Redis list, which the CPU cluster does not consume.
    [package] = ns.queued_tasks(ns.gpu_queue_key)
    assert tuple(package["args"]) == (run_id,)
    time.sleep(3)  # give the running CPU cluster every chance to (wrongly) take it
    assert ns.client.llen(ns.gpu_queue_key) == 1
    assert pg_value(db, "SELECT state FROM tracker_testrun WHERE id = %s", (run_id,)) == "queued"
    assert pg_value(db, "SELECT count(*) FROM tracker_configresult WHERE run_id = %s", (run_id,)) == 0

    data = get_json(f"{webserver}/api/runs/{run_id}")
    assert (data["state"], data["lane"], data["done"]) == ("queued", "gpu", 0)
    assert data["waiting"] == "waiting for a GPU worker"
    status, page = http("GET", f"{webserver}/runs/{run_id}")
    assert status == 200 and "waiting for a GPU worker" in page.decode()


def test_cpu_only_cluster_on_the_gpu_queue_gives_no_gpu_verdict_and_the_run_can_be_requeued(procs, board, webserver):
    """A CPU host started with Q_CLUSTER_NAME=<gpu queue> by mistake takes the GPU run's job off Redis
    and declines it: no verdict, the run stays queued and says why. Its job is gone from Redis, so a
    GPU worker starting later requeues such runs (requeue_declined_gpu_runs) instead of never seeing them."""
    db, ns = board["db"], board["redis"]
    queued = [row[0] for row in pg_rows(db, "SELECT id FROM tracker_testrun WHERE lane = 'gpu' AND state = 'queued'")]
    if not queued:  # this test run on its own
        output = manage(procs, board, "retest-gpu-2", "retest", "--task", str(CLIP_GPU_TASK), "--lane", "gpu")
        queued = [int(re.search(r"^run (\d+):", output, re.M).group(1))]
    [run_id] = queued
    assert ns.client.llen(ns.gpu_queue_key) == 1

    wrong = procs("qcluster-gpu-queue-cpu-build", ["qcluster"], {**board["env"], "Q_CLUSTER_NAME": ns.gpu_queue},
                  board["logs"])
    message = wait_until(lambda: pg_value(db, "SELECT message FROM tracker_testrun WHERE id = %s AND message <> ''",
                                          (run_id,)), 90, "the CPU-only cluster to decline the GPU run",
                         interval=0.5, context=wrong.describe)
    assert message == f"waiting for a GPU worker (this worker's Paddle {version('paddlepaddle')} is CPU-only)"
    # It advertises no lane at all: it serves the GPU queue but can't run GPU configs.
    lanes = wait_until(lambda: pg_rows(db, "SELECT lanes FROM tracker_workerheartbeat WHERE name LIKE %s",
                                       (f"{ns.gpu_queue}@%",)), 60, "the GPU-queue cluster's heartbeat",
                       interval=0.5, context=wrong.describe)
    assert lanes == [([],)]
    wrong.stop()
    assert ns.client.llen(ns.gpu_queue_key) == 0  # consumed
    assert pg_value(db, "SELECT state FROM tracker_testrun WHERE id = %s", (run_id,)) == "queued"
    assert pg_value(db, "SELECT count(*) FROM tracker_configresult WHERE run_id = %s", (run_id,)) == 0
    assert get_json(f"{webserver}/api/runs/{run_id}")["waiting"] == "waiting for a GPU worker"

    requeue = ("from tracker.services.runs import requeue_declined_gpu_runs; "
               "print('requeued', requeue_declined_gpu_runs())")
    assert f"requeued [{run_id}]" in manage(procs, board, "requeue-gpu", "shell", "-c", requeue)
    [package] = ns.queued_tasks(ns.gpu_queue_key)
    assert tuple(package["args"]) == (run_id,)
    # Once only: the run no longer carries the declined mark.
    assert "requeued []" in manage(procs, board, "requeue-gpu-again", "shell", "-c", requeue)
    assert ns.client.llen(ns.gpu_queue_key) == 1
    assert pg_value(db, "SELECT state FROM tracker_testrun WHERE id = %s", (run_id,)) == "queued"


def test_qcluster_killed_mid_run_resumes_from_postgres_although_redis_gave_the_job_away(procs, board, qcluster):
    """The Redis broker has no acknowledgement: the job left the list when the killed cluster popped it.
    The run still finishes, because the restarted cluster finds it `running` under a dead executor in
    PostgreSQL and queues it again; nothing already stored runs twice."""
    db, ns = board["db"], board["redis"]
    slow = [f'paddle.testonly.slow(x=Tensor([{i + 1}, 3],"float32"), seconds=0.8, )' for i in range(6)]
    script = ("import hashlib; from tracker.models import FailingConfig, Task; "
              "t = Task.objects.create(number=1001, api='paddle.testonly.slow', kernel='CPU'); "
              f"[FailingConfig.objects.create(task=t, config=c, config_hash=hashlib.sha256(c.encode()).hexdigest()) "
              f"for c in {slow!r}]")
    manage(procs, board, "seed-slow-task", "shell", "-c", script)
    output = manage(procs, board, "retest-slow", "retest", "--task", "1001", "--lane", "cpu")
    run_id = int(re.search(r"^run (\d+): 6 configs", output, re.M).group(1))

    def results():
        return pg_rows(db, "SELECT id, failing_config_id, created, status FROM tracker_configresult "
                           "WHERE run_id = %s ORDER BY id", (run_id,))

    wait_until(lambda: len(results()) >= 2, 90, "two stored results", context=qcluster.describe)
    os.killpg(qcluster.popen.pid, signal.SIGKILL)  # sentinel, workers and pool workers at once
    qcluster.popen.wait(30)
    before_kill = results()
    assert 2 <= len(before_kill) < 6
    assert pg_value(db, "SELECT state FROM tracker_testrun WHERE id = %s", (run_id,)) == "running"
    assert ns.client.llen(ns.cpu_queue_key) == 0  # the job is gone from Redis

    restarted = procs("qcluster-restarted", ["qcluster"], board["env"], board["logs"])
    wait_until(lambda: pg_value(db, "SELECT state FROM tracker_testrun WHERE id = %s", (run_id,)) == "done",
               RUN_TIMEOUT, "the resumed run to finish", interval=0.5, context=restarted.describe)
    after = results()
    assert len(after) == 6 and len({row[1] for row in after}) == 6  # nothing lost, nothing twice
    assert set(before_kill) <= set(after)  # stored results kept as they were
    assert {row[3] for row in after} == {"pass"}


# ----------------------------------------------------------------------------- 4. GitHub webhook


def _deliver(base, event, payload, delivery):
    body = json.dumps(payload, ensure_ascii=False).encode()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
               "User-Agent": "GitHub-Hookshot/044aadd",
               "X-Hub-Signature-256": "sha256=" + hmac.new(WEBHOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()}
    status, answer = http("POST", f"{base}/github/webhook", body, headers)
    return status, json.loads(answer) if answer.startswith(b"{") else answer


def _claim_state(db):
    return {
        "claims": pg_rows(db, "SELECT t.number, c.login, cl.status, cl.withdrawn_at IS NULL FROM tracker_claim cl "
                              "JOIN tracker_task t ON t.id = cl.task_id JOIN tracker_contributor c "
                              "ON c.id = cl.contributor_id WHERE c.login = 'deploy-tester' ORDER BY t.number"),
        "events": pg_value(db, "SELECT count(*) FROM tracker_event"),
        "deliveries": pg_value(db, "SELECT count(*) FROM tracker_webhookdelivery"),
    }


def test_signed_webhook_to_runserver_updates_a_claim_once(board, webserver):
    db = board["db"]
    assert get_json(f"{webserver}/api/tasks/{MUL_CPU_TASK}")["status"] == "open"
    comment = payloads.comment(2874799001, "deploy-tester", f"【报名】: {MUL_CPU_TASK}", "2025-06-01T08:00:00Z")
    event = payloads.issue_comment_event("created", comment)

    status, answer = _deliver(webserver, "issue_comment", event, "d-1")
    assert status == 200 and not answer.get("duplicate"), answer
    after = _claim_state(db)
    assert after["claims"] == [(MUL_CPU_TASK, "deploy-tester", "报名", True)]
    task = get_json(f"{webserver}/api/tasks/{MUL_CPU_TASK}")
    assert "deploy-tester" in task["claimants"] and task["status"] == "claimed"

    # GitHub redelivers the same delivery: answered, applied once.
    status, answer = _deliver(webserver, "issue_comment", event, "d-1")
    assert status == 200 and answer.get("duplicate") is True, answer
    assert _claim_state(db) == after

    # A bad signature changes nothing either.
    body = json.dumps(event).encode()
    status, _ = http("POST", f"{webserver}/github/webhook", body, {
        "Content-Type": "application/json", "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "d-forged",
        "X-Hub-Signature-256": "sha256=" + "0" * 64})
    assert status == 401 and _claim_state(db) == after


def test_concurrent_redeliveries_apply_once_on_postgres(board, webserver):
    """Redeliveries racing each other (runserver is threaded): PostgreSQL's unique index makes one win."""
    db = board["db"]
    before = _claim_state(db)
    comment = payloads.comment(2874799001, "deploy-tester", f"【报名】: {MUL_CPU_TASK}、{CLIP_CPU_TASK}",
                               "2025-06-01T08:00:00Z", updated_at="2025-06-02T09:00:00Z")
    event = payloads.issue_comment_event("edited", comment)
    answers = []
    barrier = threading.Barrier(4)

    def send():
        barrier.wait()
        answers.append(_deliver(webserver, "issue_comment", event, "d-2"))

    threads = [threading.Thread(target=send) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(status for status, _ in answers) == [200] * 4, answers
    assert sum(1 for _, answer in answers if not answer.get("duplicate")) == 1, answers
    after = _claim_state(db)
    assert after["claims"] == [(CLIP_CPU_TASK, "deploy-tester", "报名", True),
                               (MUL_CPU_TASK, "deploy-tester", "报名", True)]
    assert after["deliveries"] == before["deliveries"] + 1
    assert after["events"] > before["events"]
