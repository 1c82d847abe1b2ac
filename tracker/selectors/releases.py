"""Per-release verdicts: the configs × releases grid of a task and where its fix landed.

``fixed_in`` is a pure function of a grid {config: {release: status}} — the answer to "did the fix land,
and in which release?" — so it is tested on synthetic grids; the readers below build grids from stored
verdicts, keyed by the Paddle version each verdict records (the build that produced it).

Statuses are read by the board's one classification (tracker.vocab, docs/verdicts.md): a config *passes*
only by the strict rule (is_passing) and *fails* only when the verdict blames Paddle (is_failing). A
documented difference or a Torch suspect is neither: it is a verdict (its strict layer failed), so it keeps
a release from being all-pass, but it is no failure and makes no regression. Engine gaps (NO_VERDICT)
say nothing about a release and are left out.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace

from django.utils.translation import gettext as _

from .. import bisection
from ..models import ConfigResult, FailingConfig, PullRequest, Task, TestRun
from ..vocab import NO_VERDICT, FixedInKind, Kernel, is_failing, is_passing, lane_of, status_class


def has_verdict(status: str) -> bool:
    """The engine judged the config: a pass, a Paddle failure, a documented difference or a Torch suspect."""
    return bool(status) and status not in NO_VERDICT


def version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in re.split(r"[.+-]", version or "")[:3])


# The newest Paddle release out before PaddleAPITest's first report (reports/ci_ce_cpu from 2025-04-27;
# Paddle 3.0.0 is from March 2025 and the oldest release the board provisions).  A task whose configs
# pass on it and on every newer release tested was never a Paddle bug on those configs.
FIRST_REPORT_RELEASE = "3.0.0"
PADDLEAPITEST_REPO = "pfcclab/paddleapitest"


@dataclass
class FixedIn:
    kind: FixedInKind
    release: str = ""  # fixed in / regressed in this release
    latest: str = ""  # newest release with a verdict
    passing_latest: int = 0  # configs passing on `latest`
    judged_latest: int = 0  # configs with a pass/fail verdict on `latest`
    before: str = ""  # the release before `release`
    failing_before: int = 0  # configs failing on `before`
    releases: list[str] = field(default_factory=list)  # releases with a verdict, oldest first
    not_run: list[str] = field(default_factory=list)  # releases whose every cell is inferred (bisection)
    harness_pr: str = ""  # kind harness: the PaddleAPITest PR that fixed the test engine, "owner/name#N"

    def as_dict(self) -> dict:
        return {**asdict(self), "text": describe(self)}


def as_harness_fix(answer: FixedIn, pr_refs: list[str]) -> FixedIn:
    """The answer read with the task's linked PRs (["owner/name#N", ...], merged first): a task passing on
    every release run, one of them out before PaddleAPITest's report (FIRST_REPORT_RELEASE or older),
    with a PaddleAPITest PR, is a fix in the test engine — never counted as a Paddle fix."""
    if answer.kind != FixedInKind.PASSING:
        return answer
    run = [r for r in answer.releases if r not in answer.not_run]
    if not any(version_key(r) <= version_key(FIRST_REPORT_RELEASE) for r in run):
        return answer
    engine_prs = [ref for ref in pr_refs if ref.lower().startswith(PADDLEAPITEST_REPO + "#")]
    if not engine_prs:
        return answer
    return replace(answer, kind=FixedInKind.HARNESS, harness_pr=engine_prs[0])


def regressed_in(grid: dict, releases: list[str]) -> tuple[str, str] | None:
    """The regression rule between releases (selectors.runs.regressions is the one between runs):
    (R, the release before R) for the earliest release R that starts a config's final failing stretch
    after it passed on an older release; None when no config regressed.

    Only passes and failures are steps, as between runs: a documented difference or an engine gap
    neither makes nor hides a regression.
    """
    broke_at = []
    for row in grid.values():
        steps = [(r, row[r]) for r in releases if r in row and (is_passing(row[r]) or is_failing(row[r]))]
        if not steps or not is_failing(steps[-1][1]):
            continue
        i = len(steps) - 1
        while i > 0 and is_failing(steps[i - 1][1]):
            i -= 1
        if i > 0:  # it passed on steps[i-1] and fails from steps[i] on
            broke_at.append(steps[i][0])
    if not broke_at:
        return None
    release = min(broke_at, key=version_key)
    return release, releases[releases.index(release) - 1]


def fixed_in(grid: dict, inferred: dict | None = None) -> FixedIn:
    """Where the fix landed, from {config: {release: status}} (releases in any order, any subset per config).

    ``inferred``: {config: {release: status}} of cells not run but inferred by bisection; they count as
    verdicts, and the releases that have nothing else are named ``not_run``.

    * fixed in R: every judged config passes on R and on every newer release, and the release before R had
      configs that did not pass (R is the first of that final all-pass stretch);
    * passing: every judged config passes on every release tested;
    * regressed in R: see regressed_in;
    * partly fixed: some, not all, configs pass on the newest release;
    * differs on latest: no config passes on the newest release and none fails there: they differ from Torch by
      design (or the engine suspects the Torch reference);
    * never: no config passes on the newest release, and some fail.
    """
    run = {r for row in grid.values() for r, s in row.items() if has_verdict(s)}
    if inferred:
        grid = {c: {**inferred.get(c, {}), **grid.get(c, {})} for c in {*grid, *inferred}}
    releases = sorted({r for row in grid.values() for r, s in row.items() if has_verdict(s)}, key=version_key)
    if not releases:
        return FixedIn(FixedInKind.UNTESTED)
    answer = _fixed_in(grid, releases)
    answer.not_run = [r for r in releases if r not in run]
    return answer


def _fixed_in(grid: dict, releases: list[str]) -> FixedIn:
    passing = {r: sum(1 for row in grid.values() if is_passing(row.get(r, ""))) for r in releases}
    failing = {r: sum(1 for row in grid.values() if is_failing(row.get(r, ""))) for r in releases}
    judged = {r: sum(1 for row in grid.values() if has_verdict(row.get(r, ""))) for r in releases}
    all_pass = {r: passing[r] == judged[r] > 0 for r in releases}
    latest = releases[-1]
    base = dict(latest=latest, passing_latest=passing[latest], judged_latest=judged[latest], releases=releases)
    if all_pass[latest]:
        start = len(releases) - 1
        while start > 0 and all_pass[releases[start - 1]]:
            start -= 1
        if start == 0:
            return FixedIn(FixedInKind.PASSING, **base)
        before = releases[start - 1]
        return FixedIn(FixedInKind.FIXED, release=releases[start], before=before, failing_before=failing[before], **base)
    regression = regressed_in(grid, releases)
    if regression:
        release, before = regression
        return FixedIn(FixedInKind.REGRESSED, release=release, before=before, failing_before=failing[before], **base)
    if passing[latest]:
        return FixedIn(FixedInKind.PARTLY_FIXED, **base)
    if not failing[latest]:
        return FixedIn(FixedInKind.DIFFERS_ON_LATEST, **base)
    return FixedIn(FixedInKind.NEVER, **base)


def release_ranges(releases: list[str], chosen: list[str]) -> str:
    """The chosen releases as runs of neighbours in ``releases``: "3.1.1–3.3.0, 3.3.2"."""
    spans: list[list[str]] = []
    for i, r in enumerate(releases):
        if r in chosen:
            if spans and releases.index(spans[-1][-1]) == i - 1:
                spans[-1].append(r)
            else:
                spans.append([r])
    return ", ".join(span[0] if len(span) == 1 else f"{span[0]}–{span[-1]}" for span in spans)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else _("%(a)s and %(b)s") % {"a": ", ".join(names[:-1]), "b": names[-1]}


def describe(answer: FixedIn) -> str:
    text = _describe(answer)
    if not answer.not_run:
        return text
    not_run = release_ranges(answer.releases, answer.not_run)
    if answer.kind == FixedInKind.FIXED:
        run = [r for r in answer.releases if r not in answer.not_run]
        before = [r for r in run if version_key(r) < version_key(answer.release)]
        after = [r for r in run if r not in before]
        return _("fixed in Paddle %(r)s: fails on %(b)s, passes on %(a)s; %(n)s not run") % {
            "r": answer.release, "b": _and(before), "a": _and(after), "n": not_run}
    return _("%(text)s; %(n)s not run (inferred)") % {"text": text, "n": not_run}


def _describe(answer: FixedIn) -> str:
    if answer.kind == FixedInKind.FIXED:
        return _("fixed in Paddle %(r)s (all %(n)d configs pass from %(r)s on; %(f)d fail on %(b)s)") % {
            "r": answer.release, "n": answer.judged_latest, "f": answer.failing_before, "b": answer.before}
    if answer.kind == FixedInKind.PASSING:
        return _("passing on every release tested (%(rs)s)") % {
            "rs": ", ".join(r for r in answer.releases if r not in answer.not_run)}
    if answer.kind == FixedInKind.HARNESS:
        return _("Paddle agrees with Torch on every release tested (%(rs)s); the fix was in the test engine "
                 "(%(pr)s)") % {"rs": ", ".join(r for r in answer.releases if r not in answer.not_run),
                                "pr": answer.harness_pr}
    if answer.kind == FixedInKind.REGRESSED:
        return _("regressed in %(r)s (passed on %(b)s; %(p)d of %(n)d pass on %(l)s)") % {
            "r": answer.release, "b": answer.before, "p": answer.passing_latest, "n": answer.judged_latest,
            "l": answer.latest}
    if answer.kind == FixedInKind.PARTLY_FIXED:
        return _("partly fixed: %(p)d of %(n)d pass on %(l)s") % {
            "p": answer.passing_latest, "n": answer.judged_latest, "l": answer.latest}
    if answer.kind == FixedInKind.DIFFERS_ON_LATEST:
        return _("differs from Torch on %(l)s: none of its %(n)d configs passes and none fails "
                 "(by design, or the engine suspects the Torch reference)") % {"l": answer.latest, "n": answer.judged_latest}
    if answer.kind == FixedInKind.NEVER:
        return _("failing on every release tested (%(rs)s)") % {
            "rs": ", ".join(r for r in answer.releases if r not in answer.not_run)}
    return _("not tested on any release yet")


# ----------------------------------------------------------------------------- reading stored verdicts


@dataclass
class Cell:
    status: str
    max_abs: float | None
    max_rel: float | None
    run_id: int
    paddle_commit: str = ""
    torch_version: str = ""
    inferred_from: str = ""  # not run: bisection copied this cell from the run release named here

    @property
    def inferred(self) -> bool:
        return bool(self.inferred_from)


def _release_of(paddle_version: str, run_version: str) -> str:
    return paddle_version or run_version or ""


def _outcome(status: str) -> str:
    try:
        return status_class(status)
    except KeyError:
        return status


def bisected_releases_by_task() -> dict[int, set[str]]:
    """task number -> every release a bisecting matrix run over it listed (grid columns besides the run ones)."""
    found: dict[int, set[str]] = {}
    for scope in TestRun.objects.filter(parent__isnull=True, scope__mode="bisect").values_list("scope", flat=True):
        for number in scope.get("tasks") or []:
            found.setdefault(number, set()).update(scope.get("releases") or [])
    return found


def bisected_releases(task_number: int) -> list[str]:
    return sorted(bisected_releases_by_task().get(task_number, set()), key=version_key)


def split_grid(grid: dict, extra_releases=()) -> tuple[dict, dict, list[str]]:
    """A task's {config: {release: status}} of run cells → (run cells, inferred cells, releases oldest first)."""
    releases = sorted({r for row in grid.values() for r in row} | set(extra_releases), key=version_key)
    inferred = {c: {r: row[src] for r, src in inferred_row(releases, row).items()} for c, row in grid.items()}
    return grid, inferred, releases


def inferred_row(releases: list[str], row: dict) -> dict:
    """{release: source release} of the cells bisection infers for one config's {release: status}."""
    return bisection.infer(releases, {r: _outcome(s) for r, s in row.items()})


def with_inferred(releases: list[str], cells: dict[str, Cell]) -> dict[str, Cell]:
    found = inferred_row(releases, {r: c.status for r, c in cells.items()})
    return {**cells, **{r: replace(cells[src], inferred_from=src) for r, src in found.items()}}


def split_cells(rows) -> tuple[dict, dict]:
    """({config: {release: status}} of run cells, the same of inferred cells) for fixed_in."""
    run = {fc.id: {r: c.status for r, c in cells.items() if not c.inferred} for fc, cells in rows}
    inferred = {fc.id: {r: c.status for r, c in cells.items() if c.inferred} for fc, cells in rows}
    return run, inferred


def task_release_grid(task: Task) -> tuple[list[str], list[tuple[FailingConfig, dict[str, Cell]]]]:
    """(releases oldest first, [(config, {release: newest Cell})]) for the task's re-tested configs, own lane."""
    rows = (ConfigResult.objects.filter(task=task, run__lane=task.lane)
            .values_list("failing_config_id", "paddle_version", "run__paddle_version", "run_id", "status",
                         "max_abs", "max_rel", "paddle_commit", "torch_version")
            .order_by("failing_config_id", "run_id"))
    cells: dict[int, dict[str, Cell]] = {}
    for config_id, version, run_version, run_id, status, max_abs, max_rel, commit, torch in rows:
        release = _release_of(version, run_version)
        if release:
            cells.setdefault(config_id, {})[release] = Cell(status, max_abs, max_rel, run_id, commit, torch)
    releases = sorted({r for row in cells.values() for r in row} | set(bisected_releases(task.number)), key=version_key)
    configs = {fc.id: fc for fc in FailingConfig.objects.filter(id__in=cells).defer("origins")}
    return releases, [(configs[cid], with_inferred(releases, cells[cid])) for cid in sorted(cells)]


def pr_refs_by_task(task_ids=None) -> dict[int, list[str]]:
    """task id → its linked PRs as "owner/name#N", merged ones first (one query)."""
    links = PullRequest.tasks.through.objects.values_list("task_id", "pullrequest__repo", "pullrequest__number",
                                                          "pullrequest__merged_at")
    if task_ids is not None:
        links = links.filter(task_id__in=list(task_ids))
    refs: dict[int, list[tuple[bool, str]]] = {}
    for task_id, repo, number, merged_at in links:
        refs.setdefault(task_id, []).append((merged_at is None, f"{repo}#{number}"))
    return {task_id: [ref for _unmerged, ref in sorted(pairs)] for task_id, pairs in refs.items()}


def task_fixed_in_from_rows(task: Task, rows) -> FixedIn:
    """The task's answer from its release grid rows, read with its linked PRs (as_harness_fix)."""
    return as_harness_fix(fixed_in(*split_cells(rows)), pr_refs_by_task([task.id]).get(task.id, []))


def task_releases_panel(task: Task) -> dict:
    """What the task page's per-release panel shows: the grid, the "fixed in" answer, the merged PRs."""
    releases, rows = task_release_grid(task)
    answer = task_fixed_in_from_rows(task, rows)
    return {"releases": releases, "rows": rows, "answer": answer, "text": describe(answer),
            "merged_prs": [pr for pr in task.pull_requests.all() if pr.merged_at]}


def task_fixed_in(task: Task) -> FixedIn:
    _releases, rows = task_release_grid(task)
    return task_fixed_in_from_rows(task, rows)


def fixed_in_by_task() -> dict[int, FixedIn]:
    """task id → its FixedIn for every task with verdicts on more than one release (one query)."""
    grids: dict[int, dict[int, dict[str, str]]] = {}
    rows = (ConfigResult.objects.values_list("task_id", "failing_config_id", "paddle_version",
                                             "run__paddle_version", "run__lane", "status", "task__kernel")
            .order_by("run_id"))
    for task_id, config_id, version, run_version, lane, status, kernel in rows:
        release = _release_of(version, run_version)
        if release and lane == lane_of(kernel):
            grids.setdefault(task_id, {}).setdefault(config_id, {})[release] = status
    answers = {}
    numbers = dict(Task.objects.filter(id__in=grids).values_list("id", "number"))
    bisected = bisected_releases_by_task()
    for task_id, grid in grids.items():
        if len({r for row in grid.values() for r in row}) > 1:
            run, inferred, _releases = split_grid(grid, bisected.get(numbers.get(task_id), ()))
            answers[task_id] = fixed_in(run, inferred)
    passing = [task_id for task_id, answer in answers.items() if answer.kind == FixedInKind.PASSING]
    if passing:  # only a passing task can be a fix in the test engine: its PRs are read (one query)
        prs = pr_refs_by_task(passing)
        answers.update({t: as_harness_fix(answers[t], prs.get(t, [])) for t in passing})
    return answers


def release_matrix() -> dict:
    """For /charts/releases: per release the tasks fixed in it (by kernel) and the configs passing, and the
    tasks × releases grid of the fraction of judged configs passing."""
    kernels = dict(Task.objects.values_list("id", "kernel"))
    numbers = dict(Task.objects.values_list("id", "number"))
    grids: dict[int, dict[int, dict[str, str]]] = {}
    for task_id, config_id, version, run_version, lane, status in (
            ConfigResult.objects.values_list("task_id", "failing_config_id", "paddle_version", "run__paddle_version",
                                             "run__lane", "status").order_by("run_id")):
        release = _release_of(version, run_version)
        if release and task_id in kernels and lane == lane_of(kernels[task_id]):
            grids.setdefault(task_id, {}).setdefault(config_id, {})[release] = status
    bisected = bisected_releases_by_task()
    split = {t: split_grid(g, bisected.get(numbers.get(t), ())) for t, g in grids.items()}
    releases = sorted({r for _run, _inf, rs in split.values() for r in rs}, key=version_key)
    fixed = {kernel.value: {r: 0 for r in releases} for kernel in Kernel}
    harness_fixes = {kernel.value: 0 for kernel in Kernel}  # never counted as a Paddle fix
    prs = pr_refs_by_task()
    passing_configs = {r: 0 for r in releases}
    judged_configs = {r: 0 for r in releases}
    tasks = []
    for task_id in sorted(grids, key=lambda t: numbers.get(t, 0)):
        run, inferred, _releases = split[task_id]
        answer = as_harness_fix(fixed_in(run, inferred), prs.get(task_id, []))
        grid = {c: {**inferred.get(c, {}), **row} for c, row in run.items()}
        if answer.kind == FixedInKind.FIXED:
            fixed[kernels[task_id]][answer.release] += 1
        elif answer.kind == FixedInKind.HARNESS:
            harness_fixes[kernels[task_id]] += 1
        fractions = []
        for r in releases:
            p = sum(1 for row in grid.values() if is_passing(row.get(r, "")))
            n = sum(1 for row in grid.values() if has_verdict(row.get(r, "")))
            passing_configs[r] += p
            judged_configs[r] += n
            fractions.append(round(p / n, 3) if n else None)
        # A cell of the heatmap is inferred when no config of the task was run on that release.
        not_run = [r in answer.not_run for r in releases]
        tasks.append({"number": numbers[task_id], "kernel": kernels[task_id], "fractions": fractions,
                      "inferred": not_run, "fractions_inferred": list(zip(fractions, not_run)),
                      "fixed_in": answer.as_dict()})
    return {"releases": releases, "fixed": fixed, "passing_configs": passing_configs,
            "judged_configs": judged_configs, "tasks": tasks, "harness_fixes": harness_fixes}
