"""Queueing lives in tracker/services/queue.py: runs and tasks import it at their top, never each other lazily,
and the RUNNER_* queue settings read from the environment decide where a run's job goes."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "tracker" / "services" / "runs"  # the package: one module per job of a run
TASKS = REPO / "tracker" / "tasks.py"


def _imports(path: Path, package: str):
    """(module, top_level) for each import in the file, relative imports resolved against `package`."""
    found = []
    tree = ast.parse(path.read_text())
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.append((module, id(node) in top))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, id(node) in top) for alias in node.names)
    return found


def test_runs_and_tasks_import_the_queue_module_at_their_top_and_never_each_other_lazily():
    runs = [found for path in sorted(RUNS.glob("*.py")) for found in _imports(path, "tracker.services.runs")]
    tasks = _imports(TASKS, "tracker")
    assert ("tracker.services.queue", True) in runs
    assert ("tracker.services.queue", True) in tasks
    # No function-level import of any tracker module is left in either (that is how the cycle was hidden).
    assert [m for m, top in runs if not top and m.startswith("tracker")] == []
    assert [m for m, top in tasks if not top and m.startswith("tracker")] == []
    # The dependency goes one way: tasks → services.runs; services.runs never names tasks.
    assert ("tracker.services.runs", True) in tasks
    assert not [m for m, _ in runs if m == "tracker.tasks" or m.startswith("tracker.tasks.")]


def _fresh_process(db: Path, code: str, **env_vars) -> dict:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", "PYTHONPATH": str(REPO),
           "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "WARNING"}
    for name in ("REDIS_URL", "RUNNER_CPU_QUEUE", "RUNNER_GPU_QUEUE", "Q_SITE_NAME"):
        env.pop(name, None)  # REDIS_URL unset: django-q2's ORM broker, so a queued job is a row we can read
    env.update(env_vars)
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_both_modules_import_in_a_fresh_interpreter_in_either_order(tmp_path):
    for first, second in (("tracker.services.runs", "tracker.tasks"), ("tracker.tasks", "tracker.services.runs")):
        code = ("import importlib, json, sys, django\n"
                "django.setup()\n"
                # App loading imported tracker.tasks already; drop our modules and import them again cold.
                "for name in [m for m in sys.modules if m == 'tracker.tasks' or m.startswith('tracker.services')]:\n"
                "    del sys.modules[name]\n"
                f"a = importlib.import_module({first!r}); b = importlib.import_module({second!r})\n"
                "print(json.dumps([a.__name__, b.__name__]))\n")
        assert _fresh_process(tmp_path / "import.sqlite3", code) == [first, second]


ENQUEUE_BOTH_LANES = """
import json, django
django.setup()
from django.core.management import call_command
call_command("migrate", "--noinput", verbosity=0)
from django_q.models import OrmQ
from tests.runner.conftest import PASSING, make_task
from tracker.services.runs import start_run
make_task(1, "paddle.clip", PASSING[:1])
make_task(2, "paddle.all", ['paddle.all(Tensor([3, 4],"bool"), )'], kernel="GPU")
cpu = start_run("task", tasks=[1], lane="cpu")
gpu = start_run("task", tasks=[2], lane="gpu")
rows = [(row.key, row.task["func"], row.task["args"][0]) for row in OrmQ.objects.order_by("id")]
print(json.dumps({"cpu": cpu.pk, "gpu": gpu.pk, "rows": rows}))
"""


def test_runner_queue_settings_route_each_lane_to_its_queue(tmp_path):
    """RUNNER_CPU_QUEUE / RUNNER_GPU_QUEUE from the environment name the queue a started run's job lands on."""
    data = _fresh_process(tmp_path / "set.sqlite3", ENQUEUE_BOTH_LANES, Q_SITE_NAME="site-name",
                          RUNNER_CPU_QUEUE="cpu-lane-from-env", RUNNER_GPU_QUEUE="gpu-lane-from-env")
    job = "tracker.tasks.execute_run_task"
    assert data["rows"] == [["cpu-lane-from-env", job, data["cpu"]], ["gpu-lane-from-env", job, data["gpu"]]]

    # Unset: the CPU lane uses the site's queue (the one a plain `manage.py qcluster` consumes), GPU uses "gpu".
    default = _fresh_process(tmp_path / "default.sqlite3", ENQUEUE_BOTH_LANES, Q_SITE_NAME="site-name")
    assert default["rows"] == [["site-name", job, default["cpu"]], ["gpu", job, default["gpu"]]]
