"""What provenance costs per result (issue #46), in the worker and in the database.

``engine``: read_provenance() once, and one verdict's JSON line with and without ``provenance`` (20,000 dumps each).
``store``: store_result of N verdicts per block on the database DATABASE_URL names (required: the script migrates it
and writes a task, runs and results into it — give it a new one), blocks with and without a provenance alternated,
six blocks; prints the median, the fastest and every block's ms per result, and the Provenance rows made.

    PYTHONPATH=. .venv/bin/python benchmarks/provenance_cost.py engine
    PYTHONPATH=. DATABASE_URL=sqlite:////tmp/m46db/db.sqlite3 .venv/bin/python benchmarks/provenance_cost.py store 400
"""
import hashlib
import json
import os
import sys
import time

PROVENANCE = {"paddle_version": "3.3.1", "paddle_commit": "7688495538f4d6c1893f084dd238a402e8f68ab6",
              "torch_version": "2.13.0+cpu", "numpy_version": "2.4.6",
              "threads": {"torch": 1, "torch_interop": 2, "paddle": 1, "omp_env": "1", "mkl_env": "1"},
              "cpu_capability": {"torch": "AVX2", "paddle": "AVX2", "cpu_model": "AMD EPYC",
                                 "cpu_flags": ["avx2", "avx", "fma"]}, "host": "vm"}


def engine() -> None:
    from apitester import provenance
    from apitester.engine.execute import run_config

    started = time.perf_counter()
    import paddle  # noqa: F401
    import torch  # noqa: F401
    imported = time.perf_counter() - started
    started = time.perf_counter()
    prov = provenance.read_provenance()
    once = time.perf_counter() - started
    verdict = run_config('paddle.sin(Tensor([64, 64],"float32"), )', device="cpu").to_dict()
    times = {}
    for label, line in (("without", {"verdict": verdict, "seconds": 0.1}),
                        ("with", {"verdict": {**verdict, "provenance": prov}, "seconds": 0.1})):
        started = time.perf_counter()
        for _ in range(20_000):
            json.dumps(line)
        times[label] = ((time.perf_counter() - started) / 20_000, len(json.dumps(line["verdict"])))
    print(f"read_provenance once: {once * 1000:.1f} ms (after importing paddle and torch, {imported:.1f} s)")
    print(f"verdict line: {times['without'][1]} -> {times['with'][1]} bytes; json.dumps {times['without'][0] * 1e6:.1f}"
          f" us -> {times['with'][0] * 1e6:.1f} us")


def store(n: int) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.core.management import call_command

    from tracker.models import ConfigResult, FailingConfig, Provenance, Task, TestRun
    from tracker.services.runs import store_result

    call_command("migrate", verbosity=0)
    task = Task.objects.create(number=1, api="paddle.x", kernel="CPU")
    configs = [FailingConfig.objects.create(task=task, config=f'paddle.x(Tensor([{i}],"float32"), )',
                                            config_hash=hashlib.sha256(str(i).encode()).hexdigest()) for i in range(n)]
    verdict = {"status": "pass", "exact": False, "max_ulp": 3, "max_abs": 1e-7, "max_rel": 1e-6, "mismatched": 0,
               "total": 100, "phases": {"paddle": 0.01, "torch": 0.01}}
    times = {True: [], False: []}
    for block in range(6):
        for with_provenance in (block % 2 == 0, block % 2 == 1):
            run = TestRun.objects.create(scope={"kind": "tasks", "tasks": [1]}, lane="cpu", state="running")
            one = dict(verdict, provenance=PROVENANCE) if with_provenance else verdict
            started = time.perf_counter()
            for config in configs:
                store_result(run, config, one, 0.1)
            times[with_provenance].append((time.perf_counter() - started) / n * 1000)
    for key in (False, True):
        ms = sorted(times[key])
        print(f"{'with' if key else 'without'} provenance: per result median {ms[len(ms) // 2]:.3f} ms, fastest "
              f"{ms[0]:.3f} ms, blocks {', '.join(f'{m:.3f}' for m in ms)}")
    print(f"Provenance rows: {Provenance.objects.count()}; results with one: "
          f"{ConfigResult.objects.filter(provenance__isnull=False).count()}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["engine"]:
        engine()
    elif sys.argv[1:2] == ["store"] and os.environ.get("DATABASE_URL"):
        store(int(sys.argv[2]) if len(sys.argv) > 2 else 400)
    else:
        sys.exit(__doc__)
