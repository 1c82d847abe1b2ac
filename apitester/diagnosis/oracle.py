"""A float64 oracle for one config: which side is off the exact value, and by how much.

The draw that failed (``Verdict.draw``: kind + seed, ``apitester.inputs``) is materialised at the
config's dtypes, then the same numbers are upcast to float64 (complex64 -> complex128; integer and
bool inputs are left as they are) and run through the strict Paddle call *and* the strict Torch call
(the layer "fix verified" reads).  Where the two float64 results agree (``AGREE_RTOL``) Torch's
float64 result is the oracle; where they do not, there is none (``disputed``).  Each side's result at
the config's dtype is then measured against it (max abs, max rel, RMSE) and read with
``apitester.vocab.Reading`` (``read_errors``; the rule and its constants are documented there and in
docs/diagnosis.md).

Where that float64 pair is ``disputed``, where the config is float64 already (nothing to upcast to), or
where a result is NaN/inf, the spec's independent reference (``Spec.ref``: NumPy / SciPy / mpmath at
>= 30 digits, rounded once to float64; ``apitester.references``) is the oracle instead when the spec
has one: each side's config-dtype result is measured against it by the same rule, and the reading
says ``"oracle": "reference"``, names the reference as ``evidence`` and, for a disputed pair, which
framework's float64 result computes the documented function (``float64_match``).  A NaN or inf on a
side where the oracle is finite (or a finite value where it is NaN/inf) is that side's error and the
reading's ``nonfinite`` says so (docs/diagnosis.md, "The independent reference").

For a backward failure a float64 gradient check (``gradient_check``: one-sided differences at a step scaled
to each element, refined where the step straddles a clamp, Richardson-extrapolated, kinks read as
subgradients) says whether each side's analytic float64 gradient matches the numeric derivative of its own
float64 forward, and which side misses it; it checks every element of small inputs (``GRADCHECK_MAX_ELEMENTS``,
i.e. after shrinking) and, on larger ones, the elements where the two sides' float64 gradients differ most
(``GRADCHECK_CHOSEN``): the difference is the question, and a side's miss there is a miss wherever it is.

This module reads one draw (``oracle_for``) and one output (``read_output``); the jobs it calls are modules of their
own: ``sides`` (running a side), ``measuring`` (errors, the noise floor, who is closer), ``reference`` (the spec's
reference as the oracle), ``reference_gradients`` (a gradient settled by the reference's derivative) and
``gradients`` (the numeric gradient check).

An output's reading is a ``records.OutputReading`` (its ``to_dict`` the JSON, floats through
``compare.encode_float``).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..engine import trial
from .. import inputs as inp
from ..engine.compare import Out
from ..vocab import NoOracle
from .measuring import (AGREE_RTOL, EPS, HIGH, K, as_float, error_to_oracle, has_nonfinite, no_oracle,
                        nonfinite_note, noise_floor, oracles_agree, read_errors, rounded_to, agreeing_mask)
from .records import AgreeingElements, DrawReadings, OutputReading
from .reference import Reference, read_by_reference, without_reference
from .reference_gradients import settle_gradient
from .sides import config_level_reason, output_gradients, run_side, upcast


def read_output(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out,
                reference: Reference | None = None, index: int | None = None) -> OutputReading:
    """One output's (or gradient's) reading from the four results (config dtype / float64, both sides).

    ``reference`` (with the output's ``index``; None for a gradient) settles a disputed pair, a float64
    config, and a non-finite result the float64 pair agrees on while the reference is finite there."""
    arrays = (low_p.array, low_t.array, high_p.array, high_t.array)
    if any(a is None for a in arrays):
        return no_oracle(label, NoOracle.NOT_NUMERIC, "an output is None on one side")
    dtype = low_t.dtype if low_t.is_tensor else None
    if dtype is None or any(a.dtype.kind not in "fc" for a in arrays):
        return no_oracle(label, NoOracle.EXACT_DTYPE, "integer/bool (or non-tensor) output: compared exactly")
    use_ref = reference is not None and reference.exists and index is not None
    if dtype in HIGH:
        why = f"the output is {dtype} at the config's dtypes"
        ref = reference.output(index) if use_ref and low_p.array.shape == low_t.array.shape else None
        if ref is not None:
            return read_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why, index)
        return without_reference(no_oracle(label, NoOracle.FLOAT64_CONFIG, why), reference if use_ref else None)
    if high_p.dtype not in HIGH or high_t.dtype not in HIGH:
        why = (f"the upcast run gives {high_p.dtype} (paddle) / {high_t.dtype} (torch), not float64: "
               "an argument fixes the output dtype")
        ref = reference.output(index) if use_ref and low_p.array.shape == low_t.array.shape else None
        if ref is not None:  # the reference rounded to the output's dtype is the correctly rounded result
            return read_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why, index)
        # a reference over its size bound reads too_large, so shrinking adopts a smaller candidate's reading
        return without_reference(no_oracle(label, NoOracle.CANNOT_UPCAST, why), reference if use_ref else None)
    if len({a.shape for a in arrays}) != 1:
        return no_oracle(label, NoOracle.NOT_NUMERIC, "the outputs' shapes differ")
    agree, gap = oracles_agree(high_p.array, high_t.array)
    if not agree:
        why = f"the float64 results disagree (max gap {gap:.3g} of the output's scale, over {AGREE_RTOL:g})"
        ref = reference.output(index) if use_ref else None
        if ref is not None:
            reading = replace(read_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why, index),
                              oracle_gap=gap)
        else:
            reading = without_reference(no_oracle(label, NoOracle.DISPUTED, why), reference if use_ref else None)
        agreeing = agreeing_elements(low_p, low_t, high_p, high_t)
        return replace(reading, agreeing_elements=agreeing) if agreeing else reading
    return _read_agreed(label, low_p, low_t, high_p, high_t, gap, reference if use_ref else None, index)


def agreeing_elements(low_p: Out, low_t: Out, high_p: Out, high_t: Out) -> AgreeingElements | None:
    """Where the float64 results disagree on some elements only (a tie of minimum/maximum, where each side gives
    its own subgradient), the elements where they agree read as ``_read_agreed`` reads a whole output: Torch's
    float64 value is the oracle there, each side's error to it rounded to the dtype, floor eps x RMS, K.  A value
    error on those elements (Paddle 3.0.0's float32 minimum gradient) is otherwise hidden behind the dispute.
    None where no element (or every element) agrees."""
    mask = agreeing_mask(high_p.array, high_t.array)
    count, total = int(mask.sum()), int(mask.size)
    if count == 0 or count == total:
        return None
    dtype, oracle = low_t.dtype, as_float(high_t.array)[mask]
    rounded = rounded_to(oracle, dtype)
    paddle_err = error_to_oracle(np.asarray(low_p.array)[mask], rounded)
    torch_err = error_to_oracle(np.asarray(low_t.array)[mask], rounded)
    floor = noise_floor(oracle, dtype if dtype in EPS else "float32")
    return AgreeingElements(count, total, dtype, read_errors(paddle_err.rmse, torch_err.rmse, floor), floor, K,
                            paddle_err, torch_err)


def _read_agreed(label: str, low_p: Out, low_t: Out, high_p: Out, high_t: Out, gap: float,
                 reference: Reference | None, index: int | None) -> OutputReading:
    """The reading where the float64 pair agrees: Torch's float64 result is the oracle, unless the pair
    agrees on a NaN/inf the reference does not have (an overflow inside both)."""
    dtype, oracle = low_t.dtype, high_t.array
    if reference is not None and has_nonfinite(low_p.array, low_t.array, high_p.array, high_t.array):
        ref = reference.output(index)
        if ref is not None and ref.shape == oracle.shape and \
                (np.isfinite(as_float(ref)) != np.isfinite(as_float(oracle))).any():
            why = "the float64 results agree on a non-finite value where the reference differs"
            return replace(read_by_reference(label, low_p, low_t, high_p, high_t, ref, reference, why, index),
                           oracle_gap=gap)
    # Each side is measured against the oracle rounded to the output's dtype: the correctly rounded
    # result.  Against the raw float64 value, a float16 product that rightly overflows to inf (x*1e6
    # for |x| > 0.066) would count as an infinite error on both sides.
    rounded = rounded_to(oracle, dtype)
    paddle_err, torch_err = error_to_oracle(low_p.array, rounded), error_to_oracle(low_t.array, rounded)
    floor = noise_floor(oracle, dtype if dtype in EPS else "float32")
    return OutputReading(label, read_errors(paddle_err.rmse, torch_err.rmse, floor), dtype=dtype, noise_floor=floor,
                         k=K, oracle_gap=gap, paddle=paddle_err, torch=torch_err,
                         nonfinite=nonfinite_note(low_p.array, low_t.array, rounded, "the float64 oracle") or None)


# ---------------------------------------------------------------- the oracle of one draw


# Config-level reasons a spec's reference can see past: float64 inputs (the reference computes above float64) and
# integer inputs (an integer to float16 cast rounds, and the reference rounds correctly: int64 65519 is 65504 in
# float16, not inf); the per-output readings then say whether an output is exact.
REFERENCE_SETTLES = (NoOracle.FLOAT64_CONFIG, NoOracle.EXACT_DTYPE)


def oracle_for(prepared, materialised: dict, draw: inp.Draw, *, grads: bool,
               ref_max_elements: int | None = None) -> DrawReadings:
    """Readings of every forward output (and, with ``grads``, every input gradient) of one draw.

    ``prepared`` is the strict layer (``Trial.strict``).  Returns the ``DrawReadings``
    (``readings``, ``no_oracle``: a code or None, ``reason``) -- the readings are per output, labelled as the
    verdict labels them ("output 0", "grad x").  ``ref_max_elements``: the reference's input bound (default
    REF_MAX_ELEMENTS; the diagnosis reads a reported config with a wider one)."""
    level = config_level_reason(prepared, materialised)
    if level is not None and not (level[0] in REFERENCE_SETTLES and prepared.spec.ref is not None):
        return DrawReadings.none(level[0], level[1])
    grad_of = output_gradients(prepared, materialised, draw) if grads else {}
    high_inputs = upcast(materialised)
    high_grad_of = {i: g.astype(np.complex128 if g.dtype.kind == "c" else np.float64) for i, g in grad_of.items()}
    runs = {
        "low_p": run_side("paddle", prepared, trial.copy_inputs(materialised), grad_of),
        "low_t": run_side("torch", prepared, trial.copy_inputs(materialised), grad_of),
        "high_p": run_side("paddle", prepared, trial.copy_inputs(high_inputs), high_grad_of),
        "high_t": run_side("torch", prepared, trial.copy_inputs(high_inputs), high_grad_of),
    }
    failed = [f"{key}: {run.error}" for key, run in runs.items() if run.error]
    if failed:
        return DrawReadings.none(NoOracle.SIDE_RAISED, "a side raised: " + "; ".join(failed)[:400])
    reference = Reference(prepared, high_inputs, ref_max_elements)
    readings = [read_output(f"output {i}", *(run.outputs[i] for run in runs.values()), reference=reference, index=i)
                for i in range(min(len(run.outputs) for run in runs.values()))]
    low_p = runs["low_p"]
    if grad_of and len({len(run.grads) for run in runs.values()}) == 1:
        readings += [settle_gradient(read_output(label, *(run.grads[j] for run in runs.values())), j,
                                     reference, runs, high_grad_of)
                     for j, label in enumerate(low_p.grad_labels)]
    return DrawReadings(tuple(readings))


def reading_of(oracle: DrawReadings, output: str | None) -> OutputReading:
    """The reading of the verdict's failing output (``Verdict.output``), or the oracle's no_oracle."""
    for reading in oracle.readings:
        if reading.output == output:
            return reading
    if oracle.no_oracle:
        return no_oracle(output or "", oracle.no_oracle, oracle.reason)
    return no_oracle(output or "", NoOracle.NOT_NUMERIC, f"no value reading for {output or 'this failure'}")
