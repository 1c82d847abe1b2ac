"""What PaddleAPITest's reports say about a task's configs (`ReportedDiff`, read from their logs).

Reported diffs are the report's evidence, labelled with the report's device and date; they are never a
verdict of ours (a GPU task's reported diff is what a GPU produced for PaddleAPITest, not for this board).
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.paginator import Paginator
from django.db.models import Count
from django.utils.translation import gettext as _

from apitester.reports import reports_dir

from ..models import ReportedDiff, Task
from ..vocab import FAILING, PASSING, Kernel

def reports_root() -> Path:
    """Where the board reads PaddleAPITest's reports: settings.PADDLEAPITEST_REPORTS, or when it is empty the
    engine's own default (apitester.reports.reports_dir: the default is defined once, in the engine)."""
    return Path(settings.PADDLEAPITEST_REPORTS) if settings.PADDLEAPITEST_REPORTS else reports_dir()


# /api/tasks/<n>?configs_page=N: a task holds up to ~3,000 configs, each with a few reported diffs.
API_CONFIGS_PER_PAGE = 100


def json_number(value: float | None):
    """A difference as JSON can carry it: the report's inf / nan become the strings "inf", "-inf", "nan"."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def reported_label(device: str, date) -> str:
    return _("reported by PaddleAPITest (%(device)s, %(date)s)") % {
        "device": device, "date": date.isoformat() if date else _("undated")}


@dataclass(frozen=True)
class Reported:
    """One reported diff, ready for a page or the API."""

    direction: str
    mismatched: int | None
    total: int | None
    max_abs: float | None
    max_rel: float | None
    date: object
    device: str
    category: str
    kind: str
    message: str

    @property
    def label(self) -> str:
        return reported_label(self.device, self.date)

    def as_dict(self) -> dict:
        return {
            "direction": self.direction or None, "mismatched": self.mismatched, "total": self.total,
            "max_abs": json_number(self.max_abs), "max_rel": json_number(self.max_rel),
            "date": self.date.isoformat() if self.date else None, "device": self.device,
            "category": self.category, "kind": self.kind, "message": self.message,
        }


_COLUMNS = ("failing_config_id", "direction", "mismatched", "total", "max_abs", "max_rel", "report_date", "device",
            "category", "kind", "message")


def reported_by_config(config_ids) -> dict[int, list[Reported]]:
    """config id → its reported diffs, newest report first (configs without one are absent)."""
    found: dict[int, list[Reported]] = defaultdict(list)
    rows = (ReportedDiff.objects.filter(failing_config_id__in=list(config_ids))
            .order_by("failing_config_id", "-report_date", "log_file", "log_line").values_list(*_COLUMNS))
    for config_id, *fields in rows:
        found[config_id].append(Reported(*fields))
    return dict(found)


def annotate_reported(configs) -> list:
    """The page's configs, each with `.reported` (newest first): the task page's config rows."""
    configs = list(configs)
    by_config = reported_by_config(c.id for c in configs)
    for config in configs:
        config.reported = by_config.get(config.id, [])
    return configs


def task_configs_reported(task: Task, page: int = 1) -> dict:
    """The `configs` part of GET /api/tasks/<n>: a page of the task's failing configs with what the reports saw."""
    # (task_id too: the related manager sets each config's task from it; deferred, it was read once per config)
    paginator = Paginator(task.failing_configs.order_by("id").only("id", "config", "task_id"), API_CONFIGS_PER_PAGE)
    current = paginator.get_page(page)
    by_config = reported_by_config(c.id for c in current)
    return {
        "page": current.number, "pages": paginator.num_pages, "per_page": API_CONFIGS_PER_PAGE,
        "count": paginator.count,
        "with_reported_diff": task.reported_diffs.values("failing_config_id").distinct().count(),
        "items": [{"config": c.config, "reported": [r.as_dict() for r in by_config.get(c.id, [])]} for c in current],
    }


def tasks_with_reported_diffs(kernel: str | None = None) -> int:
    """How many tasks (of one kernel, or all) have a reported diff for at least one config."""
    rows = ReportedDiff.objects.all()
    if kernel:
        rows = rows.filter(task__kernel=kernel)
    return rows.values("task_id").distinct().count()


def report_columns() -> list[dict]:
    """The reports that logged diffs, oldest first: {"device", "date", "category", "n"} (n = rows)."""
    return list(ReportedDiff.objects.values("device", "report_date", "category").annotate(n=Count("id"))
                .order_by("report_date", "device", "category"))


def configs_reported_by_task_and_report() -> list[dict]:
    """{"task_id", "device", "report_date", "category", "configs", "max_rel"}: the heatmap's reported cells."""
    rows = (ReportedDiff.objects.values("task_id", "device", "report_date", "category")
            .annotate(configs=Count("failing_config_id", distinct=True)).order_by())
    worst: dict[tuple, float] = {}
    for task_id, device, day, category, value in ReportedDiff.objects.filter(max_rel__isnull=False).values_list(
            "task_id", "device", "report_date", "category", "max_rel").iterator(chunk_size=5000):
        key = (task_id, device, day, category)
        if not math.isnan(value) and value > worst.get(key, -1.0):
            worst[key] = value
    return [{**row, "max_rel": worst.get((row["task_id"], row["device"], row["report_date"], row["category"]))}
            for row in rows]



# --- reported vs re-tested (CPU tasks) ---------------------------------------------------------------

# The Paddle release that was current when the reports were made (2025-04 … 2025-08): a report's failure
# "reproduces" when our engine's verdict on this release fails too.
REPORT_RELEASE = "3.0.0"


@dataclass
class Reproduction:
    """How many of a CPU task's reported failures our engine reproduces on REPORT_RELEASE."""

    release: str
    configs: int  # the task's reported failing configs
    reproduced: int = 0  # re-tested on the release and failing there too
    no_verdict: int = 0  # re-tested, but the engine gave no plain pass or fail (gap, by design, Torch suspect)
    not_reproduced: list = field(default_factory=list)  # [(config, [Reported])]: pass on the release

    @property
    def judged(self) -> int:
        return self.reproduced + len(self.not_reproduced)

    @property
    def tested(self) -> int:
        return self.judged + self.no_verdict

    @property
    def rate(self) -> float | None:
        return round(self.reproduced / self.judged, 4) if self.judged else None

    @property
    def text(self) -> str:
        if not self.tested:
            return _("none of its %(n)s reported configs has been re-tested on Paddle %(release)s yet") % {
                "n": self.configs, "release": self.release}
        return _("%(reproduced)s of %(judged)s reported failures reproduce on Paddle %(release)s (the release current "
                 "when reported); %(tested)s of %(n)s configs re-tested there") % {
            "reproduced": self.reproduced, "judged": self.judged, "release": self.release, "tested": self.tested,
            "n": self.configs}

    def as_dict(self) -> dict:
        return {
            "release": self.release, "configs": self.configs, "tested": self.tested, "judged": self.judged,
            "reproduced": self.reproduced, "no_verdict": self.no_verdict, "rate": self.rate, "text": self.text,
            "not_reproduced": [{"config": config, "reported": [r.as_dict() for r in reported]}
                               for config, reported in self.not_reproduced],
        }


def task_reproduction(task: Task, grid_rows, release: str = REPORT_RELEASE) -> Reproduction | None:
    """From the task's release grid rows (`releases.task_release_grid`, run cells only — an inferred cell is
    not a re-test): None for a GPU task (no GPU runs here; its reported diffs stand alone)."""
    if task.kernel != Kernel.CPU:
        return None
    found = Reproduction(release=release, configs=task.failing_configs.count())
    passing = []
    for config, cells in grid_rows:
        cell = cells.get(release)
        if cell is None or cell.inferred:
            continue
        if cell.status in FAILING:
            found.reproduced += 1
        elif cell.status in PASSING:
            passing.append(config)
        else:
            found.no_verdict += 1
    by_config = reported_by_config(c.id for c in passing)
    found.not_reproduced = [(c.config, by_config.get(c.id, [])) for c in passing]
    return found
