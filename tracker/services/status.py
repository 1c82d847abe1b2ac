"""Derive a task's board status from its claims and pull requests (shared by every write path)."""
from ..models import CLAIM_STATUS_RANK, ClaimStatus, PullRequest, Task, TaskStatus

_DONE = {ClaimStatus.COMPLETED.value}
_PR = {ClaimStatus.PR_SUBMITTED.value, ClaimStatus.PARTIAL.value}


def compute_task_status(task: Task) -> str:
    if task.locked_reason:
        return TaskStatus.LOCKED
    claim_statuses = {c.status for c in task.claims.all() if c.withdrawn_at is None}
    pr_states = {pr.state for pr in task.pull_requests.all()}
    merged_full = any(pr.state == PullRequest.State.MERGED and not pr.part for pr in task.pull_requests.all())
    if claim_statuses & _DONE or merged_full:
        return TaskStatus.COMPLETED
    # A PR listed on the board whose state we have not seen yet (UNKNOWN: the seed lists PR numbers
    # only) still means a PR was submitted; a PR closed without merge does not.
    submitted = {PullRequest.State.OPEN, PullRequest.State.MERGED, PullRequest.State.UNKNOWN}
    if claim_statuses & _PR or pr_states & submitted:
        return TaskStatus.PR_SUBMITTED
    if claim_statuses:
        return TaskStatus.CLAIMED
    return TaskStatus.OPEN


def refresh_task_status(task: Task) -> bool:
    """Recompute and store the task's status; returns True when it changed."""
    new_status = compute_task_status(task)
    if new_status != task.status:
        task.status = new_status
        task.save(update_fields=["status", "updated"])
        return True
    return False


def advance_claim_status(current: str, proposed: str) -> str:
    """A person's status only moves forward: events that arrive late never undo progress."""
    return proposed if CLAIM_STATUS_RANK.get(proposed, -1) > CLAIM_STATUS_RANK.get(current, -1) else current
