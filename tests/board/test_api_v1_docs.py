"""The versioned JSON API (issue #47): every /api/... endpoint answers the same under /api/v1/..., and docs/api.md
documents exactly the fields the answers have — every documented field present in a real answer, no field
undocumented. The board below is built so that every documented field shows up in some answer."""
import datetime

import pytest
from django.utils import timezone

from tests.api_docs import documented_fields, field_paths
from tracker.models import Claim, Contributor, PullRequest, ReportedDiff, TestRun
from tracker.services.runs import store_result

from ..factories import make_task

pytestmark = pytest.mark.django_db

ABS = 'paddle.abs(Tensor([3],"float32"), )'
ABS_BIG = 'paddle.abs(Tensor([300],"float32"), )'
SIN = 'paddle.sin(Tensor([4],"float16"), )'
ADAPTED = {
    "status": "accuracy_error", "direction": "forward", "max_abs": 0.5, "max_rel": 0.1, "mismatched": 1,
    "total_elements": 3, "message": "the outputs differ", "strict_status": "accuracy_error",
    "strict_direction": "forward",
    "adapted": {"status": "pass", "direction": "", "max_abs": 0.0, "max_rel": 0.0, "mismatched": 0},
    "adaptations": [{"kind": "documented_semantics", "reason": "Paddle rounds half to even", "link": "https://x"}],
    "evidence": "Torch's own float64 run disagrees with Torch", "draw": "edge:0@2",
    "known_failure": {"status": "accuracy_error", "direction": "forward", "releases": "<3.4", "dtypes": ["float32"],
                      "contains": "Tensor([3]", "reason": "a known rounding bug", "source": "https://y"},
    "comparison": {"note": "compared after sorting", "source": "https://z"},
    "exact": False, "max_ulp": 1234, "stable": False, "nondeterministic": "paddle", "closer": "paddle_off",
    "closer_code": "", "closer_output": "out", "closer_skipped": "", "paddle_rmse": 0.2, "torch_rmse": 0.1,
}

# a worker's provenance as apitester.provenance reads it (issue #46)
PROVENANCE = {"paddle_version": "3.3.1", "paddle_commit": "7688495538f4d6c1893f084dd238a402e8f68ab6",
              "torch_version": "2.13.0+cpu", "numpy_version": "2.4.6",
              "threads": {"torch": 1, "torch_interop": 2, "paddle": 1, "omp_env": "1", "mkl_env": "1"},
              "cpu_capability": {"torch": "AVX2", "paddle": "AVX2", "cpu_model": "AMD EPYC", "cpu_flags": ["avx2"]},
              "host": "worker-1"}


def _run(release="", version="3.3.1", lane="cpu", parent=None, tasks=(5,)):
    now = timezone.now()
    return TestRun.objects.create(scope={"kind": "tasks", "tasks": list(tasks)}, lane=lane, release=release,
                                  paddle_version=version, total=2, done=2, state="done", parent=parent,
                                  started_at=now, finished_at=now, host="here")


def build_board():
    task = make_task(5, "paddle.abs", [ABS, ABS_BIG])
    gpu = make_task(6, "paddle.sin", [SIN], kernel="GPU")
    alice = Contributor.objects.create(login="alice")
    Claim.objects.create(task=task, contributor=alice, source="comment", source_ref="issue comment 1",
                         created=timezone.now())
    pr = PullRequest.objects.create(repo="PaddlePaddle/Paddle", number=7, state="open", author=alice)
    pr.tasks.add(task)
    abs_config, big = task.failing_configs.get(config=ABS), task.failing_configs.get(config=ABS_BIG)
    ReportedDiff.objects.create(task=task, failing_config=abs_config, log_file="reports/x.log", log_line=3,
                                report_date=datetime.date(2025, 8, 1), device="CPU", category="accuracy",
                                kind="accuracy", direction="forward", mismatched=1, total=3, max_abs=0.5,
                                max_rel=0.1, message="Not equal to tolerance")
    parent = _run(release="matrix", version="")
    old = _run(release="3.0.0", version="3.0.0", parent=parent)
    store_result(old, abs_config, {"status": "pass", "exact": True, "max_ulp": 0, "provenance": PROVENANCE}, 0.1)
    for verdict in ({"status": "pass", "exact": False, "max_ulp": 1}, ADAPTED):  # a flaky config
        run = _run()
        store_result(run, abs_config, verdict, 0.1)
        store_result(run, big, {"status": "pass", "exact": True, "max_ulp": 0, "provenance": PROVENANCE}, 0.1)
    store_result(_run(tasks=(6,)), gpu.failing_configs.get(), {"status": "pass", "exact": True, "max_ulp": 0}, 0.1)
    return task, parent, run


def answers(client, task, parent, run) -> dict[str, list]:
    """documented endpoint -> its answers here, each fetched under /api/v1/ and checked against /api/."""
    urls = {"/api/v1/tasks": ["tasks", "tasks?kernel=GPU"],
            "/api/v1/tasks/<number>": [f"tasks/{task.number}", "tasks/6"],
            "/api/v1/runs/<id>": [f"runs/{run.pk}", f"runs/{parent.pk}"],
            "/api/v1/alignment": ["alignment", "alignment?api=paddle.abs&dtype=float32"],
            "/api/v1/flaky": ["flaky"]}
    found = {}
    for endpoint, paths in urls.items():
        found[endpoint] = []
        for path in paths:
            versioned, plain = client.get(f"/api/v1/{path}"), client.get(f"/api/{path}")
            assert versioned.status_code == plain.status_code == 200, path
            assert versioned.json() == plain.json(), f"/api/v1/{path} differs from /api/{path}"
            found[endpoint].append(versioned.json())
    return found


def _parent(path: str) -> str:
    for mark in ("[]", "{}"):
        if path.endswith(mark):
            return path[:-2]
    return path.rsplit(".", 1)[0] if "." in path else ""


def test_the_documentation_matches_the_answers(client):
    documented = documented_fields()
    got = answers(client, *build_board())
    assert set(documented) == set(got), "docs/api.md documents these endpoints"
    for endpoint, fields in documented.items():
        maps = frozenset(path[:-2] for path in fields if path.endswith("{}"))
        seen: set[str] = set()
        for answer in got[endpoint]:
            objects: set[str] = set()
            paths = field_paths(answer, maps, objects=objects)
            assert not paths - set(fields), f"{endpoint}: fields not in docs/api.md: {sorted(paths - set(fields))}"
            # a field is expected wherever its object is there (an empty list or map has no items to expect)
            missing = {p for p, optional in fields.items() if not optional and not p.endswith(("[]", "{}"))
                       and _parent(p) in objects and p not in paths}
            assert not missing, f"{endpoint}: documented but missing from an answer: {sorted(missing)}"
            seen |= paths
        assert not set(fields) - seen, f"{endpoint}: documented, in no answer: {sorted(set(fields) - seen)}"


def test_an_unknown_version_is_not_found(client):
    assert client.get("/api/v2/tasks").status_code == 404
    assert client.get("/api/v1/nothing").status_code == 404
