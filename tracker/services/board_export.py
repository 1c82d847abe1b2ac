"""Export the board as the tracking issue's markdown, in the community bot's format.

Rows: `| N | api | kernel | @login <img src="https://img.shields.io/badge/状态-报名-2ECC71" /> [#280](url)<br> |`
(one `@login badge PRs<br>` entry per active claimant, in claim order, each with the PRs they
authored; PRs of nobody listed follow in a segment of their own; a locked task shows its reason),
then the 看板信息 table and the 统计信息 line.

Counts differ from the bot's on purpose in one place: the bot counts a task as claimed when its cell
contains "报名", which the lock text "暂不要报名" does too (139 claimed on the seed board where 113 is
true). Here a locked task is never counted as claimed, submitted or completed.

The output depends only on stored state, in a fixed order: same state → byte-identical text.
"""
from __future__ import annotations

from collections import defaultdict

from ..models import Claim, ClaimStatus, PullRequest, Task

BADGE_COLOURS = {
    ClaimStatus.CLAIMED.value: "2ECC71",
    ClaimStatus.RFC.value: "F1C40F",
    ClaimStatus.DESIGN_DOC.value: "3498DB",
    ClaimStatus.PR_SUBMITTED.value: "F39C12",
    ClaimStatus.PARTIAL.value: "FFC0CB",
    ClaimStatus.COMPLETED.value: "9B59B6",
}
TASK_HEADER = "| 序号 | API | kernel类别 | 报名人/状态/PR |\n| :---: | :---: | :---: | :---: |\n"
SUMMARY_HEADER = ("| 任务方向 | 任务数量 | 提交作品 / 任务认领 | 提交率 | 完成 | 完成率 |\n"
                  "| :----: | :----: | :----:  | :----: | :----: | :----: |\n")
TASK_DIRECTION = "精度问题修复"
SUBMITTED_STATUSES = {ClaimStatus.PR_SUBMITTED.value, ClaimStatus.PARTIAL.value, ClaimStatus.COMPLETED.value}
# A PR whose state we do not know (imported from the issue text) was submitted; a closed one was not.
SUBMITTED_PR_STATES = {PullRequest.State.OPEN, PullRequest.State.MERGED, PullRequest.State.UNKNOWN}


def badge(status: str) -> str:
    return f'<img src="https://img.shields.io/badge/状态-{status}-{BADGE_COLOURS[status]}" />'


def pr_link(pr: PullRequest) -> str:
    return f"[#{pr.number}]({pr.url})"


def _cell_text(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _load():
    tasks = list(Task.objects.order_by("number"))
    claims = defaultdict(list)
    for claim in (Claim.objects.filter(withdrawn_at__isnull=True).select_related("contributor")
                  .order_by("task__number", "created", "id")):
        claims[claim.task_id].append(claim)
    prs = defaultdict(list)
    for pr in PullRequest.objects.prefetch_related("tasks").order_by("number", "repo"):
        for task in pr.tasks.all():
            prs[task.pk].append(pr)
    return tasks, claims, prs


def task_cell(task: Task, claims: list[Claim], prs: list[PullRequest]) -> str:
    entries = []
    if task.locked_reason:
        entries.append(_cell_text(task.locked_reason) + ("<br>" if claims or prs else ""))
    claimant_ids = {claim.contributor_id for claim in claims}
    for claim in claims:
        links = "".join(" " + pr_link(pr) for pr in prs if pr.author_id == claim.contributor_id)
        entries.append(f"@{claim.contributor.login} {badge(claim.status)}{links}<br>")
    # PRs whose author is not a claimant (e.g. imported from the plain issue text, which does not say
    # whose PR is whose) get a segment of their own, so that re-importing does not invent an author.
    orphans = [pr for pr in prs if pr.author_id not in claimant_ids]
    if orphans:
        entries.append(" ".join(pr_link(pr) for pr in orphans) + "<br>")
    return " ".join(entries)


def board_statistics(tasks, claims, prs) -> dict:
    total = len(tasks)
    claimed = submitted = completed = 0
    completed_by: dict[str, int] = defaultdict(int)
    for task in tasks:
        if task.locked:
            continue
        task_claims = claims.get(task.pk, [])
        task_prs = prs.get(task.pk, [])
        statuses = {claim.status for claim in task_claims}
        is_completed = (ClaimStatus.COMPLETED.value in statuses
                        or any(pr.state == PullRequest.State.MERGED and not pr.part for pr in task_prs))
        is_submitted = is_completed or bool(statuses & SUBMITTED_STATUSES) or any(
            pr.state in SUBMITTED_PR_STATES for pr in task_prs)
        claimed += bool(task_claims) or is_submitted
        submitted += is_submitted
        completed += is_completed
        for claim in task_claims:
            if claim.status == ClaimStatus.COMPLETED.value:
                completed_by[claim.contributor.login] += 1
    return {"total": total, "claimed": claimed, "submitted": submitted, "completed": completed,
            "completed_by": dict(sorted(completed_by.items(), key=lambda item: (item[0].casefold(), item[0])))}


def _percent(part: int, total: int) -> str:
    # The bot's own formatting: round(x, 2) printed by str() — "56.28%", "50.0%".
    return f"{round(part / total * 100, 2) if total else 0.0}%"


def export_board() -> str:
    tasks, claims, prs = _load()
    lines = [TASK_HEADER]
    for task in tasks:
        cell = task_cell(task, claims.get(task.pk, []), prs.get(task.pk, []))
        lines.append(f"| {task.number} | {_cell_text(task.api)} | {task.kernel} | {cell} |\n")
    stats = board_statistics(tasks, claims, prs)
    lines.append("\n### 看板信息\n\n")
    lines.append(SUMMARY_HEADER)
    lines.append(f"| {TASK_DIRECTION} | {stats['total']} | {stats['submitted']} / {stats['claimed']} | "
                 f"{_percent(stats['submitted'], stats['total'])} | {stats['completed']} | "
                 f"{_percent(stats['completed'], stats['total'])} |\n")
    lines.append("\n### 统计信息\n\n")
    people = " ".join(f"@{login} ({count})" for login, count in stats["completed_by"].items())
    lines.append(("排名不分先后 " + people).rstrip() + "\n")
    return "".join(lines)
