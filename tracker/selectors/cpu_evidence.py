"""What the CPU lane says about a GPU task's configs (its CPU evidence; never a GPU verdict).

A GPU task's configs re-tested on the cpu lane (services.cpu_evidence) either fail there too — the failure is
device-independent, and the CPU lane's diagnosis can shrink it to a paste-ready repro — or pass there: the
GPU kernel alone is at fault, or the failure was fixed since the report. The GPU verdict waits for a GPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import gettext as _

from apitester.vocab import kernel_not_registered

from ..models import FailingConfig, Task
from ..vocab import FAILING, PASSING, Kernel, Lane
from .runs import latest_results

CPU_LANE = Lane.CPU
# The configs a page or the API lists by name, per side (a GPU task may have ~3,000 configs).
LISTED = 50


@dataclass
class CpuEvidence:
    configs: int  # the task's failing configs
    tested: int = 0  # of those, with a verdict on the cpu lane (main environment)
    fails: int = 0
    passes: int = 0
    other: int = 0  # no verdict (engine gap), documented difference, Torch suspect
    no_cpu_kernel: int = 0  # Paddle has no CPU kernel for the config (GPU-only op or dtype): it cannot run here
    paddle_versions: list[str] = field(default_factory=list)
    failing_configs: list[str] = field(default_factory=list)  # at most LISTED
    passing_configs: list[str] = field(default_factory=list)

    @property
    def reading(self) -> str:
        if not self.tested:
            return "untested"
        if self.fails and self.passes:
            return "mixed"
        if self.fails or self.passes:
            return "device_independent" if self.fails else "gpu_specific"
        return "no_cpu_kernel" if self.no_cpu_kernel and not self.other else "no_verdict"

    def lines(self) -> list[str]:
        """The evidence as the task page says it, one line per side that has configs."""
        args = {"n": 0, "tested": self.tested, "versions": ", ".join(self.paddle_versions) or "?"}
        out = []
        if self.fails:
            out.append(_("fails on CPU too (device-independent): %(n)s of %(tested)s configs re-tested on the CPU "
                         "lane (Paddle %(versions)s)") % {**args, "n": self.fails})
        if self.passes:
            out.append(_("passes on CPU (GPU-kernel-specific, or fixed): %(n)s of %(tested)s configs re-tested on "
                         "the CPU lane (Paddle %(versions)s)") % {**args, "n": self.passes})
        if self.no_cpu_kernel:
            out.append(_("cannot run on CPU (Paddle has no CPU kernel for it: no evidence either way): %(n)s of "
                         "%(tested)s") % {**args, "n": self.no_cpu_kernel})
        if self.other:
            out.append(_("no plain verdict on CPU (engine gap, documented difference or Torch suspect): %(n)s of "
                         "%(tested)s") % {**args, "n": self.other})
        return out

    def as_dict(self) -> dict:
        return {
            "configs": self.configs, "tested": self.tested, "fails_on_cpu": self.fails, "passes_on_cpu": self.passes,
            "other": self.other, "no_cpu_kernel": self.no_cpu_kernel, "reading": self.reading,
            "paddle_versions": self.paddle_versions,
            "text": self.lines(), "failing_configs": self.failing_configs, "passing_configs": self.passing_configs,
            "listed_at_most": LISTED,
        }


def task_cpu_evidence(task: Task, latest: dict | None = None) -> CpuEvidence | None:
    """The CPU evidence of a GPU task (None for a CPU task: its CPU verdicts are its own verdicts); `latest`: the
    cpu lane's latest_results when the caller read them already (runs.task_latest)."""
    if task.kernel != Kernel.GPU:
        return None
    if latest is None:
        latest = latest_results(lane=CPU_LANE, task=task)
    evidence = CpuEvidence(configs=task.failing_configs.count(), tested=len(latest))
    versions = set()
    for result in sorted(latest.values(), key=lambda r: r.failing_config_id):
        versions.add(result.run.paddle_version or result.paddle_version)
        if kernel_not_registered(result.status, result.message):  # not a failure of the op: it has no CPU kernel
            evidence.no_cpu_kernel += 1
        elif result.status in FAILING:
            evidence.fails += 1
            if len(evidence.failing_configs) < LISTED:
                evidence.failing_configs.append(result.failing_config_id)
        elif result.status in PASSING:
            evidence.passes += 1
            if len(evidence.passing_configs) < LISTED:
                evidence.passing_configs.append(result.failing_config_id)
        else:
            evidence.other += 1
    evidence.paddle_versions = sorted(v for v in versions if v)
    # the listed configs' texts, in one query (the ids above)
    texts = dict(FailingConfig.objects.filter(pk__in=evidence.failing_configs + evidence.passing_configs)
                 .values_list("id", "config"))
    evidence.failing_configs = [texts[pk] for pk in evidence.failing_configs]
    evidence.passing_configs = [texts[pk] for pk in evidence.passing_configs]
    return evidence
