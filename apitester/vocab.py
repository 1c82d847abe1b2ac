"""The verdict statuses and how each is read — one definition for the engine, the runner and the board.

Plain Python (no Django): the engine produces these statuses, the pool adds the runner's own, the board
stores and counts them. ``Status`` members are ``str``s, so the engine's JSON, the database and the
templates see plain strings ("pass", "accuracy_error", …) at every seam.

Every status is in exactly one class (docs/verdicts.md):

* ``PASSING`` — the strict layer passes: the only status that verifies a fix;
* ``FAILING`` — the verdict blames Paddle (or Paddle's kernel killed / hung its worker);
* ``NO_VERDICT`` — the engine could not judge the config (an engine gap, never a Paddle bug);
* ``BY_DESIGN`` — ``documented_difference``: Paddle still differs from the plain Torch call, as it
  documents; not a pass (the difference is still there) and not a bug to fix in Paddle's kernel;
* ``TORCH_SUSPECT`` — the strict layer fails and the evidence says the plain Torch call is the side off
  the exact value; a human reads the evidence.

"Fix verified", runs, regressions, the release matrix and the charts read PASSING = {"pass"} only, and an
engine verdict is ``pass`` only when its strict layer passes — so all of them follow the strict layer.
"""
from __future__ import annotations

import re

from enum import StrEnum


class Status(StrEnum):
    PASS = "pass"
    ACCURACY_ERROR = "accuracy_error"
    DTYPE_MISMATCH = "dtype_mismatch"
    SHAPE_MISMATCH = "shape_mismatch"
    PADDLE_ERROR = "paddle_error"
    TORCH_ERROR = "torch_error"
    UNSUPPORTED = "unsupported"
    # The runner's (apitester.pool): the config's worker died, died once then gave a verdict, hung,
    # or the config was not run because its estimated memory exceeds the worker's budget.
    CRASH = "crash"
    FLAKY_CRASH = "flaky_crash"
    TIMEOUT = "timeout"
    SKIPPED_TOO_LARGE = "skipped_too_large"
    DOCUMENTED_DIFFERENCE = "documented_difference"
    TORCH_SUSPECT = "torch_suspect"


PASSING = frozenset({Status.PASS})
FAILING = frozenset({
    Status.ACCURACY_ERROR, Status.DTYPE_MISMATCH, Status.SHAPE_MISMATCH, Status.PADDLE_ERROR,
    Status.CRASH, Status.FLAKY_CRASH, Status.TIMEOUT,
})
NO_VERDICT = frozenset({Status.UNSUPPORTED, Status.TORCH_ERROR, Status.SKIPPED_TOO_LARGE})
BY_DESIGN = frozenset({Status.DOCUMENTED_DIFFERENCE})
TORCH_SUSPECT = frozenset({Status.TORCH_SUSPECT})

# Name of each class -> its statuses; together they partition Status.
CLASSES: dict[str, frozenset[Status]] = {
    "passing": PASSING, "failing": FAILING, "no_verdict": NO_VERDICT, "by_design": BY_DESIGN,
    "torch_suspect": TORCH_SUSPECT,
}

# Failing statuses the pool gives, not a comparison: the kernel killed or hung its worker.
RUNNER_FAILURES = frozenset({Status.CRASH, Status.FLAKY_CRASH, Status.TIMEOUT})
# A side of the comparison raised or could not be run: the pool hands these back as the engine gave them.
RAISED = frozenset({Status.PADDLE_ERROR, Status.TORCH_ERROR, Status.UNSUPPORTED})

# Paddle's error when a build has no kernel for the op on this device (a GPU-only fused op, a float16 kernel
# registered for GPU alone): "(NotFound) The kernel with key (CPU, Undefined(AnyLayout), float16) of kernel
# `roi_align` is not registered", "(NotFound) The kernel `fused_gemm_epilogue` is not registered."
_KERNEL_NOT_REGISTERED = re.compile(r"\(NotFound\) The kernel\b.{0,200}?\bis not registered")


def kernel_not_registered(status: str, message: str | None) -> bool:
    """A paddle_error that says the device has no kernel for the op: on a CPU re-test of a GPU task's config it is
    no evidence about the GPU kernel's failure -- the config cannot run on the CPU at all."""
    return status == Status.PADDLE_ERROR and bool(_KERNEL_NOT_REGISTERED.search(message or ""))


def status_class(status: str) -> str:
    """The name of the class `status` is in ("passing", "failing", …); KeyError for an unknown status."""
    for name, statuses in CLASSES.items():
        if status in statuses:
            return name
    raise KeyError(f"unknown verdict status {status!r}")


def is_failing(status: str) -> bool:
    """Does the verdict blame Paddle? Only FAILING does: a documented difference, a Torch suspect and
    an engine gap are not Paddle failures (docs/verdicts.md)."""
    return status in FAILING


def is_passing(status: str) -> bool:
    return status in PASSING


class Reading(StrEnum):
    """What the float64 oracle says about a failing output (apitester.diagnosis.oracle, docs/diagnosis.md).

    Each side's RMSE to the oracle at the config's dtype: a side is *off* when its RMSE is over the
    noise floor (one rounding unit of the dtype at the oracle's scale) and over K times the other's.
    """

    PADDLE_OFF = "paddle_off"            # Paddle's error is over the floor and over K x Torch's
    TORCH_OFF = "torch_off"              # Torch's error is over the floor and over K x Paddle's
    BOTH_OFF = "both_off"                # both over the floor, neither K x the other
    WITHIN_ROUNDING = "within_rounding"  # neither is over the floor (or over K x the other)
    NO_ORACLE = "no_oracle"              # no exact value to measure against: NoOracle says why
    CONVENTION = "convention"            # not a value error: the two follow different conventions (ConventionKind)


class NoOracle(StrEnum):
    """Why a reading is ``no_oracle`` (the reading's ``no_oracle`` field; ``reason`` has the detail)."""

    EXACT_DTYPE = "exact_dtype"          # integer/bool inputs or output: compared exactly, no rounding
    FLOAT64_CONFIG = "float64_config"    # already float64: nothing higher to upcast to
    CANNOT_UPCAST = "cannot_upcast"      # an argument fixes the output dtype, or outputs are gauge-defined
    RANDOM_API = "random_api"            # random samples have no exact value
    DISPUTED = "disputed"                # the two float64 results disagree
    SIDE_RAISED = "side_raised"          # a side raised at float64 (or at the config's dtype)
    NOT_NUMERIC = "not_numeric"          # the failure is not a value difference (an error, a shape)
    TOO_LARGE = "too_large"              # over the size the oracle (or the spec's reference) runs at
    REFERENCE_UNCERTAIN = "reference_uncertain"  # the reference's value differs at two precisions where it decides


class ReadingSource(StrEnum):
    """What a side reading (``paddle_off`` / ``torch_off`` ...) rests on: the reading's ``oracle`` field."""

    FLOAT64_ORACLE = "float64_oracle"    # both sides' float64 results agree: each side's error to them
    GRADIENT_CHECK = "gradient_check"    # the float64 gradient check: one side's gradient misses its derivative
    REFERENCE = "reference"              # the spec's independent reference (Spec.ref: NumPy / mpmath) or its derivative
    INPUT_SHAPE = "input_shape"          # a gradient whose shape is not its input's: that side's (issue 44)


class Describes(StrEnum):
    """Which config a diagnosis' final reading describes (its ``reading.describes``, issue 44)."""

    REPORTED = "reported"  # the reported config on its verdict's failing draw, read itself
    REPRO = "repro"        # the shrunk repro: reading the reported config was not affordable (``describes_why``)


class ConventionKind(StrEnum):
    """Which convention a ``convention`` reading names (the reading's ``convention.kind``): the failure is not
    about values, and the reading names both behaviours (apitester.diagnosis.conventions)."""

    DTYPE = "dtype"    # the outputs' dtypes differ: "int32 (Paddle) vs int64 (Torch)"
    SHAPE = "shape"    # the outputs' shapes (or counts, or None against a value) differ
    RAISES = "raises"  # one side raises where the other returns
    TIE = "tie"        # values exactly at a rounding tie go different ways: the two rounding rules differ
    GRADIENT = "gradient"  # gradients equal on the part the API defines (Spec.gradient_part), not outside it
    SUBGRADIENT = "subgradient"  # at a kink (a tie, a clamp bound) both gradients lie between the one-sided derivatives
    UNDEFINED = "undefined"  # where the forward is not finite (outside the domain) there is no derivative: each side's
                             # value there is a convention ("Paddle 0, Torch NaN"), never a side off
    PARAMETER = "parameter"  # one side computes a float parameter at float32 (0.2 as 0.2000000030), moving a kink


class TieRule(StrEnum):
    """How a side rounds a value exactly halfway between two integers (a ``tie`` convention's rules)."""

    HALF_TO_EVEN = "half_to_even"                # 0.5 -> 0, 1.5 -> 2, -0.5 -> -0 (IEEE, numpy.round, nearbyint)
    HALF_AWAY_FROM_ZERO = "half_away_from_zero"  # 0.5 -> 1, -0.5 -> -1 (C's round)
    HALF_UP = "half_up"                          # toward +inf: floor(x + 0.5)
    HALF_DOWN = "half_down"                      # toward -inf: ceil(x - 0.5)
    MIXED = "mixed"                              # the ties seen follow none of the above


READINGS = tuple(Reading)
# Readings that blame one side: the board's "who is off" (a strict failure read torch_off is Torch's).
SIDE_OFF = frozenset({Reading.PADDLE_OFF, Reading.TORCH_OFF})


class Rule(StrEnum):
    """A verdict under the 2026 exact rule, beside the 1e-2 status (docs/verdicts.md#the-exact-rule)."""
    EXACT = "exact"                        # every compared value equal (atol = rtol = 0)
    WITHIN_TOLERANCE = "within_tolerance"  # passes the tolerance, not exact
    FAILS = "fails"                        # fails the tolerance (or a shape, dtype or Paddle error)


def rule_of(strict_status: str, exact: bool | None) -> Rule | None:
    """A verdict under the exact rule from its strict layer: exact / within_tolerance (passes 1e-2, not exact) /
    fails; None for no verdict (an engine gap, a statistical check)."""
    if strict_status in PASSING:
        return None if exact is None else (Rule.EXACT if exact else Rule.WITHIN_TOLERANCE)
    return Rule.FAILS if strict_status in FAILING else None


class Side(StrEnum):
    """The side whose own result changed between two runs of one draw on identical inputs (``Verdict.nondeterministic``;
    "" when both gave the same bits again)."""

    PADDLE = "paddle"
    TORCH = "torch"
    BOTH = "both"


class Device(StrEnum):
    """Where a config runs: the engine's lanes (a task's ``device``, ``run_config(device=...)``). The Torch side of
    the GPU lane runs on CUDA when torch has it (``trial.torch_device``)."""

    CPU = "cpu"
    GPU = "gpu"


class AdaptationKind(StrEnum):
    """How a spec's reference departs from the plain Torch call at the config's dtypes (the strict reference,
    what PaddleAPITest checks): ``apitester.specs.base.Adaptation.kind``, each verdict's ``adaptations``."""

    ARGUMENT_MAPPING = "argument_mapping"          # Paddle's arguments renamed to Torch's: no result changes
    LAYOUT = "layout"                              # data rearranged (NCHW/NHWC …): no result changes
    DOCUMENTED_SEMANTICS = "documented_semantics"  # Paddle documents a behaviour that differs from Torch's
    GRADIENT_CONVENTION = "gradient_convention"    # gradients compared under a convention (Hermitian part, labels)
    REFERENCE_PRECISION = "reference_precision"    # the reference is computed above the config's dtype
    RANDOMNESS = "randomness"                      # a random API: a statistical check, not element-wise
    OUTPUT_INVARIANT = "output_invariant"          # outputs defined only up to a gauge (sign, order)


# Kinds that change no result and may stay silent; every other kind is shown in every verdict of the spec.
SILENT_ADAPTATIONS = frozenset({AdaptationKind.ARGUMENT_MAPPING, AdaptationKind.LAYOUT})


class CacheEvent(StrEnum):
    """What the Torch result cache did for a verdict (apitester.engine.torch_cache; ``Verdict.torch_cache`` counts them)."""

    HIT = "hit"
    MISS = "miss"
    VERIFIED = "verified"  # a hit recomputed, the same bits
    MISMATCH = "mismatch"  # a hit recomputed, other bits: the entry dropped, the fresh result used
    CORRUPT = "corrupt"  # an entry that could not be read back whole: deleted, recomputed
    STORED = "stored"
