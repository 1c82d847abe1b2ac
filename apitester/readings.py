"""The readings of a config that is not exact (issue #35; docs/verdicts.md#stability-and-who-is-closer).

``run_with_readings`` is ``execute.run_config`` plus, for a verdict whose strict layer is not exact:

* **stability** (``execute``'s ``stability=True``): the inexact draw run a second time on identical inputs,
  each side's bits compared with the first run's -> ``stable``, ``nondeterministic``;
* **who is closer**: the float64 oracle (``apitester.diagnosis.oracle.oracle_for``) on that draw's inputs, its reading
  of the worst output -> ``closer`` (``apitester.vocab.Reading``), ``closer_code`` (``NoOracle``) and both
  sides' RMSE to the rounded oracle. Bounded by the config's input bytes (``CLOSER_MAX_INPUT_BYTES``); a
  config over it gets ``closer`` None and ``closer_skipped`` saying so.

Both readings are asked for (``readings=True``: ``python -m apitester --readings``, a run started with
``--readings`` or from the alignment page); without them a verdict costs what it did before the readings (issue
#43: on every inexact config the re-run and the oracle made a whole-set verdict about four times slower). The
worker pool and ``python -m apitester`` run every config through it; the diagnosis and the shrink call
``execute.run_config`` (they read the oracle themselves).
"""
from __future__ import annotations

import time

from . import execute as ex
from . import trial
from . import inputs as inp
from .compare import Verdict, decode_float
from .config import ConfigSyntaxError, parse_config
from .diagnosis.oracle import oracle_for
from .phases import Phase
from .vocab import Device, NoOracle, Reading

# The oracle runs each side twice more (at the config's dtypes and at float64) on inputs upcast to float64:
# float16 inputs take four times their bytes again, and the four results are held at once. Past 64 MiB of input
# (the engine's input estimate, bfloat16 counted as float32) that would take a worker's memory budget beyond the
# pool's estimate (MEMORY_FACTOR x input bytes) and roughly double the config's time, so the reading is skipped
# and the verdict says why. Every config under it gets its reading, whether it runs alone or in a run.
CLOSER_MAX_INPUT_BYTES = 64 << 20

# A reading's "distance from rounding": the larger RMSE of the two sides over the output's noise floor. The worst
# output of a verdict that names none (a config within tolerance) is the one farthest from rounding.
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
    if size is None or verdict.inexact_draw is None:
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
    draw = inp.Draw.parse(verdict.inexact_draw)
    # the trial's edge options, ties included: the inputs the verdict judged (a copy of its own once omitted ties)
    materialised = prepared.inputs_of(draw)
    oracle = oracle_for(strict, materialised, draw, grads=strict.want_grad)
    _apply(verdict, oracle)


def _apply(verdict: Verdict, oracle: dict) -> None:
    """The worst output's reading on the verdict (the failing output when the verdict names one)."""
    readings = [r for r in oracle["readings"] if r.get("no_oracle") != NoOracle.EXACT_DTYPE]
    if not readings:
        if oracle.get("no_oracle") in (None, NoOracle.EXACT_DTYPE):
            verdict.closer_skipped = _NO_FLOAT
            return
        verdict.closer, verdict.closer_code = Reading.NO_ORACLE, oracle["no_oracle"]
        verdict.closer_skipped = ""
        verdict.closer_output = verdict.output
        return
    named = [r for r in readings if r["output"] == verdict.output]
    reading = named[0] if named else max(readings, key=_distance)
    verdict.closer, verdict.closer_output = reading["reading"], reading["output"]
    verdict.closer_code = reading.get("no_oracle") or ""
    if reading.get("paddle"):
        verdict.paddle_rmse = decode_float(reading["paddle"]["rmse"])
        verdict.torch_rmse = decode_float(reading["torch"]["rmse"])


def _distance(reading: dict) -> float:
    """How far the reading's worse side is from rounding (its RMSE over the noise floor; -1 without an oracle)."""
    if not reading.get("paddle"):
        return -1.0
    floor = decode_float(reading["noise_floor"]) or 1.0
    return max(decode_float(reading["paddle"]["rmse"]), decode_float(reading["torch"]["rmse"])) / floor


__all__ = ["CLOSER_MAX_INPUT_BYTES", "NOT_ASKED", "run_with_readings", "input_bytes"]
