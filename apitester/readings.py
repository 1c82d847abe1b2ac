"""The readings of a config that is not exact (issue #35; docs/verdicts.md#stability-and-who-is-closer).

``run_with_readings`` is ``execute.run_config`` plus, for a verdict whose strict layer is not exact:

* **stability** (``execute``'s ``stability=True``): the inexact draw run a second time on identical inputs,
  each side's bits compared with the first run's -> ``stable``, ``nondeterministic``;
* **who is closer**: the float64 oracle (``apitester.diagnosis.oracle.oracle_for``) on every inexact draw's inputs
  (``Verdict.inexact_draws``), read on the outputs that made that draw inexact (never an exact one); the worst
  reading (``SEVERITY``) -> ``closer`` (``apitester.vocab.Reading``), ``closer_code`` (``NoOracle``), both sides'
  RMSE to the rounded oracle and ``closer_draw`` (issue #44). Bounded by the config's input bytes
  (``CLOSER_MAX_INPUT_BYTES``: a config over it gets ``closer`` None and ``closer_skipped`` saying so) and by
  ``CLOSER_MAX_DRAWS`` / ``CLOSER_MAX_SECONDS`` (the draws left unread named in ``closer_note``).

Both readings are asked for (``readings=True``: ``python -m apitester --readings``, a run started with
``--readings`` or from the alignment page); without them a verdict costs what it did before the readings (issue
#43: on every inexact config the re-run and the oracle made a whole-set verdict about four times slower). The
worker pool and ``python -m apitester`` run every config through it; the diagnosis and the shrink call
``execute.run_config`` (they read the oracle themselves).
"""
from __future__ import annotations

import functools
import math
import time

from .engine import execute as ex
from .engine import trial
from . import inputs as inp
from .engine.compare import Verdict
from .config import ConfigSyntaxError, parse_config
from .diagnosis.gradients import gradient_check
from .diagnosis.measuring import no_oracle
from .diagnosis.oracle import oracle_for, reading_of
from .diagnosis.records import CloserDraw, GradientCheck, OutputReading
from .diagnosis.sides import input_tensors
from .engine.phases import Phase
from .vocab import Device, NoOracle, Reading

# The oracle runs each side twice more (at the config's dtypes and at float64) on inputs upcast to float64:
# float16 inputs take four times their bytes again, and the four results are held at once. Past 64 MiB of input
# (the engine's input estimate, bfloat16 counted as float32) that would take a worker's memory budget beyond the
# pool's estimate (MEMORY_FACTOR x input bytes) and roughly double the config's time, so the reading is skipped
# and the verdict says why. Every config under it gets its reading, whether it runs alone or in a run.
CLOSER_MAX_INPUT_BYTES = 64 << 20

# Every inexact draw of a verdict is read (the plan has at most four: typical, edge, two more seeds), the reported
# draw first; a further draw starts only while the readings, with one more draw of the mean time so far, stay under
# CLOSER_MAX_SECONDS (each draw runs both sides twice more: a 256 k-element float16 interpolate's oracle takes ~7 s a
# draw), and the verdict's ``closer_note`` names the draws the cap left unread.
CLOSER_MAX_DRAWS = 4
CLOSER_MAX_SECONDS = 20.0

# "The worst" reading over the inexact outputs of a draw and over the draws: a side off the float64 truth first (a
# side to fix), then an output with no oracle (it could hide one: never ranked below a reading of "fine"), then a
# convention, then within rounding; within a kind, the reading whose worse side is farthest from rounding (its RMSE
# over the output's noise floor). Outputs that are exact on a draw are not read at all.
SEVERITY = {Reading.PADDLE_OFF: 3, Reading.TORCH_OFF: 3, Reading.BOTH_OFF: 3, Reading.NO_ORACLE: 2,
            Reading.CONVENTION: 1, Reading.WITHIN_ROUNDING: 0}
_NO_FLOAT = "no floating output: integer and bool results are exact or not, there is no closer value"


class Quota:
    """At most ``per_group`` configs of each API x input-dtypes group get the readings (0: every config).

    A whole set holds hundreds of configs of one API and dtype that say the same thing (475 paddle.minimum configs,
    whose float64 oracle on a 16M-element broadcast takes ~15 s each): the first few non-exact configs of a group
    answer "who is closer" and "stable" for it, and every group with a non-exact config gets them. The verdicts left
    out say so (``closer_skipped``). A config run on its own (no quota) always gets them."""

    def __init__(self, per_group: int = 0):
        self.per_group = per_group
        self.taken: dict[tuple, int] = {}

    @staticmethod
    def group(config: str) -> tuple:
        try:
            call = parse_config(config)
        except ConfigSyntaxError:
            return (config,)
        return (config.split("(", 1)[0].strip(), *sorted({t.dtype for t in call.tensors()}))

    def allows(self, config: str) -> bool:
        return self.per_group <= 0 or self.taken.get(self.group(config), 0) < self.per_group

    def take(self, config: str) -> None:
        key = self.group(config)
        self.taken[key] = self.taken.get(key, 0) + 1


# What an inexact verdict says when nobody asked for its readings (docs/verdicts.md "Readings: only when asked").
NOT_ASKED = ("readings not asked for: the stability re-run and who is closer run with --readings "
             "(python -m apitester --readings, manage.py retest --readings)")


def run_with_readings(config: str, *, readings: bool = True, closer_max_bytes: int = CLOSER_MAX_INPUT_BYTES,
                      quota: Quota | None = None, **options) -> Verdict:
    """``execute.run_config(config, **options)``, with the stability and closer readings when ``readings`` (never
    raises); with a ``quota``, only while the config's group has readings left. Without ``readings`` the verdict
    costs what a verdict did before the readings existed: the 1e-2 verdict and the exact rule's ``exact`` /
    ``max_ulp``, an inexact one saying its readings were not asked for (``closer_skipped``)."""
    if not readings:
        verdict = ex.run_config(config, **options)
        if verdict.strict_exact is False:
            verdict.closer_skipped = NOT_ASKED
        return verdict
    if quota is not None and not quota.allows(config):
        verdict = ex.run_config(config, **options)
        if verdict.strict_exact is False:
            verdict.closer_skipped = (f"sampled: {quota.per_group} configs of {' '.join(quota.group(config))} already "
                                      "have the readings in this run (apitester.readings.Quota)")
        return verdict
    verdict = ex.run_config(config, stability=True, **options)
    if verdict.strict_exact is not False:
        return verdict
    if quota is not None:
        quota.take(config)
    start = time.perf_counter()
    try:
        _read_closer(verdict, closer_max_bytes, options.get("device", Device.CPU))
    except Exception as exc:  # an engine gap in the oracle: said, never blamed on a side
        verdict.closer, verdict.closer_code = Reading.NO_ORACLE, NoOracle.SIDE_RAISED
        verdict.closer_skipped = f"engine error in the oracle: {type(exc).__name__}: {str(exc)[:200]}"
    spent = time.perf_counter() - start
    verdict.seconds += spent
    # the stability re-run (inside run_config's seconds) and the oracle (after it) are both the readings' time
    verdict.phases[str(Phase.READINGS)] = round(verdict.phases.get(str(Phase.READINGS), 0.0) + spent, 4)
    verdict.readings_seconds = verdict.phases[str(Phase.READINGS)]
    return verdict


def input_bytes(config: str) -> int | None:
    try:
        return inp.estimate_bytes(parse_config(config))
    except ConfigSyntaxError:
        return None


def _read_closer(verdict: Verdict, limit: int, device: str) -> None:
    size = input_bytes(verdict.config)
    draws = _draws_to_read(verdict)
    if size is None or not draws:
        verdict.closer_skipped = "no inexact draw to read"
        return
    if size > limit:
        verdict.closer_skipped = (f"inputs of {size >> 20} MiB, over the oracle's bound of {limit >> 20} MiB "
                                  "(apitester.readings.CLOSER_MAX_INPUT_BYTES)")
        return
    try:
        prepared = trial.prepare(verdict.config, device)  # the oracle runs on the verdict's device
    except trial.NotRunnable as exc:
        verdict.closer_skipped = f"cannot prepare the config again: {exc.verdict.message[:200]}"
        return
    strict = prepared.strict_layer()
    began, read = time.perf_counter(), []
    for n, (draw, outputs) in enumerate(draws):
        spent = time.perf_counter() - began
        if n >= CLOSER_MAX_DRAWS or (n and spent + spent / n > CLOSER_MAX_SECONDS):  # would the next draw pass it?
            verdict.closer_note = (f"read {n} of {len(draws)} inexact draws; not read: "
                                   f"{', '.join(str(d) for d, _ in draws[n:])} (over the readings' cap of "
                                   f"{CLOSER_MAX_DRAWS} draws / {CLOSER_MAX_SECONDS:g} s, "
                                   "apitester.readings.CLOSER_MAX_DRAWS / CLOSER_MAX_SECONDS)")
            break
        read.append((str(draw), _read_draw(strict, prepared, draw, outputs)))
    _apply(verdict, read)


def _draws_to_read(verdict: Verdict) -> list[tuple[inp.Draw, list[str]]]:
    """Every inexact draw with the outputs that made it inexact: the stability's draw (the reported one when it is
    not exact) first, then plan order."""
    draws = [(inp.Draw.parse(d["draw"]), list(d.get("outputs") or [])) for d in verdict.inexact_draws]
    if not draws and verdict.inexact_draw is not None:  # a verdict made without the per-draw record
        draws = [(inp.Draw.parse(verdict.inexact_draw), [])]
    first = str(inp.Draw.parse(verdict.inexact_draw)) if verdict.inexact_draw else None
    return sorted(draws, key=lambda pair: str(pair[0]) != first)


def _read_draw(strict, prepared, draw: inp.Draw, outputs: list[str]) -> OutputReading | None:
    """The worst reading of the draw's inexact outputs (None: they are all integer / bool, no closer value). An
    output the oracle gives no reading for reads as the oracle's no_oracle -- never dropped below an exact output,
    which is not read at all."""
    # the trial's edge options, ties included: the inputs the verdict judged (a copy of its own once omitted ties)
    materialised = prepared.inputs_of(draw)
    try:
        oracle = oracle_for(strict, materialised, draw, grads=strict.want_grad)
    except Exception as exc:  # an engine gap in the oracle: said, never blamed on a side
        return no_oracle(outputs[0] if outputs else "", NoOracle.SIDE_RAISED,
                         f"engine error in the oracle: {type(exc).__name__}: {str(exc)[:200]}")
    labels = outputs or [r.output for r in oracle.readings]
    check = functools.cache(lambda: _small_gradient_check(strict, materialised, draw))  # one check for every input
    readings = [_settled(reading_of(oracle, label), check) for label in labels]
    if not labels and oracle.no_oracle not in (None, NoOracle.EXACT_DTYPE):
        readings = [no_oracle("", oracle.no_oracle, oracle.reason)]
    floating = [r for r in readings if r.no_oracle != NoOracle.EXACT_DTYPE]
    return max(floating, key=severity) if floating else None


# A gradient the float64 oracle leaves unsettled (disputed, or a float64 config: nothing higher to upcast to) is
# settled as the diagnosis settles it -- its float64 gradient check -- where that is cheap: inputs of at most this
# many floating elements (the check differences each element; a few seconds at this size).  Above it the reading
# stays the oracle's no_oracle (or, for a dispute at some elements only, the side those elements name).
CLOSER_GRADCHECK_ELEMENTS = 512


def _small_gradient_check(strict, materialised: dict, draw: inp.Draw) -> GradientCheck | None:
    """The diagnosis' float64 gradient check of the draw, or None: inputs over CLOSER_GRADCHECK_ELEMENTS floating
    elements, or an engine gap in the check (the oracle's reading then stands)."""
    elements = sum(t.array.size for t in input_tensors(materialised) if t.dtype in trial.FLOATING)
    if elements > CLOSER_GRADCHECK_ELEMENTS:
        return None
    reference = getattr(strict.spec, "ref_gradient", None)
    try:
        return gradient_check(strict, materialised, draw, reference_gradient=reference if callable(reference) else None)
    except Exception:
        return None


def _settled(reading: OutputReading, check) -> OutputReading:
    """``reading`` with the diagnosis' word where it has one: the gradient check's side, a kink's or an undefined
    derivative's convention (``read_with_gradient_check``), and the side named on the elements where a disputed
    gradient's float64 results agree (``hidden_side_reading``: minimum/maximum's ties on Paddle 3.0.0). ``check``:
    the draw's gradient check, taken on first use (``_small_gradient_check``)."""
    # the diagnosis' rules, imported when a reading is taken (a pool worker does not load the diagnosis otherwise)
    from .diagnosis.diagnose import GRADIENT_SETTLES, hidden_side_reading, read_with_gradient_check

    settled = None
    if reading.is_gradient and reading.no_oracle in GRADIENT_SETTLES:
        settled = check()
    return hidden_side_reading(reading, reading) if settled is None else read_with_gradient_check(reading, settled)


def _apply(verdict: Verdict, read: list[tuple[str, OutputReading | None]]) -> None:
    """The worst reading over the draws read on the verdict (``severity``), the draw it comes from named."""
    verdict.closer_draws = [_summary(draw, r) for draw, r in read if r is not None]
    worst = max(((draw, r) for draw, r in read if r is not None), key=lambda pair: severity(pair[1]), default=None)
    if worst is None:
        verdict.closer_skipped = _NO_FLOAT
        return
    verdict.closer_draw, reading = worst
    verdict.closer, verdict.closer_output = reading.reading, reading.output or verdict.output
    verdict.closer_code = reading.no_oracle or ""
    verdict.closer_skipped = reading.reason if str(reading.reason or "").startswith("engine error") else ""
    if reading.paddle is not None:
        verdict.paddle_rmse, verdict.torch_rmse = float(reading.paddle.rmse), float(reading.torch.rmse)


def _summary(draw: str, reading: OutputReading) -> dict:
    return CloserDraw(draw, reading.output, reading.reading, reading.no_oracle or "").to_dict()


def severity(reading: OutputReading) -> tuple[int, float]:
    """How bad a reading is, for "the worst" over outputs and draws (docs/verdicts.md#stability-and-who-is-closer):
    first by its kind (SEVERITY: a side off, then no oracle, then a convention, then within rounding), then by how
    far its worse side is from rounding (its RMSE over the noise floor; -1 without one)."""
    return SEVERITY.get(reading.reading, 0), _distance(reading)


def _distance(reading: OutputReading) -> float:
    """How far the reading's worse side is from rounding (its RMSE over the noise floor; -1 without an oracle).
    A floor of 0 (an exact 0 is the truth everywhere) makes any error infinitely far."""
    if reading.paddle is None:
        return -1.0
    floor = reading.noise_floor or 0.0
    worse = max(reading.paddle.rmse, reading.torch.rmse)
    if not floor:
        return math.inf if worse else 0.0
    return worse / floor


__all__ = ["CLOSER_MAX_DRAWS", "CLOSER_MAX_INPUT_BYTES", "CLOSER_MAX_SECONDS", "NOT_ASKED", "SEVERITY",
           "run_with_readings", "input_bytes", "severity"]
