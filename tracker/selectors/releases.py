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

from dataclasses import asdict, dataclass, field, replace

from django.db.models import Value
from django.utils.translation import gettext as _

from apitester.builds import is_build, version_key
from apitester.wheels import build_date

from .. import bisection
from ..models import ConfigResult, FailingConfig, LatestResult, PullRequest, Task, TestRun
from ..vocab import NO_VERDICT, FixedInKind, Kernel, is_failing, is_passing, lane_of


def has_verdict(status: str) -> bool:
    """The engine judged the config: a pass, a Paddle failure, a documented difference or a Torch suspect."""
    return bool(status) and status not in NO_VERDICT


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
    every release run, one of them out before PaddleAPITest's report (FIRST_REPORT_RELEASE or older) and one
    newer, with a PaddleAPITest PR, is a fix in the test engine — never counted as a Paddle fix.

    One release can't show it: passing on 3.0.0 alone says nothing of the newer Paddle the report failed on (it
    may have broken since), and passing on a newer release alone may be Paddle's fix.
    """
    if answer.kind != FixedInKind.PASSING:
        return answer
    run = [version_key(r) for r in answer.releases if r not in answer.not_run]
    first_report = version_key(FIRST_REPORT_RELEASE)
    if not (any(r <= first_report for r in run) and any(r > first_report for r in run)):
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


def build_note(release: str, releases: list[str]) -> str:
    """A build between releases (issue #46: a develop or post build, apitester.builds.is_build) as bisection names
    it: its date (from its version), its commit (of a run on it) and whether a release out after it holds the fix."""
    if not is_build(release):
        return ""
    commit = (TestRun.objects.filter(release=release).exclude(paddle_commit="")
              .values_list("paddle_commit", flat=True).first() or "")
    values = {"date": build_date(release) or "?", "commit": commit[:10] or "?"}
    if any(not is_build(r) and version_key(r) > version_key(release) for r in releases):
        return _("build of %(date)s, commit %(commit)s") % values
    return _("build of %(date)s, commit %(commit)s, not yet released") % values


def describe(answer: FixedIn) -> str:
    text = _with_build(answer, _describe(answer))
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


def _with_build(answer: FixedIn, text: str) -> str:
    """A fix that landed in a build between releases says which build, and that no release has it yet."""
    note = build_note(answer.release, answer.releases) if answer.kind == FixedInKind.FIXED else ""
    return f"{text} — {note}" if note else text


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
    exact: bool | None = None  # the exact rule's reading of the verdict (None: no value comparison)

    @property
    def inferred(self) -> bool:
        return bool(self.inferred_from)


@dataclass
class ReleaseGrid:
    """One task's configs × releases as every page and chart reads it (release_grids)."""
    releases: list[str]  # oldest first: each release with a verdict, and each a bisecting matrix over the task listed
    cells: dict[int, dict[str, Cell]]  # config id -> release -> its newest Cell; inferred cells name their source

    def statuses(self) -> tuple[dict, dict]:
        """({config: {release: status}} of the run cells, the same of the inferred cells): fixed_in's arguments."""
        run = {c: {r: cell.status for r, cell in row.items() if not cell.inferred} for c, row in self.cells.items()}
        inferred = {c: {r: cell.status for r, cell in row.items() if cell.inferred} for c, row in self.cells.items()}
        return run, inferred


GRID_COLUMNS = ("task_id", "run__lane", "failing_config_id", "paddle_version", "run__paddle_version", "run_id", "status",
                "exact")
# What the task page's grid shows of a cell beyond its status; the answers read statuses only, and these columns (the
# commit's 40 characters above all) are most of the query's time on a board's worth of verdicts.
CELL_DETAILS = ("max_abs", "max_rel", "paddle_commit", "torch_version")


def release_grids(task_ids=None, *, details: bool = False) -> dict[int, ReleaseGrid]:
    """task id -> its ReleaseGrid, for these tasks (None: every task), one query for the verdicts.

    The one reader of per-release verdicts: the task page, /api/tasks/<n>, the board's column and filters, the
    funnel and /charts/releases all read it. A cell is the newest verdict of a config on a release, from runs of the
    task's own lane (a CPU task's cpu lane), keyed by the Paddle version the verdict records (its run's when the
    verdict has none). A task without such a verdict has no grid. ``details``: the cells carry CELL_DETAILS too
    (else None / "").
    """
    tasks = Task.objects.all() if task_ids is None else Task.objects.filter(id__in=list(task_ids))
    own = {task_id: (number, lane_of(kernel)) for task_id, number, kernel in tasks.values_list("id", "number", "kernel")}
    rows = _newest_rows(None if task_ids is None else list(own), details)
    # the newest per (config, lane, release) among the rows (a row per task and run release too: a few more)
    newest: dict[tuple, int] = {}
    for _task, lane, config_id, version, run_version, run_id, *_rest in rows:
        key = (config_id, lane, version or run_version)
        newest[key] = max(newest.get(key, run_id), run_id)
    found: dict[int, dict[int, dict[str, Cell]]] = {}
    for task_id, lane, config_id, version, run_version, run_id, status, exact, *detail in rows:
        release = version or run_version
        if release and task_id in own and lane == own[task_id][1] and newest[(config_id, lane, release)] == run_id:
            max_abs, max_rel, commit, torch = detail or (None, None, "", "")
            found.setdefault(task_id, {}).setdefault(config_id, {})[release] = Cell(
                status, max_abs, max_rel, run_id, commit, torch, exact=exact)
    bisected = bisected_releases_by_task()
    grids = {}
    for task_id, cells in found.items():
        releases = sorted({r for row in cells.values() for r in row} | bisected.get(own[task_id][0], set()),
                          key=version_key)
        grids[task_id] = ReleaseGrid(releases, {c: with_inferred(releases, row) for c, row in sorted(cells.items())})
    return grids


def _newest_rows(task_ids: list[int] | None, details: bool) -> list[tuple]:
    """GRID_COLUMNS (+ CELL_DETAILS) of the verdicts the LatestResult rows of these tasks (None: every task) name,
    by run id: the newest of each config per task, lane, run release and Paddle version — never the results
    themselves (a year of weekly runs is ~400 verdicts per config, of which a grid shows one per release)."""
    latest = LatestResult.objects.all() if task_ids is None else LatestResult.objects.filter(task_id__in=task_ids)
    if not details:  # the rows hold what a status grid reads (the version: the result's, else its run's)
        return list(latest.annotate(none=Value("")).values_list(
            "task_id", "lane", "failing_config_id", "version", "none", "run_id", "status", "exact").order_by("run_id"))
    # the ids first, as a list: given the subquery inline, PostgreSQL hashed the whole results table
    ids = list(latest.values_list("result_id", flat=True))
    return list(ConfigResult.objects.filter(pk__in=ids)
                .values_list(*GRID_COLUMNS, *(CELL_DETAILS if details else ())).order_by("run_id"))


def release_answers(grids: dict[int, ReleaseGrid]) -> dict[int, FixedIn]:
    """task id -> its FixedIn: the one rule every page and chart reads.

    Every task with a grid gets an answer, whether it has verdicts on one release or on many: one release answers
    what it can (passing, partly, never, differs on that release), and "fixed in" and "regressed in" need two by
    their definition. A fix in the test engine needs two as well (as_harness_fix): passing on the release out
    before the report and on a newer one.
    """
    answers = {task_id: fixed_in(*grid.statuses()) for task_id, grid in grids.items()}
    passing = [task_id for task_id, answer in answers.items() if answer.kind == FixedInKind.PASSING]
    if passing:  # only a passing task can be a fix in the test engine: its PRs are read (one query)
        prs = pr_refs_by_task(passing)
        answers.update({t: as_harness_fix(answers[t], prs.get(t, [])) for t in passing})
    return answers


def bisected_releases_by_task() -> dict[int, set[str]]:
    """task number -> every release a bisecting matrix run over it listed (grid columns besides the run ones)."""
    found: dict[int, set[str]] = {}
    for scope in TestRun.objects.filter(parent__isnull=True, scope__mode="bisect").values_list("scope", flat=True):
        for number in scope.get("tasks") or []:
            found.setdefault(number, set()).update(scope.get("releases") or [])
    return found


def with_inferred(releases: list[str], cells: dict[str, Cell]) -> dict[str, Cell]:
    """A config's run cells plus the cells bisection infers between them (each naming the run release it copies)."""
    found = bisection.infer(releases, {r: bisection.outcome(c.status) for r, c in cells.items()})
    return {**cells, **{r: replace(cells[src], inferred_from=src) for r, src in found.items()}}


def _task_grid(task: Task) -> ReleaseGrid:
    """The task's grid; without a verdict yet, the releases of a bisecting matrix over it and no cell."""
    grid = release_grids([task.id], details=True).get(task.id)
    if grid is None:
        bisected = bisected_releases_by_task().get(task.number, set())
        grid = ReleaseGrid(sorted(bisected, key=version_key), {})
    return grid


def task_release_grid(task: Task) -> tuple[list[str], list[tuple[FailingConfig, dict[str, Cell]]]]:
    """(releases oldest first, [(config, {release: newest Cell})]) for the task's re-tested configs, own lane."""
    return _rows(_task_grid(task))


def _rows(grid: ReleaseGrid) -> tuple[list[str], list[tuple[FailingConfig, dict[str, Cell]]]]:
    configs = {fc.id: fc for fc in FailingConfig.objects.filter(id__in=grid.cells).defer("origins")}
    return grid.releases, [(configs[c], cells) for c, cells in grid.cells.items() if c in configs]


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


# The task page draws this many configs of the grid (a task may have 15,000; drawing 457 x 8 cells took seconds);
# the answer above it reads every row, and /api/tasks/<n> lists them all.
GRID_ROWS_SHOWN = 60


def task_releases_panel(task: Task) -> dict:
    """What the task page's per-release panel and /api/tasks/<n> show: the grid, the "fixed in" answer, the merged
    PRs; `shown_rows` the rows the page draws, `hidden_rows` how many it leaves to the API."""
    grid = _task_grid(task)
    answer = release_answers({task.id: grid})[task.id]
    releases, rows = _rows(grid)
    return {"releases": releases, "rows": rows, "answer": answer, "text": describe(answer), "grid": grid,
            "shown_rows": rows[:GRID_ROWS_SHOWN], "hidden_rows": max(0, len(rows) - GRID_ROWS_SHOWN),
            "merged_prs": [pr for pr in task.pull_requests.all() if pr.merged_at]}


def task_fixed_in(task: Task) -> FixedIn:
    return release_answers({task.id: _task_grid(task)})[task.id]


def fixed_in_by_task() -> dict[int, FixedIn]:
    """task id → its FixedIn, for every task with a verdict (the board's column and filters, the funnel)."""
    return release_answers(release_grids())


def release_matrix() -> dict:
    """For /charts/releases: per release the tasks fixed in it (by kernel) and the configs passing, and the
    tasks × releases grid of the fraction of judged configs passing."""
    grids = release_grids()
    answers = release_answers(grids)
    tasks_by_id = {t: (number, kernel) for t, number, kernel in Task.objects.filter(id__in=grids)
                   .values_list("id", "number", "kernel")}
    releases = sorted({r for grid in grids.values() for r in grid.releases}, key=version_key)
    fixed = {kernel.value: {r: 0 for r in releases} for kernel in Kernel}
    harness_fixes = {kernel.value: 0 for kernel in Kernel}  # never counted as a Paddle fix
    passing_configs = {r: 0 for r in releases}
    judged_configs = {r: 0 for r in releases}
    tasks = []
    for task_id in sorted(grids, key=lambda t: tasks_by_id[t][0]):
        number, kernel = tasks_by_id[task_id]
        answer = answers[task_id]
        if answer.kind == FixedInKind.FIXED:
            fixed[kernel][answer.release] += 1
        elif answer.kind == FixedInKind.HARNESS:
            harness_fixes[kernel] += 1
        fractions = []
        for r in releases:
            statuses = [row[r].status for row in grids[task_id].cells.values() if r in row]
            p = sum(1 for status in statuses if is_passing(status))
            n = sum(1 for status in statuses if has_verdict(status))
            passing_configs[r] += p
            judged_configs[r] += n
            fractions.append(round(p / n, 3) if n else None)
        # A cell of the heatmap is inferred when no config of the task was run on that release.
        not_run = [r in answer.not_run for r in releases]
        tasks.append({"number": number, "kernel": kernel, "fractions": fractions,
                      "inferred": not_run, "fractions_inferred": list(zip(fractions, not_run)),
                      "fixed_in": answer.as_dict()})
    return {"releases": releases, "fixed": fixed, "passing_configs": passing_configs,
            "judged_configs": judged_configs, "tasks": tasks, "harness_fixes": harness_fixes}
