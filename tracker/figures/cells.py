"""The colour of a verdict in a grid: one value per verdict class (tracker.vocab), so the release grid, the
task page's configs × runs grid and the "fixed in" line read the same statuses alike."""
from __future__ import annotations

from ..vocab import NO_VERDICT, RUNNER_FAILURES, Status, is_failing, is_passing

# The cell colours follow the board's classes (tracker.vocab), so the grid reads as the "fixed in" line
# does: 0 pass (green); 0.25 a verdict that neither passes nor fails — differs from Torch by design, or a
# Torch suspect (purple); 0.5 no verdict / engine gap (grey); 0.75 a Paddle error or crash (orange);
# 1 any other Paddle failure (red).
VERDICT_COLOURS = [[0, "#2ecc71"], [0.25, "#9b59b6"], [0.5, "#bdc3c7"], [0.75, "#e67e22"], [1, "#e74c3c"]]
_ERRORS = {Status.PADDLE_ERROR} | RUNNER_FAILURES
CELL_PASS = 0.0
CELL_DIFFERS = 0.25
CELL_NO_VERDICT = 0.5
CELL_ERROR = 0.75
CELL_FAIL = 1.0


def cell_value(status: str) -> float | None:
    if not status:
        return None
    if is_passing(status):
        return CELL_PASS
    if status in _ERRORS:
        return CELL_ERROR
    if is_failing(status):
        return CELL_FAIL
    if status in NO_VERDICT:
        return CELL_NO_VERDICT
    return CELL_DIFFERS  # BY_DESIGN, TORCH_SUSPECT: the classes partition the statuses
