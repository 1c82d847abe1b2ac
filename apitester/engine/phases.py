"""Where one verdict's seconds go: a clock of named phases (issue #43; docs/verdicts.md "Where a verdict's time goes").

Each trial has its own clock (``apitester.engine.trial.Trial.clock``, made by ``execute.run_config`` for each config) and
it is read into ``Verdict.phases`` (seconds per phase,
plus ``other``: the rest of the verdict's wall time). Spans nest; a phase is credited its *exclusive* time (a
comparison's seconds do not include the exact rule's, which has its own phase), except inside an absorbing span
(the readings): everything run inside it is the readings' time, whatever phases it passes through, so the
verdict's own phases stay what a verdict without readings costs.

Django-free and framework-free: the engine's core and the comparison both use it.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from enum import StrEnum
from typing import Callable, Iterator


class Phase(StrEnum):
    DRAWS = "draws"  # the inputs of each draw (apitester.inputs.materialise_draw)
    CONVERT = "convert"  # numpy inputs -> Paddle and Torch tensors, outputs -> numpy
    PADDLE = "paddle"  # Paddle's forward call (plain and adapted layers, every draw)
    TORCH = "torch"  # the reference's forward call
    PADDLE_BACKWARD = "paddle_backward"  # paddle.grad
    TORCH_BACKWARD = "torch_backward"  # torch.autograd.grad
    COMPARE = "compare"  # the 1e-2 comparison, diff maps
    EXACT = "exact"  # the exact rule: exact / max_ulp on the outputs already computed
    TORCH_CACHE = "torch_cache"  # reading and writing the Torch result cache (apitester.engine.torch_cache)
    READINGS = "readings"  # the stability re-run and who is closer (asked for: --readings)
    OTHER = "other"  # the verdict's seconds outside every phase above (parsing, binding, bookkeeping)


# The phases that are Paddle's and Torch's own calls: ``Verdict.framework_seconds`` is their sum.
FRAMEWORK_PHASES = (Phase.PADDLE, Phase.TORCH, Phase.PADDLE_BACKWARD, Phase.TORCH_BACKWARD)


class PhaseClock:
    """Exclusive seconds per phase of one config being run (one per trial)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stack: list[list] = []  # [phase, seconds of nested spans, absorbing]

    def reset(self) -> None:
        self.seconds = {}
        self._stack = []

    @contextmanager
    def span(self, phase: Phase, *, absorb: bool = False) -> Iterator[None]:
        if any(frame[2] for frame in self._stack):  # inside the readings: their time, not this phase's
            yield
            return
        frame = [phase, 0.0, absorb]
        self._stack.append(frame)
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self._stack.pop()
            self.seconds[phase] = self.seconds.get(phase, 0.0) + elapsed - frame[1]
            if self._stack:
                self._stack[-1][1] += elapsed

    def call(self, phase: Phase, fn: Callable, *args, **kwargs):
        with self.span(phase):
            return fn(*args, **kwargs)

    def framework(self) -> float:
        return sum(self.seconds.get(p, 0.0) for p in FRAMEWORK_PHASES)

    def report(self, wall: float) -> dict[str, float]:
        """Seconds per phase that took any, rounded to 0.1 ms, with ``other`` the wall time left."""
        phases = {str(p): round(s, 4) for p, s in self.seconds.items() if s > 0}
        phases[str(Phase.OTHER)] = round(max(wall - sum(self.seconds.values()), 0.0), 4)
        return phases


__all__ = ["FRAMEWORK_PHASES", "Phase", "PhaseClock"]
