"""The spec's independent reference (``Spec.ref``: NumPy / SciPy / mpmath at >= 30 digits, rounded once to float64;
``apitester.references``) as the oracle of one draw: where the float64 pair is disputed, where the config is
float64 already, or where a result is NaN/inf, each side's config-dtype result is measured against it by the rule
of ``measuring`` (``read_by_reference``), and a reading that names a side stands only where the reference is certain
of itself at a second precision (``certain_reading``).  ``check_reference`` checks a spec's reference against both
frameworks' float64 results (tests/engine/test_references.py).
"""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..engine import trial
from .. import references
from ..engine.compare import Out, encode_float
from ..vocab import NoOracle, Reading, ReadingSource
from .measuring import (AGREE_RTOL, EPS, HIGH, measure, no_oracle, oracles_agree, rounded_to,
                        same_values)
from .records import OutputReading, ReferenceAgreement, ReferenceCheck
from .sides import input_tensors, run_side, upcast


# The independent reference runs in mpmath element by element: above this many input elements it is
# not run and the reading is ``too_large`` (shrinking then adopts the reading of the first smaller
# candidate, as for the oracle's own bound).
REF_MAX_ELEMENTS = 1 << 15
# A framework's float64 result computes the documented function when it is within this of the
# reference (the float64 pair's own agreement rule, ``oracles_agree``).
REF_RTOL = AGREE_RTOL
# Float64's machine epsilon: the noise floor of a float64 config measured against the reference.
EPS64 = 2.0 ** -52


class Reference:
    """The spec's ``ref`` on one draw's upcast inputs, run at most once and only when a reading needs it.

    ``outputs()`` gives the flattened reference outputs (float64 / complex128 arrays), or None with
    ``why`` saying why there are none (no ref, an argument combination it does not cover, too large)."""

    def __init__(self, prepared, high_inputs: dict, max_elements: int | None = None):
        self.spec = prepared.spec
        # the diagnosis reads a reported config with a wider bound (diagnose.REPORTED_MAX_ELEMENTS, under a timer)
        self.max_elements = REF_MAX_ELEMENTS if max_elements is None else max_elements
        self.sig = prepared.sig
        self.high_inputs = high_inputs
        self.why = ""
        self.code = None  # NoOracle.TOO_LARGE when the size bound kept it from running
        self._outputs: list[np.ndarray] | None = None
        self._ran = False
        self._checked: list[np.ndarray] | None = None  # the outputs at references.CHECK_DPS, once asked for
        self._check_why = ""

    @property
    def exists(self) -> bool:
        return self.spec.ref is not None

    @property
    def evidence(self) -> str:
        how = getattr(self.spec.ref, "how", "") or "NumPy; mpmath at 40 digits and exact rational sums, rounded once"
        return f"independent reference ({how}) of {self.spec.api}"

    def outputs(self) -> list[np.ndarray] | None:
        if not self._ran:
            self._ran = True
            self._outputs = self._run()
        return self._outputs

    def _run(self) -> list[np.ndarray] | None:
        if self.spec.ref is None:
            self.why = "the spec has no independent reference"
            return None
        elements = sum(t.array.size for t in input_tensors(self.high_inputs))
        if elements > self.max_elements:
            self.why = f"{elements} input elements, over the reference's {self.max_elements}"
            self.code = NoOracle.TOO_LARGE
            return None
        values = {k: trial.map_tensors(v, lambda t: t.array.copy()) for k, v in self.high_inputs.items()}
        try:
            with np.errstate(all="ignore"):
                raw = self.spec.ref(**trial.reference_kwargs(values, self.sig))
        except NotImplementedError as exc:
            self.why = f"the reference does not cover these arguments{': ' + str(exc) if str(exc) else ''}"
            return None
        except Exception as exc:  # an engine gap in the reference: said so, never a side's error
            self.why = f"the reference raised: {trial.short_error(exc)}"[:300]
            return None
        return [np.asarray(v) for v in trial.flatten_outputs(raw)]

    def certain(self, index: int) -> tuple[np.ndarray | None, str]:
        """Per element of output ``index``: does the reference give the same float64 value at its precision and
        at ``references.CHECK_DPS`` (NaN as NaN, inf as the same inf)?  (None, why) when the second run gives
        nothing to compare (it raised, or another shape): then no element is certain."""
        ref = self.output(index)
        if ref is None:
            return None, self.why
        if self._checked is None:  # one more run of the whole reference, at most once per draw
            self._checked, self._check_why = self._run_at(references.CHECK_DPS)
        if self._checked is None or index >= len(self._checked) or self._checked[index].shape != ref.shape:
            return None, self._check_why or f"at {references.CHECK_DPS} digits the reference gives no output {index}"
        return same_values(ref, self._checked[index]), ""

    def _run_at(self, dps: int) -> tuple[list[np.ndarray] | None, str]:
        """The outputs at ``dps`` digits (every ref reads ``references.DPS`` when it runs), and why there are none."""
        saved = self.why, self.code
        with references.precision(dps):
            outs = self._run()
        why, (self.why, self.code) = self.why, saved
        return outs, why

    def output(self, index: int | None) -> np.ndarray | None:
        outs = self.outputs()
        if outs is None or index is None:
            return None
        if index >= len(outs):
            self.why = f"the reference gives {len(outs)} outputs, not {index + 1}"
            return None
        return outs[index]

    def checked(self, index: int) -> np.ndarray | None:
        """Output ``index`` at ``references.CHECK_DPS`` digits, once ``certain`` has run it."""
        return None if self._checked is None or index >= len(self._checked) else self._checked[index]


def _reference_gap(values: np.ndarray, ref: np.ndarray) -> tuple[bool, float]:
    """(computes the documented function, max gap of the output's scale) of a float64 result to the reference."""
    if np.asarray(values).shape != np.asarray(ref).shape:
        return False, math.inf
    return oracles_agree(values, ref)


def read_by_reference(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out, ref: np.ndarray,
                      reference: Reference, why: str, index: int | None = None) -> OutputReading:
    """The reading against the spec's reference: ``why`` says what sent it there (disputed, float64, NaN).

    With the output's ``index``, a reading that names a side is checked against the reference at a second
    precision (``certain_reading``)."""
    reading = _reading_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why)
    if index is None or reading.reading not in SIDE_READINGS:
        return reading
    return certain_reading(reading, (low_p, low_t, high_p, high_t), ref, reference, why, index)


# The readings that name a side: only these re-run the reference at the second precision (the check's cost is
# one more reference run, paid where a side is named, not on every within_rounding output).
SIDE_READINGS = (Reading.PADDLE_OFF, Reading.TORCH_OFF, Reading.BOTH_OFF)


def _cut(out: Out, mask: np.ndarray) -> Out:
    array = np.asarray(out.array)
    return Out(array[mask] if array.shape == mask.shape else array, out.dtype, out.is_tensor)


def certain_reading(reading: OutputReading, outs: tuple, ref: np.ndarray, reference: Reference, why: str,
                    index: int) -> OutputReading:
    """A side reading stands only where the reference is certain of itself: its value, rounded to float64, is the
    same at ``references.REFERENCE_DPS`` and ``references.CHECK_DPS`` digits on every element, or the reading
    is the same on the certain elements alone.  Otherwise ``no_oracle`` / ``reference_uncertain``, never a side."""
    certain, trouble = reference.certain(index)
    digits = [references.REFERENCE_DPS, references.CHECK_DPS]
    if certain is not None and certain.all():
        return replace(reading, reference_check={"digits": digits, "uncertain": 0})
    uncertain = ref.size if certain is None else int((~certain).sum())
    check = {"digits": digits, "uncertain": uncertain}
    if certain is not None and certain.any():
        part = _reading_by_reference(reading.output, *(_cut(o, certain) for o in outs), ref[certain],
                                     reference, why)
        if part.reading == reading.reading:
            note = (f"the reference differs at {digits[0]} and {digits[1]} digits on {uncertain} of {ref.size} "
                    f"elements; the reading is the same without them")
            return replace(reading, reference_check=check, reason=f"{reading.reason}; {note}")
    if certain is None:
        detail = f"its value at {digits[1]} digits could not be compared: {trouble}"
    else:
        at = int(np.flatnonzero(~certain.reshape(-1))[0])
        high = reference.checked(index).reshape(-1)[at]
        detail = (f"{uncertain} of {ref.size} elements differ at {digits[0]} and {digits[1]} digits "
                  f"(e.g. element {at}: {ref.reshape(-1)[at]:.6g} and {high:.6g})")
    out = no_oracle(reading.output, NoOracle.REFERENCE_UNCERTAIN,
                    f"{why}; the reference is not certain where it decides ({detail}): it would read "
                    f"{reading.reading}, which it cannot settle")
    return replace(out, reference_check=check, evidence=reference.evidence)


def _reading_by_reference(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out, ref: np.ndarray,
                          reference: Reference, why: str) -> OutputReading:
    """read_by_reference's reading on the reference's value at its own precision."""
    dtype = low_t.dtype
    if ref.shape != np.asarray(low_t.array).shape:
        return no_oracle(label, NoOracle.NOT_NUMERIC, f"{why}; the reference's shape {ref.shape} differs "
                                                      f"from the outputs' {np.asarray(low_t.array).shape}")
    ref = ref.astype(np.complex128 if ref.dtype.kind == "c" or dtype.startswith("complex") else np.float64)
    high = dtype in HIGH
    eps = EPS64 if high else EPS.get(dtype, EPS["float32"])
    reading = replace(measure(label, low_p, low_t, ref, dtype, eps, "the reference"),
                      oracle=ReadingSource.REFERENCE, evidence=reference.evidence)
    reasons = [why]
    if not high and high_p.dtype in HIGH and high_t.dtype in HIGH:
        match_p, gap_p = _reference_gap(high_p.array, ref)
        match_t, gap_t = _reference_gap(high_t.array, ref)
        reading = replace(reading, float64_match={"paddle": match_p, "torch": match_t},
                          reference_gap={"paddle": encode_float(gap_p), "torch": encode_float(gap_t)})
        if match_p != match_t:
            reasons.append(f"{'Paddle' if match_p else 'Torch'}'s float64 result computes the documented function "
                           f"(within {REF_RTOL:g} of the reference), {'Torch' if match_p else 'Paddle'}'s "
                           f"does not (gap {max(gap_p, gap_t):.3g} of the output's scale)")
        elif not match_p:
            reasons.append(f"neither float64 result computes the documented function (gaps to the reference: "
                           f"Paddle {gap_p:.3g}, Torch {gap_t:.3g} of the output's scale, over {REF_RTOL:g})")
            if reading.reading == Reading.WITHIN_ROUNDING:
                reading = replace(reading, reading=Reading.BOTH_OFF)
    for side, note in (reading.nonfinite or {}).items():
        reasons.append(f"{'Paddle' if side == 'paddle' else 'Torch'}: {note}")
    return replace(reading, reason="; ".join(reasons))


def without_reference(reading: OutputReading, reference: Reference | None) -> OutputReading:
    """A no_oracle reading, saying why the reference did not settle it (too large: shrinking adopts a smaller one)."""
    if reference is None or not reference.exists:
        return reading
    if reference.code == NoOracle.TOO_LARGE:
        return no_oracle(reading.output, NoOracle.TOO_LARGE, f"{reading.reason}; {reference.why}")
    if reference.why:
        reading = replace(reading, reason=f"{reading.reason}; no reference reading: {reference.why}")
    return reading


def check_reference(prepared, materialised: dict) -> ReferenceCheck:
    """The spec's reference against both frameworks' float64 results on one draw's inputs.

    Returns a ``ReferenceCheck`` (``ran``, ``why``, ``outputs``: a ``ReferenceAgreement`` per forward output):
    per forward output, whether Paddle and Torch agree at float64 (``oracles_agree``; integer and bool
    outputs exactly) and, where they do, whether the reference agrees with them by the same rule.
    ``tests/engine/test_references.py`` runs it on typical inputs for every spec with a ``ref``."""
    high = upcast(materialised)
    reference = Reference(prepared, high)
    outs = reference.outputs()
    if outs is None:
        return ReferenceCheck(False, reference.why)
    runs = {name: run_side(name, prepared, trial.copy_inputs(high)) for name in ("paddle", "torch")}
    if any(run.error for run in runs.values()):
        return ReferenceCheck(False, "; ".join(f"{k}: {r.error}" for k, r in runs.items() if r.error))
    rows = []
    for i, ref in enumerate(outs):
        if i >= min(len(r.outputs) for r in runs.values()):
            rows.append(ReferenceAgreement(i, False, None, "the reference has more outputs than the frameworks"))
            continue
        p, t = runs["paddle"].outputs[i].array, runs["torch"].outputs[i].array
        if p is None or t is None:
            continue
        p, t, ref = np.asarray(p), np.asarray(t), np.asarray(ref)
        if p.dtype.kind in "fc" and t.dtype.kind in "fc":
            together, _ = oracles_agree(p, t)
            low = runs["torch"].outputs[i].dtype
            if low not in HIGH and low in EPS or low in ("float16", "bfloat16"):
                ref = rounded_to(ref.astype(np.float64) if ref.dtype.kind != "c" else ref, low)  # a fixed dtype
            ok, gap = (oracles_agree(ref, t)
                       if ref.shape == t.shape else (False, math.inf))
            rows.append(ReferenceAgreement(i, together, ok, gap))
        else:
            together = p.shape == t.shape and bool(np.array_equal(p, t))
            ok = ref.shape == t.shape and bool(np.array_equal(ref.astype(t.dtype), t))
            rows.append(ReferenceAgreement(i, together, ok,
                                           0.0 if ok else f"ref {ref.shape} {ref.dtype} vs torch {t.shape} {t.dtype}"))
    return ReferenceCheck(True, "", tuple(rows))
