"""Compare Paddle's outputs (ACTUAL) with Torch's (DESIRED) and produce a Verdict.

Rules (PaddleAPITest's, made explicit):
* shapes must be equal (else ``shape_mismatch``), dtypes must be equal (else
  ``dtype_mismatch``; a Python scalar output is not dtype-checked);
* bool and integer outputs must match exactly;
* floating/complex outputs: NaN positions must match, inf positions and signs must match,
  finite pairs must satisfy ``|actual - desired| <= atol + rtol * |desired|`` (numpy's
  assert_allclose rule); complex values are compared on real and imaginary parts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields
from typing import Sequence

import numpy as np

from ..inputs import Draw
from .phases import Phase, PhaseClock
from ..vocab import AdaptationKind, Rule, Side, Status, rule_of  # noqa: F401  (Rule re-exported)

# Every status a verdict can have (the engine's and the pool's), in apitester.vocab's order.
STATUSES = tuple(Status)

# Fields of one comparison layer (the strict one and, where a spec adapts, the adapted one).
LAYER_FIELDS = ("status", "direction", "max_abs", "max_rel", "mismatched", "output", "message", "exact", "max_ulp",
                "facts")


def layer_of(verdict: "Verdict") -> dict:
    """The layer summary of a comparison's verdict (floats JSON-safe)."""
    layer = {key: getattr(verdict, key) for key in LAYER_FIELDS}
    layer["facts"] = dict(verdict.facts)
    for key in ("max_abs", "max_rel"):
        layer[key] = encode_float(layer[key])
    return layer


def final_status(strict: str, adapted: str, kinds) -> str:
    """The verdict's status from its two layers (docs/verdicts.md).

    The strict layer decides, except where it fails and the adaptation passes:
    a documented Paddle behaviour -> ``documented_difference`` (never ``pass``); a reference
    at a higher precision than Torch's own call, which Paddle matches -> ``torch_suspect``
    (Torch is the one off the exact value).  Any other adaptation does not excuse a strict failure.
    """
    if strict == Status.PASS or adapted != Status.PASS:
        return strict
    if strict in (Status.TORCH_ERROR, Status.UNSUPPORTED):
        return strict  # the strict layer could not be judged: no verdict, as before
    if AdaptationKind.DOCUMENTED_SEMANTICS in kinds:
        return Status.DOCUMENTED_DIFFERENCE
    if AdaptationKind.REFERENCE_PRECISION in kinds and strict == Status.ACCURACY_ERROR:
        return Status.TORCH_SUSPECT
    return strict

DIFF_MAP_CELLS = 128
# Verdict fields that are floats (NaN and inf travel as strings in the JSON).
FLOAT_FIELDS = ("max_abs", "max_rel", "atol", "rtol", "seconds", "framework_seconds", "paddle_rmse", "torch_rmse",
                "readings_seconds")


@dataclass
class Out:
    """One output (or gradient) of one side, normalised to numpy.

    ``dtype`` is the framework's dtype name ("bfloat16" arrays are held as float32);
    ``is_tensor`` is False for Python scalars, whose dtype is not checked.
    """

    array: np.ndarray | None
    dtype: str | None = None
    is_tensor: bool = True


@dataclass
class Verdict:
    status: str
    direction: str | None = None
    max_abs: float | None = None
    max_rel: float | None = None
    mismatched: int | None = None
    total: int | None = None
    worst_index: tuple | None = None
    message: str = ""
    seconds: float = 0.0
    framework_seconds: float = 0.0  # of ``seconds``, the time inside Paddle's and Torch's own calls
    diff_map: list | None = None            # <=128x128 max-pooled |paddle - torch| (finite pairs)
    diff_map_nonfinite: list | None = None  # same grid: 1 where a NaN/inf position or sign differs
    diff_shape: tuple | None = None         # shape of the compared array
    output: str | None = None               # which output / gradient ("output 0", "grad x")
    statistical: bool = False
    engine_error: bool = False
    api: str = ""
    config: str = ""
    atol: float | None = None
    rtol: float | None = None
    # The two layers (LAYER_FIELDS each).  ``strict``: Paddle vs the plain Torch call on
    # identical inputs at the config's dtypes.  ``adapted``: the comparison after the spec's
    # result-changing adaptations, None when the spec has none (then the layers are one).
    # ``adaptations``: those adaptations ({kind, reason, link}), shown with every verdict.
    # ``strict_separate`` is False where no plain comparison exists (randomness, output
    # invariants, a composed reference): the strict layer is then the adapted comparison.
    strict: dict | None = None
    adapted: dict | None = None
    adaptations: list = field(default_factory=list)
    strict_separate: bool = True
    evidence: str = ""  # why the engine suspects Torch (torch_suspect)
    # The input draw this verdict comes from ({kind, seed}; apitester.inputs.Draw) and every draw
    # run, in plan order ("typical:0", "edge:0", ...): the verdict is the worst over them.
    draw: dict | None = None
    draws: list = field(default_factory=list)
    # The spec's declared known Paddle failure this verdict matches (KnownFailure.to_dict():
    # release range, dtypes, reason, source); the status stays the failure it is.
    known_failure: dict | None = None
    # What the spec compares and why, where it departs from the default (Comparison.to_dict()).
    comparison: dict | None = None
    # The exact rule (atol = rtol = 0, NaN matching NaN, -0.0 equal to 0.0) over every output and gradient
    # compared, on every draw judged: ``exact`` None where no values were compared (an error, unsupported, a
    # statistical check); ``max_ulp`` the largest distance in units in the last place of the output's dtype
    # (integers: the difference itself), None where none applies (shapes or dtypes differ, strings).
    exact: bool | None = None
    max_ulp: int | None = None
    # Readings of a config that is not exact (docs/verdicts.md#stability-and-who-is-closer), None otherwise.
    # ``stable``: the draw the readings come from (``inexact_draw``), run a second time on identical inputs, gave
    # each side the same bits again; ``nondeterministic``: the side whose own result changed (vocab.Side, "" when
    # stable). ``closer``: the float64 oracle's reading of the worst inexact output (vocab.Reading), ``closer_code``
    # its NoOracle code, ``closer_output`` which output, ``paddle_rmse`` / ``torch_rmse`` each side's RMSE to the
    # rounded oracle; ``closer_skipped`` why no reading was taken (the input-size bound, no floating output).
    # ``readings_seconds``: the time the readings took (inside ``seconds``).
    # ``inexact_outputs``: the outputs / gradients ("output 0", "grad x") whose values differ under the exact rule on
    # this verdict's draw; ``inexact_draws`` every draw judged that is not exact, {"draw": "edge:0", "outputs": [..]}
    # (plan order). ``closer`` is the worst reading over the inexact outputs of every inexact draw read
    # (apitester.readings.SEVERITY): ``closer_draw`` names its draw, ``closer_draws`` each draw's own reading
    # ({"draw", "output", "reading", "code"}) and ``closer_note`` the inexact draws left unread (the readings' cap).
    inexact_outputs: list = field(default_factory=list)
    inexact_draws: list = field(default_factory=list)
    closer_draw: str | None = None
    closer_draws: list = field(default_factory=list)
    closer_note: str = ""
    inexact_draw: dict | None = None
    stable: bool | None = None
    nondeterministic: str = ""
    closer: str | None = None
    closer_code: str = ""
    closer_output: str | None = None
    paddle_rmse: float | None = None
    torch_rmse: float | None = None
    closer_skipped: str = ""
    readings_seconds: float = 0.0
    # What a failure that is not about values is, as facts (never read back out of ``message``; FACT_KEYS):
    # "dtypes" [paddle, torch] (dtype_mismatch), "shapes" [[paddle dims], [torch dims]], "outputs" [paddle count,
    # torch count], "none" the side that gave None (shape_mismatch), "raised" the side that raised and "error_type"
    # its exception's type (paddle_error, torch_error), "both_reject" a paddle_error Torch's call shares,
    # "input_shape" beside "shapes" of a gradient: its input's dims (apitester.engine.trial; a gradient has its input's shape).
    facts: dict = field(default_factory=dict)
    # Where ``seconds`` went, per phase (apitester.engine.phases.Phase: draws, convert, paddle, torch, paddle_backward,
    # torch_backward, compare, exact, torch_cache, readings, other), exclusive seconds each; the profile
    # benchmarks/perf_guard.py prints.
    phases: dict = field(default_factory=dict)
    # What the Torch result cache did for this config (apitester.engine.torch_cache.CacheEvent -> count; {} when off): on
    # in a release matrix's workers, where every Paddle build reads Torch's result of the same config and draw.
    torch_cache: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == Status.PASS

    @property
    def rule(self) -> str | None:
        """The strict layer under the exact rule: exact / within_tolerance / fails; None for no verdict."""
        return rule_of(self.strict_status, self.strict_exact)

    @property
    def strict_exact(self) -> bool | None:
        return self.strict.get("exact") if self.strict else self.exact

    @property
    def strict_max_ulp(self) -> int | None:
        return self.strict.get("max_ulp") if self.strict else self.max_ulp

    @property
    def strict_status(self) -> str:
        """The strict layer's status ("fix verified" reads this one only)."""
        return self.strict["status"] if self.strict else self.status

    @property
    def layers_differ(self) -> bool:
        return self.adapted is not None and self.strict is not None and (
            self.adapted["status"] != self.strict["status"] or self.status != self.strict["status"])

    def to_dict(self) -> dict:
        data = asdict(self)
        for key in FLOAT_FIELDS:
            data[key] = encode_float(data[key])
        if self.diff_map is not None:
            data["diff_map"] = [[encode_float(v) for v in row] for row in self.diff_map]
        for key in ("worst_index", "diff_shape"):
            if data[key] is not None:
                data[key] = list(data[key])
        # the top level reads the strict layer, as "fix verified" does
        data["exact"], data["max_ulp"], data["rule"] = self.strict_exact, self.strict_max_ulp, self.rule
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "Verdict":
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        for key in FLOAT_FIELDS:
            if key in values:
                values[key] = decode_float(values[key])
        if values.get("diff_map") is not None:
            values["diff_map"] = [[decode_float(v) for v in row] for row in values["diff_map"]]
        for key in ("worst_index", "diff_shape"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values)

    def human(self) -> str:
        """A numpy-assert_allclose-like report."""
        head = f"[{self.status}{' ' + self.direction if self.direction else ''}] {self.config}"
        lines = [head]
        if self.message:
            lines.append(self.message)
        if self.adapted is not None:
            lines.append(f"  strict  (plain Torch call): {_layer_line(self.strict)}")
            lines.append(f"  adapted (spec's adaptation): {_layer_line(self.adapted)}")
        for a in self.adaptations:
            link = f" <{a['link']}>" if a.get("link") else ""
            lines.append(f"  adaptation {a['kind']}: {a['reason']}{link}")
        if self.adaptations and not self.strict_separate:
            lines.append("  (no plain Torch comparison exists for this API: the strict layer is the adapted check)")
        if self.evidence:
            lines.append(f"  evidence: {self.evidence}")
        if self.draw:
            draw = Draw.parse(self.draw)
            lines.append(f"  draw {draw} of {', '.join(self.draws) or '-'} (replay: --draw {draw})")
        if self.comparison:
            source = f" <{self.comparison['source']}>" if self.comparison.get("source") else ""
            lines.append(f"  comparison: {self.comparison['note']}{source}")
        if self.stable is not None:
            lines.append("  stability: the same bits on a second run" if self.stable else
                         f"  stability: {self.nondeterministic or 'a side'} gave other bits on a second run")
        if self.closer or self.closer_skipped:
            lines.append(f"  closer to float64: {_closer_line(self)}")
        if self.known_failure:
            known = self.known_failure
            scope = ", ".join(filter(None, [f"Paddle {known['releases']}" if known.get("releases") else "",
                                            "/".join(known.get("dtypes") or ())]))
            source = f" <{known['source']}>" if known.get("source") else ""
            lines.append(f"  known Paddle failure{f' ({scope})' if scope else ''}: {known['reason']}{source}")
        return "\n".join(lines)


def _closer_line(verdict: "Verdict") -> str:
    if not verdict.closer:
        return f"not read ({verdict.closer_skipped})"
    text = verdict.closer + (f" ({verdict.closer_code})" if verdict.closer_code else "")
    if verdict.paddle_rmse is not None:
        text += f", RMSE paddle {verdict.paddle_rmse:.3g}, torch {verdict.torch_rmse:.3g} ({verdict.closer_output})"
    if verdict.closer_draw:
        text += f", the worst of {len(verdict.closer_draws)} inexact draw(s) read: {verdict.closer_draw}"
    if verdict.closer_note:
        text += f"; {verdict.closer_note}"
    return text


def _layer_line(layer: dict | None) -> str:
    if not layer:
        return "-"
    text = layer["status"] + (f" {layer['direction']}" if layer.get("direction") else "")
    if layer.get("max_abs") is not None:
        text += f", max abs diff {decode_float(layer['max_abs']):g}"
    if layer.get("max_rel") is not None:
        text += f", max rel diff {decode_float(layer['max_rel']):g}"
    if layer.get("mismatched"):
        text += f", {layer['mismatched']} mismatched"
    return text


def encode_float(value):
    if value is None or isinstance(value, str):
        return value
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def decode_float(value):
    if isinstance(value, str):
        return float(value)
    return value


# ---------------------------------------------------------------- array comparison


@dataclass
class ArrayDiff:
    ok: bool
    mismatched: int
    total: int
    max_abs: float
    max_rel: float
    worst_index: tuple | None
    rel_index: tuple | None
    nonfinite_mismatched: int
    diff: np.ndarray | None = field(repr=False)   # per element |a-b| (0 where not both finite); None: agreeing
                                                  # floats compared without keeping it (compare_arrays)
    nonfinite: np.ndarray | None = field(repr=False)  # per element NaN/inf disagreement (None: none)


def _float_parts(actual: np.ndarray, desired: np.ndarray, atol: float, rtol: float):
    """(|a-b| over finite pairs, |b| over finite pairs, mismatch mask, NaN/inf mask or None)."""
    a = actual.astype(np.float64, copy=False)
    b = desired.astype(np.float64, copy=False)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
    absb = np.abs(b)
    if np.isfinite(diff).all():
        # fast path: every pair finite (inf or NaN on either side makes the difference non-finite)
        with np.errstate(invalid="ignore", over="ignore"):
            bad = diff > atol + rtol * absb
        return diff, absb, bad, None
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    nonfinite = (nan_a != nan_b) | (np.isposinf(a) != np.isposinf(b)) | (np.isneginf(a) != np.isneginf(b))
    finite = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(finite, diff, 0.0)
        bad = finite & (diff > atol + rtol * absb)
        absb = np.where(finite, absb, 0.0)
    return diff, absb, bad | nonfinite, nonfinite


# Elements per step of the agreeing-floats pass: 64 Ki float64 (512 KiB) buffers stay in cache and are
# reused, where whole-array float64 temporaries cost a page fault per 4 KiB (most of the comparison's time).
AGREE_CHUNK = 1 << 16


def _floats_agree(actual: np.ndarray, desired: np.ndarray, atol: float, rtol: float):
    """The figures of a float comparison in which every pair is finite and within tolerance, computed chunk
    by chunk in float64 (the full comparison's arithmetic, element for element): (max_abs, its flat index,
    max_rel, its flat index), first occurrences as numpy's argmax gives them. None as soon as a pair is
    non-finite or out of tolerance: then the full comparison says how many, where and how much."""
    a, b = actual.reshape(-1), desired.reshape(-1)
    n = a.size
    diff, absb, limit = (np.empty(min(n, AGREE_CHUNK)) for _ in range(3))
    worst = (-1.0, 0)
    worst_rel = (-1.0, 0)
    # chunks with the same bits on both sides (most of an agreeing output) differ by 0 everywhere: one integer
    # compare instead of the float arithmetic
    bits = _bit_views(a, b)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for start in range(0, n, AGREE_CHUNK):
            m = min(n - start, AGREE_CHUNK)
            if bits is not None and np.array_equal(bits[0][start:start + m], bits[1][start:start + m]):
                if worst[0] < 0:  # a first chunk of zeros: argmax's first index for both figures
                    worst, worst_rel = (0.0, start), (0.0, start)
                continue
            d, ab, lim = diff[:m], absb[:m], limit[:m]
            np.subtract(a[start:start + m], b[start:start + m], out=d, dtype=np.float64)
            np.absolute(d, out=d)
            peak = int(np.argmax(d))  # NaN is argmax's first pick, so a NaN or inf difference shows here
            if not math.isfinite(d[peak]):
                return None
            np.absolute(b[start:start + m], out=ab, dtype=np.float64)
            np.multiply(ab, rtol, out=lim)
            lim += atol
            if np.greater(d, lim).any():
                return None
            if d[peak] > worst[0]:
                worst = (float(d[peak]), start + peak)
            np.divide(d, ab, out=lim)  # x/0 -> inf, 0/0 -> nan (equal values: relative diff 0)
            np.copyto(lim, 0.0, where=np.isnan(lim))
            peak = int(np.argmax(lim))
            if lim[peak] > worst_rel[0]:
                worst_rel = (float(lim[peak]), start + peak)
    return worst[0], worst[1], worst_rel[0], worst_rel[1]


def _bit_views(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Flat unsigned-integer views of two float arrays of one dtype (None for different dtypes or views that
    are not contiguous): equal bits are equal values, NaN with NaN of the same payload and inf with inf included;
    -0.0 against 0.0 or NaNs of other payloads read as different, and the float arithmetic decides those."""
    if a.dtype != b.dtype or a.dtype.kind != "f" or not (a.flags.c_contiguous and b.flags.c_contiguous):
        return None
    width = np.dtype(f"u{a.dtype.itemsize}")
    return a.view(width), b.view(width)


def _agreement(actual: np.ndarray, desired: np.ndarray, kinds: set, atol: float, rtol: float) -> ArrayDiff | None:
    """The ArrayDiff of agreeing non-empty float or integer arrays without per-element arrays; None otherwise."""
    if kinds == {"f"}:
        agree = _floats_agree(actual, desired, atol, rtol)
        if agree is None:
            return None
        max_abs, flat_worst, max_rel, flat_rel = agree
        return ArrayDiff(True, 0, int(actual.size), max_abs, max_rel,
                         tuple(int(i) for i in np.unravel_index(flat_worst, actual.shape)),
                         tuple(int(i) for i in np.unravel_index(flat_rel, actual.shape)), 0, None, None)
    if kinds <= {"b", "i", "u"} and not np.any(actual != desired):
        # equal integers: every difference 0, argmax's first index for both figures
        first = tuple(0 for _ in actual.shape)
        return ArrayDiff(True, 0, int(actual.size), 0.0, 0.0, first, first, 0, None, None)
    return None


def compare_arrays(actual: np.ndarray, desired: np.ndarray, atol: float, rtol: float,
                   diff_map: bool = False) -> ArrayDiff:
    """Element-wise comparison of equal-shape arrays (actual = Paddle, desired = Torch).

    Agreeing float arrays are checked chunk by chunk and their ArrayDiff carries no per-element arrays
    (``diff`` None) unless ``diff_map``; a disagreement always carries them (the verdict's diff map)."""
    actual = np.asarray(actual)
    desired = np.asarray(desired)
    kinds = {actual.dtype.kind, desired.dtype.kind}
    if actual.size and not diff_map:
        agreed = _agreement(actual, desired, kinds, atol, rtol)
        if agreed is not None:
            return agreed
    if kinds & {"U", "S", "O"}:
        # strings / dtype names / other objects: equal or not
        bad = np.asarray(actual.astype(str) != desired.astype(str))
        diff = bad.astype(np.float64)
        absb = np.ones(diff.shape)
        nonfinite = None
    elif kinds <= {"b", "i", "u"}:
        a = actual.astype(np.int64) if actual.dtype.kind == "b" else actual
        b = desired.astype(np.int64) if desired.dtype.kind == "b" else desired
        with np.errstate(over="ignore"):
            diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        absb = np.abs(b.astype(np.float64))
        bad = a != b
        nonfinite = None
    elif "c" in kinds:
        ac, dc = actual.astype(np.complex128), desired.astype(np.complex128)
        d1, b1, bad1, nf1 = _float_parts(ac.real, dc.real, atol, rtol)
        d2, b2, bad2, nf2 = _float_parts(ac.imag, dc.imag, atol, rtol)
        nonfinite = None if nf1 is None and nf2 is None else (
            (nf1 if nf1 is not None else False) | (nf2 if nf2 is not None else False))
        diff, absb, bad = np.hypot(d1, d2), np.hypot(b1, b2), bad1 | bad2
    else:
        diff, absb, bad, nonfinite = _float_parts(actual, desired, atol, rtol)

    total = int(diff.size)
    mismatched = int(np.count_nonzero(bad))
    nonfinite_mismatched = 0 if nonfinite is None else int(np.count_nonzero(nonfinite))
    max_abs = max_rel = 0.0
    worst = rel_index = None
    if total:
        flat_worst = int(np.argmax(diff))
        max_abs = float(diff.flat[flat_worst])
        worst = tuple(int(i) for i in np.unravel_index(flat_worst, diff.shape))
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.asarray(diff / absb)  # x/0 -> inf, 0/0 -> nan (equal values: relative diff 0)
        rel[np.isnan(rel)] = 0.0
        flat_rel = int(np.argmax(rel))
        max_rel = float(rel.flat[flat_rel])
        rel_index = tuple(int(i) for i in np.unravel_index(flat_rel, diff.shape))
        if nonfinite_mismatched:
            flat_nf = int(np.argmax(nonfinite))
            worst = tuple(int(i) for i in np.unravel_index(flat_nf, diff.shape))
            max_abs = max_rel = math.inf
            rel_index = worst
    return ArrayDiff(mismatched == 0, mismatched, total, max_abs, max_rel, worst, rel_index,
                     nonfinite_mismatched, diff, nonfinite)


# ---------------------------------------------------------------- the exact rule

# Float dtypes by name -> (numpy type holding the values, signed integer of the same width). bfloat16 arrays are
# held as float32 (Out.dtype says so): their bits are the float32's upper half.
_ULP_TYPES = {
    "float16": (np.float16, np.int16), "float32": (np.float32, np.int32), "float64": (np.float64, np.int64),
    "bfloat16": (np.float32, np.int16),
}
_COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}


def _ordered(bits: np.ndarray, smallest: int) -> np.ndarray:
    """IEEE bit patterns (signed integers) as integers in numeric order, one step per representable value: a set
    sign bit's magnitude is negated, so -0.0 and 0.0 are both 0 (smallest - bits never overflows the width)."""
    return np.where(bits < 0, bits.dtype.type(smallest) - bits, bits)


def _float_ulps(actual: np.ndarray, desired: np.ndarray, dtype: str) -> tuple[bool, int]:
    """(numerically equal, largest ULP distance in ``dtype``) of two float arrays held in that dtype's numpy type,
    chunk by chunk as _floats_agree goes: a chunk with the same bits on both sides (most of an exact or nearly exact
    output) costs one integer compare. NaN matches NaN whatever its payload; a NaN against a number counts as
    further apart than any two numbers can be: twice the ordered value of inf, plus one."""
    float_type, int_type = _ULP_TYPES[dtype]
    a = np.ascontiguousarray(actual, dtype=float_type).reshape(-1)
    b = np.ascontiguousarray(desired, dtype=float_type).reshape(-1)
    if dtype == "bfloat16":  # the float32's upper half is the bfloat16
        ia, ib = a.view(np.int32) >> 16, b.view(np.int32) >> 16
        inf_bits, smallest = 0x7F80, int(np.iinfo(np.int16).min)
    else:
        ia, ib = a.view(int_type), b.view(int_type)
        inf_bits, smallest = int(np.array([np.inf], dtype=float_type).view(int_type)[0]), int(np.iinfo(int_type).min)
    worst, nan_apart = 0, False
    with np.errstate(over="ignore"):
        for start in range(0, a.size, AGREE_CHUNK):
            stop = start + AGREE_CHUNK
            ca, cb = ia[start:stop], ib[start:stop]
            if np.array_equal(ca, cb):
                continue
            oa, ob = _ordered(ca, smallest), _ordered(cb, smallest)
            if ia.dtype == np.int64:
                # two ordered float64 values can be up to 2**64 - 2 apart, past int64: the unsigned difference of
                # the larger minus the smaller wraps to the exact distance
                ua, ub = oa.view(np.uint64), ob.view(np.uint64)
                distance = np.where(oa >= ob, ua - ub, ub - ua)
            else:
                distance = np.abs(oa.astype(np.int64) - ob)
            # a NaN's ordered magnitude is above inf's: only a chunk holding one needs the NaN masks
            if max(int(np.abs(oa).max()), int(np.abs(ob).max())) > inf_bits:
                nan_a, nan_b = np.abs(oa) > inf_bits, np.abs(ob) > inf_bits
                nan_apart = nan_apart or bool(np.any(nan_a != nan_b))
                distance[nan_a | nan_b] = 0
            worst = max(worst, int(distance.max()))
    if nan_apart:
        return False, max(worst, 2 * inf_bits + 1)
    return worst == 0, worst


def ulp_distance(actual: np.ndarray, desired: np.ndarray, dtype: str) -> int:
    """The largest distance between paired values in units in the last place of float ``dtype`` (0 when every pair
    is numerically equal, NaN matching NaN)."""
    return _float_ulps(actual, desired, dtype)[1]


def exactness(a: Out, d: Out) -> tuple[bool | None, int | None]:
    """(exact, max_ulp) of one compared pair of equal shape: exact as assert_allclose(atol=0, rtol=0, equal_nan)
    judges; max_ulp in the Paddle side's dtype for floats (each part of a complex), the integer difference for
    integers and bools, None for strings and for pairs whose tensor dtypes differ."""
    if a.is_tensor and d.is_tensor and a.dtype != d.dtype:
        return False, None
    actual, desired = np.asarray(a.array), np.asarray(d.array)
    kinds = {actual.dtype.kind, desired.dtype.kind}
    if kinds & {"U", "S", "O"}:
        return bool(np.array_equal(actual.astype(str), desired.astype(str))), None
    if kinds <= {"b", "i", "u"}:
        if np.array_equal(actual, desired):
            return True, 0
        with np.errstate(over="ignore"):
            approx = np.abs(actual.astype(np.float64) - desired.astype(np.float64)).reshape(-1)
        at = int(np.argmax(approx))
        return False, abs(int(actual.reshape(-1)[at]) - int(desired.reshape(-1)[at]))
    dtype = (a.dtype if a.is_tensor else d.dtype if d.is_tensor else None) or actual.dtype.name
    if "c" in kinds:
        part = _COMPLEX_PARTS.get(dtype, "float64")
        ac, dc = actual.astype(np.complex128), desired.astype(np.complex128)
        real, imag = _float_ulps(ac.real, dc.real, part), _float_ulps(ac.imag, dc.imag, part)
        return real[0] and imag[0], max(real[1], imag[1])
    dtype = dtype if dtype in _ULP_TYPES else "float64"
    if actual.dtype == desired.dtype == np.dtype(_ULP_TYPES[dtype][0]):
        return _float_ulps(actual, desired, dtype)  # the common case: both held in the dtype itself
    # a Python scalar against a tensor, or a float held wider than its dtype: judged by value, not rounded to the
    # dtype first; unequal values closer than one ULP of the dtype still differ by one
    if np.array_equal(actual, desired, equal_nan=True):
        return True, 0
    return False, max(ulp_distance(actual, desired, dtype), 1)


def merge_exactness(first: tuple[bool | None, int | None], second: tuple[bool | None, int | None]):
    """Two readings of the exact rule as one (forward and backward, or two draws): exact only when both are;
    None (no value comparison) only when both are; the larger ULP distance, unknown if either is."""
    (e1, u1), (e2, u2) = first, second
    if e1 is None:
        return e2, u2
    if e2 is None:
        return e1, u1
    return e1 and e2, (None if u1 is None or u2 is None else max(u1, u2))


def _as_2d(array: np.ndarray) -> np.ndarray:
    if array.ndim == 0:
        return array.reshape(1, 1)
    if array.ndim == 1:
        return array.reshape(1, -1)
    return array.reshape(-1, array.shape[-1])


def max_pool(array: np.ndarray, cells: int = DIFF_MAP_CELLS) -> np.ndarray:
    """Reduce to at most cells x cells by max over blocks (array viewed as 2-D) of non-negative values (a diff, a
    mask; the last block of a row or column may be shorter). Columns first, then rows, each a ``reduceat`` over
    contiguous memory: half the time of a zero-padded copy reduced over two strided axes on a 17 M-element
    embedding weight gradient (80 ms against 170, 2026-12-05)."""
    grid = _as_2d(array)
    rows, cols = grid.shape
    if rows == 0 or cols == 0:
        return np.zeros((0, 0), dtype=grid.dtype)
    br, bc = math.ceil(rows / cells), math.ceil(cols / cells)
    if br == 1 and bc == 1:
        return grid.copy()
    if bc > 1:
        grid = np.maximum.reduceat(grid, np.arange(0, cols, bc), axis=1)
    if br > 1:
        grid = np.maximum.reduceat(grid, np.arange(0, rows, br), axis=0)
    return grid


def _fmt_index(index: tuple | None) -> str:
    if index is None:
        return ""
    return f" at index {index}" if index else " at index ()"


def describe(diff: ArrayDiff, atol: float, rtol: float, label: str, actual: np.ndarray, desired: np.ndarray) -> str:
    pct = 100.0 * diff.mismatched / diff.total if diff.total else 0.0
    lines = [
        f"Not equal to tolerance rtol={rtol:g}, atol={atol:g} ({label})",
        f"Mismatched elements: {diff.mismatched} / {diff.total} ({pct:.3g}%)",
    ]
    if diff.nonfinite_mismatched:
        lines.append(f"NaN/inf positions or signs differ at {diff.nonfinite_mismatched} elements")
    lines.append(f"Greatest absolute difference: {diff.max_abs:g}{_fmt_index(diff.worst_index)}")
    lines.append(f"Greatest relative difference: {diff.max_rel:g}{_fmt_index(diff.rel_index)}")
    if diff.worst_index is not None and actual.size:
        lines.append(f" ACTUAL (paddle): {actual[diff.worst_index]!r}")
        lines.append(f" DESIRED (torch): {desired[diff.worst_index]!r}")
    return "\n".join(lines)


def compare_outputs(
    actual: Sequence[Out],
    desired: Sequence[Out],
    atol: float,
    rtol: float,
    direction: str = "forward",
    labels: Sequence[str] | None = None,
    clock: PhaseClock | None = None,
) -> Verdict:
    """Compare Paddle's outputs with Torch's; the first disagreement decides the status. ``clock``: the trial's,
    charged with the exact rule's seconds (none: not timed)."""
    clock = clock if clock is not None else PhaseClock()
    if len(actual) != len(desired):
        return Verdict(Status.SHAPE_MISMATCH, direction=direction, facts={"outputs": [len(actual), len(desired)]},
                       message=f"{direction}: paddle gave {len(actual)} outputs, torch gave {len(desired)}")
    mismatched = total = 0
    max_abs = max_rel = 0.0
    worst = None
    exact: tuple[bool | None, int | None] = (None, None)
    inexact: list[str] = []  # the outputs whose values differ under the exact rule (the readings read these)
    for i, (a, d) in enumerate(zip(actual, desired)):
        label = labels[i] if labels else f"output {i}"
        if a.array is None and d.array is None:
            continue
        if a.array is None or d.array is None:
            which = Side.PADDLE if a.array is None else Side.TORCH
            return Verdict(Status.SHAPE_MISMATCH, direction=direction, output=label, exact=False,
                           facts={"none": str(which)}, inexact_outputs=[*inexact, label],
                           message=f"{direction} {label}: {which} gave None, the other side a value")
        if a.array.shape != d.array.shape:
            return Verdict(Status.SHAPE_MISMATCH, direction=direction, output=label, exact=False,
                           inexact_outputs=[*inexact, label],
                           facts={"shapes": [list(a.array.shape), list(d.array.shape)]},
                           message=f"{direction} {label}: shape {list(a.array.shape)} (paddle) "
                                   f"vs {list(d.array.shape)} (torch)")
        with clock.span(Phase.EXACT):
            pair = exactness(a, d)
        exact, inexact = merge_exactness(exact, pair), inexact + [label] * (pair[0] is False)
        diff = compare_arrays(a.array, d.array, atol, rtol)
        if a.is_tensor and d.is_tensor and a.dtype != d.dtype:
            if diff.diff is None:  # the dtype verdict shows the value diff map too
                diff = compare_arrays(a.array, d.array, atol, rtol, diff_map=True)
            text = f"{direction} {label}: dtype {a.dtype} (paddle) vs {d.dtype} (torch)"
            text += "; values " + ("agree" if diff.ok else f"also differ at {diff.mismatched}/{diff.total}")
            return _with_diff(Verdict(Status.DTYPE_MISMATCH, direction=direction, output=label, message=text,
                                      exact=False, facts={"dtypes": [a.dtype, d.dtype]},
                                      inexact_outputs=inexact), diff)
        if not diff.ok:
            verdict = Verdict(Status.ACCURACY_ERROR, direction=direction, output=label,
                              message=describe(diff, atol, rtol, f"{direction}, {label}", a.array, d.array),
                              exact=exact[0], max_ulp=exact[1], inexact_outputs=inexact)
            return _with_diff(verdict, diff, a.array.shape)
        mismatched += diff.mismatched
        total += diff.total
        if diff.max_abs >= max_abs:
            max_abs, worst = diff.max_abs, diff.worst_index
        max_rel = max(max_rel, diff.max_rel)
    return Verdict(Status.PASS, direction=None, max_abs=max_abs, max_rel=max_rel, mismatched=0,
                   total=total, worst_index=worst, exact=exact[0], max_ulp=exact[1], inexact_outputs=inexact)


def _with_diff(verdict: Verdict, diff: ArrayDiff, shape=None) -> Verdict:
    verdict.max_abs = diff.max_abs
    verdict.max_rel = diff.max_rel
    verdict.mismatched = diff.mismatched
    verdict.total = diff.total
    verdict.worst_index = diff.worst_index
    if diff.total:
        verdict.diff_map = max_pool(diff.diff).tolist()
        mask = diff.nonfinite if diff.nonfinite is not None else np.zeros(diff.diff.shape, dtype=bool)
        verdict.diff_map_nonfinite = max_pool(mask.astype(np.uint8)).tolist()
        verdict.diff_shape = tuple(int(s) for s in diff.diff.shape)
    return verdict
