"""The GPU half of the board (issue 36), read off a board database through the selectors the pages use.

    DATABASE_URL=sqlite:////tmp/board.sqlite3 .venv/bin/python benchmarks/gpu_half.py evidence [--markdown OUT]
    DATABASE_URL=sqlite:////tmp/board.sqlite3 .venv/bin/python benchmarks/gpu_half.py reproduction [--markdown OUT]

``evidence``: after ``manage.py retest --all --on-cpu [--max-elements N] --inline``: the CPU-evidence runs
(their bound, time and verdicts), then per GPU task what ``selectors.cpu_evidence.task_cpu_evidence`` gives
the task page -- configs, re-tested, fails on CPU too / passes / no plain verdict -- and the tasks by reading.

``reproduction``: after ``manage.py retest --all --releases 3.0.0 --inline``: per CPU task,
``selectors.reported.task_reproduction`` (the report's failures that fail on 3.0.0 too), and the totals.

The database is only read.  --markdown writes the per-task table there as well.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("DJANGO_DEBUG", "1")
    import django

    django.setup()


def _seconds(run) -> float | None:
    """Started to finished, or to the latest verdict of a run still running or stopped."""
    from tracker.models import ConfigResult

    end = run.finished_at or (ConfigResult.objects.filter(run=run).order_by("-created")
                              .values_list("created", flat=True).first())
    return (end - run.started_at).total_seconds() if run.started_at and end else None


def evidence_main(args) -> list[str]:
    from tracker.models import ConfigResult, FailingConfig, Task, TestRun
    from tracker.selectors.cpu_evidence import task_cpu_evidence
    from tracker.vocab import Kernel, ScopeKind

    runs = list(TestRun.objects.filter(scope__kind=ScopeKind.CPU_EVIDENCE).order_by("pk"))
    all_configs = FailingConfig.objects.filter(task__kernel=Kernel.GPU).count()
    lines = []
    for run in runs:
        bound = run.scope.get("max_elements")
        statuses = Counter(ConfigResult.objects.filter(run=run).values_list("status", flat=True))
        lines.append(f"run {run.pk} ({run.state}, Paddle {run.paddle_version or run.release or '?'}): {run.total} of "
                     f"{all_configs} GPU-task configs" + (f" (at most {bound} input elements)" if bound else "")
                     + f"; {sum(statuses.values())} verdicts in {_seconds(run) or 0:.0f} s: "
                     + ", ".join(f"{k} {v}" for k, v in statuses.most_common()))
    rows, readings = [], Counter()
    for task in Task.objects.filter(kernel=Kernel.GPU).order_by("number"):
        ev = task_cpu_evidence(task)
        readings[ev.reading] += 1
        rows.append(f"| No.{task.number} | {task.api} | {ev.configs} | {ev.tested} | {ev.fails} | {ev.passes} | "
                    f"{ev.no_cpu_kernel} | {ev.other} | {ev.reading} |")
    lines.append(f"GPU tasks by reading ({sum(readings.values())}): "
                 + ", ".join(f"{k} {v}" for k, v in readings.most_common()))
    table = ["| task | API | configs | re-tested on CPU | fails on CPU too | passes on CPU | no CPU kernel | "
             "no plain verdict | reading |", "|---|---|---:|---:|---:|---:|---:|---:|---|", *rows]
    return lines + [""] + table


def reproduction_main(args) -> list[str]:
    from tracker.models import Task
    from tracker.selectors.releases import task_release_grid
    from tracker.selectors.reported import REPORT_RELEASE, task_reproduction
    from tracker.vocab import Kernel

    rows, totals, shapes = [], Counter(), Counter()
    for task in Task.objects.filter(kernel=Kernel.CPU).order_by("number"):
        found = task_reproduction(task, task_release_grid(task)[1])
        for key in ("configs", "tested", "judged", "reproduced", "no_verdict"):
            totals[key] += getattr(found, key)
        shapes["untested" if not found.tested else "no plain verdict" if not found.judged else
               "all reproduce" if found.reproduced == found.judged else "none reproduce" if not found.reproduced
               else "some reproduce"] += 1
        rate = f"{100 * found.rate:.0f} %" if found.rate is not None else "-"
        rows.append(f"| No.{task.number} | {task.api} | {found.configs} | {found.tested} | {found.reproduced} / "
                    f"{found.judged} | {rate} | {found.no_verdict} |")
    rate = totals["reproduced"] / totals["judged"] if totals["judged"] else 0.0
    lines = [f"CPU tasks on Paddle {REPORT_RELEASE}: {totals['tested']} of {totals['configs']} reported configs "
             f"re-tested; {totals['reproduced']} of {totals['judged']} judged reproduce ({100 * rate:.1f} %); "
             f"{totals['no_verdict']} no plain verdict",
             "tasks: " + ", ".join(f"{k} {v}" for k, v in shapes.most_common())]
    table = ["| task | API | configs | re-tested | reproduce / judged | rate | no plain verdict |",
             "|---|---|---:|---:|---:|---:|---:|", *rows]
    return lines + [""] + table


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", choices=("evidence", "reproduction"))
    p.add_argument("--markdown", type=Path, default=None, help="also write the lines and the table here")
    args = p.parse_args(argv)
    _setup()
    lines = {"evidence": evidence_main, "reproduction": reproduction_main}[args.what](args)
    print("\n".join(lines))
    if args.markdown:
        args.markdown.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
