"""Diagnosis of one failing config: verdict + float64 oracle + shrink + repro, as plain JSON values.

``diagnose_config`` is the entry the runner calls (in a worker process: a trial can crash or hang
like any config run); ``failure_signature`` and ``group_failures`` turn a task's diagnoses into its
distinct failures.  ``python -m apitester diagnose '<config>'`` prints ``render_text`` or, with
``--json``, the dict itself.

The JSON shape (schema 1; fields are only ever added)::

    {"schema": 1, "config": str, "api": str,
     "diagnosed": bool, "reason": str,            # False + why: strict layer passes, no verdict, too large
     "verdict": {"status", "strict_status", "direction", "output", "max_abs", "max_rel",
                 "draw": {"kind", "seed", "format"}, "message"},
     "failure": {"status", "direction", "output", "reading"},   # what shrinking kept: the repro's (the signature's)
     "reading": {"output", "reading",                 # THE final reading (the board shows it), of the config
                 "describes": "reported" | "repro",   # named: the reported config and draw, or the shrunk repro
                 "describes_why"?: str,               # why a repro's reading: the reported one not affordable
                 "evidence_readings": {"float64_oracle": brief, "gradient_check": None | {"ran", "describes",
                                       "reading"?: "paddle_off" | "torch_off" | None, "reason"?},
                                       "repro"?: brief},   # brief: {"reading", "describes", "output"?,
                                                           #         "oracle"?, "no_oracle"?}
                 "no_oracle"?, "reason"?, "dtype"?, "noise_floor"?, "k"?,
                 "convention"?: {"kind", "paddle", "torch", "text", "key", ...},  # reading "convention"
                 "oracle_gap"?, "paddle"?: {"max_abs", "max_rel", "rmse"}, "torch"?: {...},
                 "oracle"?: "gradient_check", "evidence"?: str,      # a side named by the gradient check
                 "read_on"?: "reported", "shrunk_reading"?: {"no_oracle", "reason"},  # ... on the reported config
                 "float64_oracle"?: {"no_oracle", "reason"}},        # ... where the float64 oracle had none
     "oracle": {"readings": [reading, ...], "no_oracle": str | None, "reason": str},  # the repro, every output
     "gradient_check": None | {"ran": bool, "reason"?, "elements"?, "step"?, "atol"?, "rtol"?, "method"?,
                               "against"?: "own_forward" | "reference",
                               "paddle"?: {"matches": bool | None, "max_abs"?, "error"?,
                                           "outputs"?: {"grad x": {"match", "miss", "unresolved", "kinks",
                                                "missed_at", "first_miss", "first_kink", "absorbed",
                                                "first_absorbed", "undefined", "first_undefined"}}},
                               "torch"?: {...}, "side_off"?: "paddle" | "torch" | None,
                               "side_off_by_output"?: {"grad x": "paddle"}, "evidence"?: {"grad x": str}},
     "shrink": {"original", "config", "draw", "final_draw", "failure", "trials", "kept": [str], "seconds",
                "stopped", "elements_before", "elements_after"},
     "repro": {"config": str, "draw": str, "command": str, "script": str},
     "signature": {"key": str, "hash": str},
     "implied_verdict": None | {"status": "torch_suspect", "output", "evidence": str, "source": str,
                                "paddle"?: {"max_abs", "max_rel", "rmse"}, "torch"?: {...}, "k"?, "noise_floor"?,
                                "describes"?: "reported" | "repro"},
     "seconds": float}

Floats go through ``compare.encode_float`` ("inf"/"nan" as strings).  When ``diagnosed`` is False
only schema, config, api, diagnosed, reason, verdict (if run) and seconds are present.  ``reading`` is the one
final reading: ``failure.reading`` is the shrink's (the repro's, grouped by the signature) and may differ from it
where ``reading.describes`` is "reported" (docs/diagnosis.md, "One final reading").
"""
from __future__ import annotations

import hashlib
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import replace

from .. import inputs as inp
from ..engine.compare import Verdict, encode_float
from ..config import ConfigSyntaxError, parse_config
from ..inputs import estimate_bytes
from .gradients import gradient_check
from .oracle import oracle_for, reading_of
from .records import (BriefReading, CheckWord, Convention, Errors, EvidenceReadings, GradientCheck, ImpliedVerdict,
                      OutputCheck, OutputReading, Repro, VerdictSummary)
from .repro import repro_command, repro_script
from .shrink import Budget, TOO_LARGE, VALUE_FAILURES, draw_inputs, prepare_strict, probe, shrink
from ..vocab import ConventionKind, Describes, NoOracle, Reading, ReadingSource, Side

SCHEMA = 1
# A diagnosis runs the config itself several times (verdict, oracle at float64): above this many
# input bytes it is not attempted (the pool's memory budget decides the config's own verdict).
MAX_INPUT_BYTES = 1 << 30
STRICT_FAILURES = ("accuracy_error", "dtype_mismatch", "shape_mismatch", "paddle_error",
                   "torch_error")  # Torch raising where Paddle returns: read as a convention


def diagnose_config(config_text: str, *, draw: "str | dict | inp.Draw | None" = None, max_trials: int = 200,
                    max_seconds: float = 120.0, max_input_bytes: int = MAX_INPUT_BYTES,
                    reported_max_elements: int | None = None) -> dict:
    """Diagnose one config: a dict of plain JSON values, stable in shape (``schema`` 1: the module docstring).

    ``draw`` replays one draw (default: the draw the config's verdict reports); ``reported_max_elements`` bounds
    the reported config's own reading (None: REPORTED_MAX_ELEMENTS; above it the reading is the repro's)."""
    began = time.perf_counter()
    config = config_text.strip()
    result = {"schema": SCHEMA, "config": config, "api": config.split("(", 1)[0].strip(), "diagnosed": False}
    too_large = _too_large(config, max_input_bytes)
    if too_large:
        return _done(result, too_large, began)
    start_draw = inp.Draw.parse(draw) if draw is not None else _reported_draw(config)
    if isinstance(start_draw, Verdict):
        result["verdict"] = VerdictSummary.of(start_draw).to_dict()
        return _done(result, f"no strict failure to diagnose ({start_draw.strict_status})", began)
    start = probe(config, start_draw)
    result["verdict"] = VerdictSummary.of(start.verdict).to_dict()
    if start.verdict.strict_status not in STRICT_FAILURES:
        return _done(result, f"no strict failure to diagnose ({start.verdict.strict_status})", began)
    shrunk = shrink(config, start_draw, Budget(max_trials, max_seconds), start=start)
    final = shrunk.final
    final_draw = final.draw or start_draw  # a cut of the failing draw when the shrink kept its elements
    reading, check = _final_reading(final, final_draw, config, start, start_draw, reported_max_elements)
    result.update(diagnosed=True, reason="", failure=final.failure.to_dict(), reading=_plain(reading.to_dict()),
                  oracle=_plain(final.oracle.to_dict()), shrink=shrunk.to_dict(),
                  gradient_check=_plain(check.to_dict()) if check is not None else None)
    result["repro"] = _repro(final.config, final_draw).to_dict()
    result["signature"] = failure_signature(result)
    implied = implied_verdict(reading)
    result["implied_verdict"] = implied.to_dict() if implied is not None else None
    return _done(result, "", began)


# The float64 oracle's no_oracle codes that the gradient check can settle: the two float64 results disagree (a
# wrong gradient is the usual cause) or the config is float64 already (nothing higher to upcast to).  Not an
# error or a shape (nothing to differentiate), an exact dtype, a random API, or a dtype an argument fixes (the
# check would difference a float32 forward at float64 steps).  ``too_large``: over the size the oracle or the
# reference's derivative runs at, while the check has its own bound (GRADCHECK_MAX_ELEMENTS) and says when it
# did not run.
GRADIENT_SETTLES = frozenset({NoOracle.DISPUTED, NoOracle.FLOAT64_CONFIG, NoOracle.TOO_LARGE})


def read_with_gradient_check(reading: OutputReading, check: GradientCheck | None) -> OutputReading:
    """The failing output's reading, with the gradient check's word where the float64 oracle has none (issue 34):
    a ``no_oracle`` reading of a gradient (``GRADIENT_SETTLES``) whose check names the side off at that output
    (``side_off_by_output``: that side's analytic gradient misses the derivative, the other side's matches)
    becomes ``paddle_off`` / ``torch_off`` with ``"oracle": "gradient_check"`` and the check's evidence; what
    the float64 oracle said is kept under ``float64_oracle``.  Where that leaves a subgradient convention or the
    dispute, a side the elements the float64 results agree on name stands (``hidden_side_reading``).  Any other
    reading is returned as it is."""
    return hidden_side_reading(_read_by_check(reading, check), reading)


def _read_by_check(reading: OutputReading, check: GradientCheck | None) -> OutputReading:
    """read_with_gradient_check's reading by the gradient check alone."""
    # A reference's derivative reading both sides off while the check finds one side's gradient matching its own
    # forward: that side computes its own documented function (cosine_similarity: Torch clamps each norm, Paddle
    # their product), so the difference left is the function's definition, and the side named is the one whose
    # gradient misses even its own forward (a NaN).
    both_by_reference = reading.reading == Reading.BOTH_OFF and reading.oracle == ReadingSource.REFERENCE
    unsettled = _unsettled(reading)
    if not (unsettled or both_by_reference) or not check or not check.ran:
        return reading
    output = reading.output
    side = check.side_off_by_output.get(output)
    if side not in (Side.PADDLE, Side.TORCH):
        return subgradient_reading(reading, check) if unsettled else reading
    before = (_float64_oracle(reading) if unsettled else
              {"reading": reading.reading, "oracle": reading.oracle, "evidence": reading.evidence})
    return OutputReading(output, Reading.PADDLE_OFF if side == "paddle" else Reading.TORCH_OFF,
                         oracle=ReadingSource.GRADIENT_CHECK, evidence=check.evidence.get(output, ""),
                         float64_oracle=before)


def _float64_oracle(reading: OutputReading) -> dict:
    """What the float64 oracle said, kept where another source reads the output (``float64_oracle``)."""
    return {"no_oracle": reading.no_oracle, "reason": reading.reason or ""}


def subgradient_reading(reading: OutputReading, check: GradientCheck) -> OutputReading:
    """An unsettled gradient whose check finds both sides matching everywhere it could judge, and kinks (a tie of
    minimum/maximum, a clamp bound, abs at 0) among the elements: the two differ only where the derivative is not
    one number, and any value between the one-sided derivatives is a subgradient -- a convention (Torch splits a
    tie's gradient between minimum's inputs, Paddle 3.0.0 gives it to one), not a side off."""
    output = reading.output
    sides = {side: check.output(side, output) for side in (Side.PADDLE, Side.TORCH)}
    if all(s.undefined and not s.miss and not s.unresolved for s in sides.values()):
        return undefined_reading(reading, sides)
    if not all(s.kinks and not s.miss and not s.unresolved for s in sides.values()):
        return reading
    kinks = sides[Side.PADDLE].kinks
    (paddle, p_value), (torch, t_value) = (subgradient_choice(sides[side].first_kink) for side in (Side.PADDLE, Side.TORCH))
    if paddle == torch:  # the first kink alone does not tell them apart: say what both do
        paddle, torch = "a subgradient", "another subgradient"
    text = (f"{output} at {kinks} kink{'s' if kinks != 1 else ''} (a tie, a clamp bound, a domain edge): both sides "
            f"give a subgradient (between the one-sided derivatives): Paddle {paddle}{p_value}, Torch {torch}{t_value}")
    convention = Convention(ConventionKind.SUBGRADIENT, paddle, torch, text=text,
                            key=f"subgradient: {paddle} vs {torch}", details=(("kinks", kinks),))
    return _convention_by_check(reading, convention, text)


def _convention_by_check(reading: OutputReading, convention: Convention, text: str) -> OutputReading:
    """A convention the gradient check names where the float64 oracle had none (what it said kept beside)."""
    return OutputReading(reading.output, Reading.CONVENTION, reason=f"{reading.reason or ''}; {text}",
                         oracle=ReadingSource.GRADIENT_CHECK, convention=convention,
                         float64_oracle=_float64_oracle(reading))


def hidden_side_reading(settled: OutputReading, reading: OutputReading) -> OutputReading:
    """A gradient's side named on the elements where the float64 results agree (``agreeing_elements``: Torch's
    float64 value there, each side's error to it rounded to the dtype, K and the floor), behind a dispute on the
    other elements.  Where ``settled`` (the reading after the gradient check) is a subgradient convention or still
    unsettled, that side is the final reading: a value error where the derivative exists (Paddle 3.0.0's float32
    minimum gradient, 4.6-71x the floor off the ties), the convention at the ties kept beside it as evidence.
    Within rounding there: ``settled``, the agreeing elements' reading added as evidence; any other ``settled``
    as it is."""
    agreeing = reading.agreeing_elements
    convention = settled.convention if settled.reading == Reading.CONVENTION else None
    tie = convention is not None and convention.kind == ConventionKind.SUBGRADIENT
    if not (reading.is_gradient and agreeing is not None) or not (tie or _unsettled(settled)):
        return settled  # a forward output's dispute is a semantics question, read as it was
    if agreeing.reading not in SIDE_READINGS:  # within rounding there: the convention (or dispute) stands
        return replace(settled, agreeing_elements=agreeing)
    side, count, total = agreeing.reading, agreeing.elements, agreeing.of
    who = {Reading.PADDLE_OFF: "Paddle off", Reading.TORCH_OFF: "Torch off", Reading.BOTH_OFF: "both off"}[side]
    paddle, torch = (_number(errors.rmse) for errors in (agreeing.paddle, agreeing.torch))
    where = "without a tie" if tie else "where the float64 results agree"
    rest = total - count
    other = (f"at the other {rest:,} (the ties) both give a subgradient: {convention.text}" if tie else
             f"on the other {rest:,} the float64 results disagree ({settled.no_oracle})")
    text = (f"{who} on the {count:,} of {total:,} elements {where} (RMSE Paddle {paddle}, Torch {torch}; noise floor "
            f"{_number(agreeing.noise_floor)}, K {agreeing.k}); {other}")
    return OutputReading(reading.output, side, reason=f"{reading.reason or ''}; {text}", dtype=agreeing.dtype,
                         noise_floor=agreeing.noise_floor, k=agreeing.k, paddle=agreeing.paddle, torch=agreeing.torch,
                         oracle=ReadingSource.FLOAT64_ORACLE, evidence=text, agreeing_elements=agreeing,
                         convention=convention if tie else None, float64_oracle=_float64_oracle(reading))


SIDE_READINGS = (Reading.PADDLE_OFF, Reading.TORCH_OFF, Reading.BOTH_OFF)


def undefined_reading(reading: OutputReading, sides: dict[Side, OutputCheck]) -> OutputReading:
    """An unsettled gradient whose check finds both sides matching wherever a derivative exists, and elements
    with none (they feed an output that is not finite at the input: logit at -0.5, NaN there and around): the two
    differ where no derivative exists, so each side's value there is a convention -- Paddle 3.0.0's 0 claims a flat
    function, Torch's NaN says "undefined" -- never a side off (issue 44).  ``sides``: each side's check of the
    output."""
    output = reading.output
    values = [(sides[side].first_undefined or {}).get("analytic", "?") for side in (Side.PADDLE, Side.TORCH)]
    paddle, torch = ({"nan": "NaN", "inf": "inf", "-inf": "-inf"}.get(v, v) if isinstance(v, str) else f"{v:.4g}"
                     for v in values)
    if paddle == torch:  # the first such element does not tell them apart
        paddle, torch = "a value", "another value"
    count = max(sides[Side.PADDLE].undefined, sides[Side.TORCH].undefined)
    text = (f"{output}: undefined outside the domain (the forward is not finite at and around {count} "
            f"element{'s' if count != 1 else ''}, so no derivative exists): Paddle {paddle}, Torch {torch}")
    convention = Convention(ConventionKind.UNDEFINED, paddle, torch, text=text, key=f"undefined: {paddle} vs {torch}",
                            details=(("elements", count),))
    return _convention_by_check(reading, convention, text)


def _final_reading(final, final_draw, config: str, start, start_draw,
                   reported_max_elements: int | None) -> tuple[OutputReading, GradientCheck | None]:
    """The diagnosis' one final reading (its ``describes`` says of which config) and the gradient check beside it.

    ``reported_max_elements`` (None: REPORTED_MAX_ELEMENTS) bounds the reported config's own reading.
    The shrunk failure's reading with its gradient check's word (or, where that leaves a gradient unsettled, the
    reported config's check: ``_read_on_reported``); then, where the config was shrunk, the reported config's own
    reading replaces it whenever reading it is affordable (``_reported_reading``) and it gives a word: a reading
    describes the reported config, or says it is the repro's (issue 44)."""
    direction = final.failure.direction
    check = _gradient_check(final.config, final_draw, direction)
    repro = read_with_gradient_check(final.reading, check)
    if (final.config, str(final_draw)) == (config, str(start_draw)):  # not shrunk: the repro is the reported config
        evidence = EvidenceReadings(BriefReading.of(final.reading, Describes.REPORTED),
                                    CheckWord.of(check, repro.output, Describes.REPORTED))
        return _describing(repro, Describes.REPORTED, evidence), check
    evidence = EvidenceReadings(BriefReading.of(final.reading, Describes.REPRO),
                                CheckWord.of(check, repro.output, Describes.REPRO))
    if _unsettled(repro):
        repro, check = _read_on_reported(repro, check, config, start, start_draw)
        if repro.read_on == "reported":
            evidence = EvidenceReadings(BriefReading.of(start.reading, Describes.REPORTED),
                                        CheckWord.of(check, repro.output, Describes.REPORTED),
                                        BriefReading.of(final.reading, Describes.REPRO), has_repro=True)
            return _describing(repro, Describes.REPORTED, evidence), check
    bound = REPORTED_MAX_ELEMENTS if reported_max_elements is None else reported_max_elements
    reported, why = _reported_reading(config, start, start_draw, bound)
    if reported is None:
        return _describing(repro, Describes.REPRO, evidence, why), check
    oracle_word, final_check = reported, check
    if _needs_check(reported, direction) and not _unsettled(repro):  # (else _read_on_reported checked it already)
        reported_check = _gradient_check(config, start_draw, direction)
        settled = read_with_gradient_check(reported, reported_check)
        if _needs_check(settled, direction) and not _needs_check(repro, direction):
            why = f"the reported config's own reading leaves the gradient unsettled ({_what(settled)})"
            return _describing(repro, Describes.REPRO, evidence, why), check
        reported, final_check = settled, reported_check
        evidence = replace(evidence, gradient_check=CheckWord.of(reported_check, settled.output,
                                                                 Describes.REPORTED))
    evidence = replace(evidence, float64_oracle=BriefReading.of(oracle_word, Describes.REPORTED),
                       repro=BriefReading.of(repro, Describes.REPRO), has_repro=True)
    return _describing(reported, Describes.REPORTED, evidence), final_check


# The reported config is read itself (the float64 oracle, and the spec's reference where the oracle needs it) up to
# this many input elements, the reference given at most REPORTED_MAX_SECONDS (an interval timer, where one can be
# set: a diagnosis in a process's main thread).  Measured (2026-12-07, a loaded 2-core Xeon): the exact reference of
# a 1.3 M-element sum (math.fsum) 0.22 s, of its mean (exact rationals) 4.5 s; an mpmath element-wise reference
# (rsqrt, 40 digits) 11 us per element, ~23 s at the bound.  Above it the reading is the shrunk repro's, labelled so.
REPORTED_MAX_ELEMENTS = 1 << 21
REPORTED_MAX_SECONDS = 60.0


def _reported_reading(config: str, start, start_draw, max_elements: int) -> tuple[OutputReading | None, str]:
    """The reported config's own reading of the failing output, or None and why it was not affordable (over
    ``max_elements`` input elements, REPORTED_MAX_ELEMENTS unless the caller says; over the timer)."""
    reading = start.reading
    if reading.no_oracle != TOO_LARGE:  # the start probe read the reported config itself
        return reading, ""
    if start.elements > max_elements:
        return None, f"the reported config has {start.elements:,} input elements, over the {max_elements:,} it is read at"
    prepared = prepare_strict(config)
    if isinstance(prepared, Verdict):
        return None, prepared.message[:200]
    try:
        with _time_limit(REPORTED_MAX_SECONDS) as timed:
            bound = max_elements if timed else None  # no timer: the reference's own bound
            oracle = oracle_for(prepared, draw_inputs(prepared, start_draw), start_draw,
                                grads=start.failure.direction == "backward", ref_max_elements=bound)
    except Exception as exc:  # the timer, or an engine gap: the repro's reading stands, saying why
        return None, f"reading the reported config failed: {exc}"[:300]
    reading = reading_of(oracle, start.failure.output)
    if reading.no_oracle == TOO_LARGE and start.failure.direction == "backward" and not _overtime(reading):
        return reading, ""  # a gradient over the reference derivative's bound: the gradient check reads it
    if reading.no_oracle == TOO_LARGE or _overtime(reading):
        return None, f"the reported config is too large to read: {reading.reason or ''}"[:300]
    return reading, ""


class ReadingOverTime(Exception):
    """The reported config's reading ran past REPORTED_MAX_SECONDS."""


@contextmanager
def _time_limit(seconds: float):
    """Raise ReadingOverTime in the block after ``seconds``; yields False (no limit) outside the main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield False
        return

    def expire(_signum, _frame):
        raise ReadingOverTime(f"over {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _overtime(reading: OutputReading) -> bool:
    return "ReadingOverTime" in str(reading.reason or "")  # the timer fired inside the reference (caught there)


def _needs_check(reading: OutputReading, direction: str | None) -> bool:
    """A gradient reading only a gradient check settles: unsettled, or both off by a reference's derivative."""
    return direction == "backward" and (_unsettled(reading) or (
        reading.reading == Reading.BOTH_OFF and reading.oracle == ReadingSource.REFERENCE))


def _what(reading: OutputReading) -> str:
    return f"{reading.reading}: {reading.no_oracle or reading.oracle or ''}".rstrip(": ")


def _describing(reading: OutputReading, describes: Describes, evidence: EvidenceReadings,
                why: str = "") -> OutputReading:
    """The final reading, saying which config it describes and the readings it stands on."""
    return replace(reading, describes=describes, evidence_readings=evidence, describes_why=why or None)


SUBGRADIENT_RULES = ("the left derivative", "the right derivative", "the mean of the one-sided derivatives")


def subgradient_choice(kink: dict | None) -> tuple[str, str]:
    """Which subgradient a side's gradient is at a kink (the check's ``first_kink``: its value and the one-sided
    derivatives of its own forward there) -- one of SUBGRADIENT_RULES or "another value between them" -- and the
    values, for the text: max(x, y) at x == y in x has left derivative 0 and right 1 (times the output's
    gradient); Torch gives their mean."""
    try:
        value, left, right = (float(kink[k]) for k in ("analytic", "left", "right"))
    except (TypeError, ValueError, KeyError):
        return "a subgradient", ""
    for name, target in zip(SUBGRADIENT_RULES, (left, right, (left + right) / 2)):
        if abs(value - target) <= 1e-5 + 1e-3 * abs(target):  # gradcheck's tolerances, as the check's match
            return name, f" ({value:.4g})"
    return "another value between them", f" ({value:.4g} between {left:.4g} and {right:.4g})"


def _unsettled(reading: OutputReading) -> bool:
    return reading.reading == Reading.NO_ORACLE and reading.no_oracle in GRADIENT_SETTLES


def _read_on_reported(reading: OutputReading, check: GradientCheck | None, config: str, start,
                      start_draw) -> tuple[OutputReading, GradientCheck | None]:
    """A gradient the shrunk config leaves unsettled, read on the reported config and draw instead.

    Shrinking keeps (status, direction, output, reading) and so can land on a degenerate candidate: a cut
    of cholesky_solve's factor with a zero on its diagonal, where both sides' gradients are NaN and neither
    matches a derivative, while on the reported config one side's gradient matches and the other's misses.
    The reading then comes from the reported config, says so (``"read_on": "reported"``), and keeps what
    the shrunk one said; the repro stays the shrunk one (the same strict failure)."""
    reported = _gradient_check(config, start_draw, start.failure.direction)
    settled = read_with_gradient_check(start.reading, reported)
    if settled.reading in (Reading.PADDLE_OFF, Reading.TORCH_OFF) and settled.output == reading.output:
        shrunk = _float64_oracle(reading)
        settled = replace(settled, read_on="reported", shrunk_reading=shrunk,
                          evidence=f"{settled.evidence or ''} (on the reported config; the shrunk one leaves it "
                                   f"unsettled: {shrunk['reason']})"[:600])
        return settled, reported
    return reading, check


def implied_verdict(reading: OutputReading) -> ImpliedVerdict | None:
    """What the failing output's reading implies for the final verdict: ``torch_suspect`` when Torch is the
    side off (issue 19: off the float64 oracle, with both sides' errors as the evidence; issue 34: a gradient the
    gradient check reads off, with its evidence), naming the reading's source; otherwise None.  The strict layer
    is not changed by it, so "fix verified" still needs Paddle to agree with the plain Torch call.  Where the
    reading describes the shrunk repro, its evidence says so."""
    if reading.reading != Reading.TORCH_OFF:
        return None
    source = str(reading.oracle or ReadingSource.FLOAT64_ORACLE)
    repro = " (read on the shrunk repro, not the reported config)" if reading.describes == Describes.REPRO else ""
    if reading.paddle is None or reading.torch is None:
        evidence = str(reading.evidence or f"the {source} reads Torch off")
        return ImpliedVerdict(reading.output, evidence + repro, source, describes=reading.describes or None)
    k, floor = reading.k, encode_float(reading.noise_floor)

    def side(errors: Errors) -> str:
        return ", ".join(f"{name} {_number(value)}" for name, value in errors.to_dict().items())

    against = reading.evidence if reading.oracle == ReadingSource.REFERENCE else "the float64 oracle"
    evidence = (f"{reading.output} at {reading.dtype}, error to {against}: Torch {side(reading.torch)}; "
                f"Paddle {side(reading.paddle)} (Torch's RMSE is over {k}x Paddle's and over the noise floor "
                f"{_number(floor)})")
    if source != ReadingSource.FLOAT64_ORACLE:
        evidence = f"{source}: {evidence}"
    return ImpliedVerdict(reading.output, evidence + repro, source, reading.paddle, reading.torch, k,
                          reading.noise_floor, reading.describes or None)


def _number(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _too_large(config: str, max_input_bytes: int) -> str:
    try:
        size = estimate_bytes(parse_config(config))
    except ConfigSyntaxError as exc:
        return f"config syntax error: {exc}"
    return f"{size} input bytes, over the diagnosis budget of {max_input_bytes}" if size > max_input_bytes else ""


def _reported_draw(config: str):
    """The draw the config's verdict reports (its failing draw), or the Verdict when it has none."""
    from ..engine.execute import run_config  # noqa: PLC0415  (paddle and torch load on the first run only)

    verdict = run_config(config)
    if verdict.strict_status not in STRICT_FAILURES or not verdict.draw:
        return verdict
    return inp.Draw.parse(verdict.draw)


def _gradient_check(config: str, draw: inp.Draw, direction: str | None) -> GradientCheck | None:
    if direction != "backward":
        return None
    prepared = prepare_strict(config)
    if isinstance(prepared, Verdict):
        return GradientCheck.not_run(prepared.message[:300])
    # The hook for an independent reference's derivative (issue 34, item 1): a spec that declares
    # ``ref_gradient`` (see oracle.gradient_check's ``reference_gradient``) is judged against it.
    reference = getattr(prepared.spec, "ref_gradient", None)
    try:
        return gradient_check(prepared, draw_inputs(prepared, draw), draw,
                              reference_gradient=reference if callable(reference) else None)
    except Exception as exc:  # an engine gap in the check: said so
        return GradientCheck.not_run(f"engine error in the gradient check: {exc}"[:300])


def _repro(config: str, draw: inp.Draw) -> Repro:
    try:
        script = repro_script(config, draw)
    except Exception as exc:  # a value the script writer cannot write: the command still replays it
        script = f"# no script: {exc}"[:300]
    return Repro(config, str(draw), repro_command(config, draw), script)


def _done(result: dict, reason: str, began: float) -> dict:
    if reason:
        result["reason"] = reason
    result["seconds"] = round(time.perf_counter() - began, 3)
    return result


def _plain(value):
    """StrEnum members as plain str (the JSON seam), recursively."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


# ---------------------------------------------------------------- distinct failures


def shape_signature(config: str) -> str:
    """The shrunk tensors' dtypes and which of their dims the failure needs, depth first: "float16[n,1] float32[1]".

    A dim the shrink could not bring to 1 is "n" whatever its size: how far a dim shrinks before the failure
    goes depends on where the draw put the failing values (a float16 sum's error grows with its length: 26
    configs of one sum bug shrink to 26 different lengths), not on which bug it is.
    """
    try:
        tensors = parse_config(config).tensors()
    except ConfigSyntaxError:
        return "?"
    return " ".join(f"{t.dtype}[{','.join('1' if d == 1 else 'n' for d in t.shape)}]" for t in tensors)


def failure_signature(diagnosis: dict) -> dict:
    """(api, status, direction, output, reading, shrunk shapes) as a stable key and its 12-hex hash (the reading
    with its source where the gradient check named the side: ``_signature_reading``)."""
    failure = diagnosis.get("failure") or {}
    shrunk = (diagnosis.get("shrink") or {}).get("config") or diagnosis["config"]
    parts = [diagnosis["api"], failure.get("status"), failure.get("direction"), failure.get("output"),
             _signature_reading(diagnosis), shape_signature(shrunk)]
    if failure.get("convention"):  # the convention named (apitester.diagnosis.conventions: its key leaves sizes out)
        parts.append(failure["convention"])
    key = " | ".join("-" if p is None else str(p) for p in parts)
    return {"key": key, "hash": hashlib.sha1(key.encode()).hexdigest()[:12]}


def _signature_reading(diagnosis: dict) -> str | None:
    """The reading a failure is grouped by: what shrinking kept, or -- where another source than the float64
    oracle named the side (the gradient check) -- that reading and its source ("paddle_off (gradient_check)")."""
    reading = diagnosis.get("reading") or {}
    if reading.get("oracle") and reading.get("oracle") != ReadingSource.FLOAT64_ORACLE:
        return f"{reading.get('reading')} ({reading['oracle']})"
    return (diagnosis.get("failure") or {}).get("reading")


def group_failures(diagnoses: list[dict]) -> list[dict]:
    """Distinct failures of a list of diagnoses (undiagnosed ones left out), most configs first.

    Each: {"signature", "key", "count", "configs": [...], "representative"}; the representative is
    the config whose shrunk form has the fewest input elements (ties: the shortest config text)."""
    groups: dict[str, dict] = {}
    for diagnosis in diagnoses:
        if not diagnosis.get("diagnosed"):
            continue
        signature = diagnosis.get("signature") or failure_signature(diagnosis)
        group = groups.setdefault(signature["hash"], {"signature": signature["hash"], "key": signature["key"],
                                                      "members": []})
        group["members"].append(diagnosis)
    out = []
    for group in groups.values():
        members = sorted(group.pop("members"), key=_representative_order)
        out.append({**group, "count": len(members), "configs": [m["config"] for m in members],
                    "representative": members[0]["config"]})
    return sorted(out, key=lambda g: (-g["count"], g["key"]))


def _representative_order(diagnosis: dict):
    return ((diagnosis.get("shrink") or {}).get("elements_after", 0), len(diagnosis["config"]), diagnosis["config"])


# ---------------------------------------------------------------- text form


def render_text(diagnosis: dict) -> str:
    """The readable form of a diagnosis (``python -m apitester diagnose`` without --json)."""
    verdict = diagnosis.get("verdict") or {}
    lines = [f"[{verdict.get('strict_status', '?')} {verdict.get('direction') or ''}] {diagnosis['config']}".rstrip()]
    if not diagnosis.get("diagnosed"):
        lines.append(f"not diagnosed: {diagnosis.get('reason')}")
        return "\n".join(lines)
    reading, shrunk = diagnosis["reading"], diagnosis["shrink"]
    lines.append(f"reading of {reading['output']}: {reading['reading']}" + _reading_detail(reading))
    if reading.get("describes") == Describes.REPRO:
        lines.append(f"  (read on the shrunk repro, not the reported config: {reading.get('describes_why', '')})")
    for other in diagnosis["oracle"]["readings"]:
        if other["output"] != reading["output"]:
            lines.append(f"  {other['output']}: {other['reading']}" + _reading_detail(other))
    check = diagnosis.get("gradient_check")
    if check:
        lines.append("float64 gradient check: " + (_check_line(check) if check.get("ran") else f"not run ({check['reason']})"))
    lines.append(f"shrunk: {shrunk['elements_before']} -> {shrunk['elements_after']} input elements in "
                 f"{shrunk['trials']} trials, {shrunk['seconds']:.2f} s ({shrunk['stopped']})")
    lines.append(f"  {shrunk['config']}")
    lines.append(f"signature {diagnosis['signature']['hash']}: {diagnosis['signature']['key']}")
    lines.append(f"re-run: {diagnosis['repro']['command']}")
    lines.append("repro script:\n" + diagnosis["repro"]["script"])
    return "\n".join(lines)


def _reading_detail(reading: dict) -> str:
    if reading["reading"] == Reading.CONVENTION:
        return f" ({reading['convention']['text']})"
    if reading["reading"] == Reading.NO_ORACLE:
        return f" ({reading.get('no_oracle')}: {reading.get('reason')})"
    if reading.get("oracle") and not isinstance(reading.get("paddle"), dict):
        was = reading.get("float64_oracle") or {}
        return (f" (from the {reading['oracle']}) {reading.get('evidence')}"
                + (f" (float64 oracle: {was.get('no_oracle')})" if was else ""))
    if reading.get("agreeing_elements") and reading.get("evidence"):  # a side hidden behind a tie: both said
        return f" ({reading['evidence']})"
    p, t = reading["paddle"], reading["torch"]
    if reading.get("oracle") == ReadingSource.REFERENCE:
        return (f" (against the {reading['evidence']}: RMSE paddle {p['rmse']}, torch {t['rmse']}; max abs paddle "
                f"{p['max_abs']}, torch {t['max_abs']}; {reading.get('reason', '')})")
    return (f" (RMSE to the rounded float64 oracle: paddle {p['rmse']:.3g}, torch {t['rmse']:.3g}; "
            f"max abs paddle {p['max_abs']:.3g}, torch {t['max_abs']:.3g}; floor {reading['noise_floor']:.3g}, "
            f"k {reading['k']:g})").replace("'", "") if all(isinstance(v, float) for v in (p["rmse"], t["rmse"])) \
        else f" (RMSE paddle {p['rmse']}, torch {t['rmse']}; max abs paddle {p['max_abs']}, torch {t['max_abs']})"


def _check_line(check: dict) -> str:
    def side(name):
        s = check[name]
        if s.get("matches") is None:
            return f"{name} could not be checked ({s.get('error')})"
        return f"{name} {'matches' if s['matches'] else 'does NOT match'} numeric (max abs {s.get('max_abs')})"

    off = f"; side off: {check['side_off']}" if check.get("side_off") else ""
    return f"{side('paddle')}; {side('torch')} ({check['elements']} elements{off})"


__all__ = ["diagnose_config", "failure_signature", "group_failures", "render_text", "shape_signature",
           "TOO_LARGE", "VALUE_FAILURES"]
