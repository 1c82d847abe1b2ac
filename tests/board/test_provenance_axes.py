"""The axes a stored verdict holds on (issue #46), read from the provenance store_result keeps: one Provenance row per
distinct provenance, a worker's malformed provenance cut to plain values (never a lost verdict), thread-sensitive
configs (another thread count, the same build) and the reference drift (another Torch, the same build and threads:
`manage.py torch_drift`). The verdicts are stored through the real store_result on the real database; the runs that
produce them through real workers are tests/runner/test_provenance_runs.py."""
import json
from io import StringIO

import pytest
from django.core.management import call_command

from tracker.models import ConfigResult, Provenance, TestRun
from tracker.selectors.provenance import drift_report, thread_sensitive, torch_drift
from tracker.services.runs import store_result

from ..factories import make_task

pytestmark = pytest.mark.django_db

SUM = 'paddle.sum(Tensor([4096],"float32"), )'
ABS = 'paddle.abs(Tensor([3],"float32"), )'
EXACT = {"status": "pass", "exact": True, "max_ulp": 0}
INEXACT = {"status": "pass", "exact": False, "max_ulp": 2}
FAILS = {"status": "accuracy_error", "exact": False, "max_ulp": 99}


def prov(threads=1, torch="2.13.0+cpu", commit="7688495538f4d6c1893f084dd238a402e8f68ab6", host="worker-1"):
    return {"paddle_version": "3.3.1", "paddle_commit": commit, "torch_version": torch, "numpy_version": "2.4.6",
            "threads": {"torch": threads, "torch_interop": 2, "paddle": threads, "omp_env": str(threads)},
            "cpu_capability": {"torch": "AVX2", "paddle": "AVX2", "cpu_model": "AMD EPYC", "cpu_flags": ["avx2"]},
            "host": host}


def store(config, verdict, provenance):
    """One verdict of a run of its own, as a worker sends it: the provenance in the verdict (no build check: the
    builds named here are not envs of this host)."""
    run = TestRun.objects.create(scope={"kind": "tasks", "tasks": [1]}, lane="cpu", state="done")
    return store_result(run, config, {**verdict, "provenance": provenance}, 0.1)


@pytest.fixture
def configs():
    task = make_task(1, "paddle.sum", [SUM])
    other = make_task(2, "paddle.abs", [ABS])
    return task.failing_configs.get(), other.failing_configs.get()


def test_one_row_per_distinct_provenance_and_a_malformed_one_is_cut_not_lost(configs):
    total, absolute = configs
    for _ in range(3):
        store(total, EXACT, prov())
        store(absolute, EXACT, prov())
    assert Provenance.objects.count() == 1 and ConfigResult.objects.filter(provenance__isnull=False).count() == 6
    hostile = {**prov(), "threads": {"torch": "x" * 10_000}, "cpu_capability": ["not", "a", "dict"], "host": 7}
    result = store(total, EXACT, hostile)
    row = result.provenance
    assert result.status == "pass" and row.threads is None and len(row.thread_detail["torch"]) == 200
    assert row.cpu_capability == {} and row.host == "7"
    assert store(total, EXACT, "not a dict").provenance is None and Provenance.objects.count() == 2


def test_thread_sensitive_and_torch_drift_hold_everything_else(configs):
    total, absolute = configs
    store(total, EXACT, prov(threads=1))
    store(total, INEXACT, prov(threads=2))
    store(absolute, EXACT, prov(threads=1))
    store(absolute, EXACT, prov(threads=2))
    # another build at two threads: not compared with 3.3.1's one thread
    store(absolute, FAILS, prov(threads=4, commit="1" * 40))
    assert thread_sensitive(ConfigResult.objects.all()) == {total.pk: [(1, "exact"), (2, "within_tolerance")]}
    assert torch_drift(ConfigResult.objects.all()) == {}
    # only Torch moves: the same build at one thread under torch 2.12.0 fails where 2.13.0 was exact
    store(total, FAILS, prov(threads=1, torch="2.12.0+cpu"))
    store(absolute, EXACT, prov(threads=1, torch="2.12.0+cpu"))
    assert torch_drift(ConfigResult.objects.all()) == {total.pk: [("2.12.0+cpu", "fails"), ("2.13.0+cpu", "exact")]}
    assert drift_report() == [{"api": "paddle.sum", "configs": [
        {"config": SUM, "verdicts": [("2.12.0+cpu", "fails"), ("2.13.0+cpu", "exact")]}]}]
    assert drift_report("gpu") == []
    out = StringIO()
    call_command("torch_drift", stdout=out)
    assert out.getvalue().splitlines() == ["paddle.sum: 1 config(s)",
                                           f"  {SUM}  —  torch 2.12.0+cpu: fails, torch 2.13.0+cpu: exact"]
    out = StringIO()
    call_command("torch_drift", "--json", stdout=out)
    assert json.loads(out.getvalue())["apis"][0]["configs"][0]["verdicts"] == [["2.12.0+cpu", "fails"],
                                                                             ["2.13.0+cpu", "exact"]]
    # a later verdict replaces the earlier one at the same thread count: 2 threads exact again → no longer sensitive
    store(total, EXACT, prov(threads=2))
    assert total.pk not in thread_sensitive(ConfigResult.objects.all())
