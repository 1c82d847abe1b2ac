"""Deterministic numpy inputs from a config's tensor specs and the API's input domains.

The same numpy arrays feed Paddle and Torch.  numpy has no bfloat16: bfloat16 inputs are
drawn as float32, rounded to values bfloat16 represents exactly (round to nearest even),
and converted on each side, so both frameworks see identical numbers.

A Domain is a callable ``domain(ctx) -> np.ndarray``; ``ctx`` carries ``shape``,
``dtype`` (a name such as "float32" or "bfloat16"), ``rng``, ``args`` (the bound parsed
arguments; tensors as TensorSpec) and ``arrays`` (already materialised params by name).

Draws: a verdict is judged over a plan of deterministic draws (``draw_plan``): ``typical``
(the domains as written, seed 0 first: exactly the inputs this module always drew), ``edge``
(the typical draw with the domain's edge values placed at deterministic positions) and, for
small inputs, extra ``typical`` seeds.  A domain says what its edges are (``domain.edges``) or
why it has none (``domain.precondition``: values outside it break the math the reference
assumes, e.g. SPD for cholesky, valid indices); a domain that says neither gets no edges.
"""

from __future__ import annotations

import math
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from .config import Call, Constructor, Name, TensorSpec, complex_value, walk

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
COMPLEX_DTYPES = ("complex64", "complex128")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8")

ITEMSIZE = {  # bytes per element of each config dtype name (the only item-size table)
    "bool": 1, "int8": 1, "uint8": 1, "int16": 2, "float16": 2, "bfloat16": 2, "uint16": 2,
    "int32": 4, "float32": 4, "int64": 8, "float64": 8, "complex64": 8, "complex128": 16,
}


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype arrays of this dtype name are held in (bfloat16 -> float32)."""
    if name in ("bfloat16", "uint16"):
        return np.dtype(np.float32)
    return np.dtype(name)


def round_to_bfloat16(array: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), still as float32."""
    shape = np.shape(array)
    a = np.array(array, dtype=np.float32, order="C").reshape(-1)
    bits = a.view(np.uint32)
    nan = np.isnan(a)
    # in uint32: no finite value or inf carries past 32 bits (0xFF7FFFFF + 0x8000 fits); a NaN may wrap,
    # and NaN is put back below (the rounding could also carry a NaN payload into inf)
    rounded = (bits >> 16) & 1
    rounded += 0x7FFF
    rounded += bits
    rounded &= 0xFFFF0000
    out = rounded.view(np.float32)
    out[nan] = np.float32(np.nan)
    return out.reshape(shape)


# Elements per step when drawing big float arrays: the float64 draws go through one cache-sized buffer
# instead of a whole-array float64 temporary (the values are the same: numpy's uniform is lo + (hi-lo)·u).
DRAW_CHUNK = 1 << 16

# How a draw's seed becomes values (``Draw.format``; a draw's text carries it as "edge:0@2", and text without "@"
# is format 1, so every draw stored or pasted before format 2 replays the values it had):
#   1: floats drawn as float64 and cast to the tensor's dtype;
#   2: as 1, except float32, float16 and bfloat16 tensors of more than DRAW_CHUNK elements (and output gradients),
#      drawn from the generator's raw 64-bit words, two float32 values per word (``_uniform_from_words``): the
#      float64 draw was most of what the engine spent on a big float32 tensor (a 34.5 M-element embedding weight,
#      a 30 M-element broadcast's output gradient) -- 2026-12-05, docs/measurements.md "The release matrix".
DRAW_FORMATS = (1, 2)
DRAW_FORMAT = 2  # what new draws use


def uniform_array(rng: np.random.Generator, lo: float, hi: float, shape, dtype, *, fmt: int) -> np.ndarray:
    """Uniform values in [lo, hi) of ``dtype`` as draw format ``fmt`` draws them (DRAW_FORMATS): format 1 is
    ``rng.uniform(lo, hi, shape).astype(dtype)`` value for value, without the float64 copy of a big array."""
    dtype = np.dtype(dtype)
    count = math.prod(shape) if isinstance(shape, tuple) else int(shape)
    if count <= DRAW_CHUNK or dtype == np.float64:
        return rng.uniform(lo, hi, shape).astype(dtype)
    if fmt >= 2 and dtype in (np.float32, np.float16):
        return _uniform_from_words(rng, lo, hi, shape, dtype)
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    buffer = np.empty(DRAW_CHUNK)
    width = float(hi) - float(lo)
    for start in range(0, count, DRAW_CHUNK):
        step = buffer[:min(count - start, DRAW_CHUNK)]
        rng.random(out=step)
        step *= width
        step += lo
        flat[start:start + step.size] = step
    return out


_ONE_BITS = np.uint32(0x3F800000)  # 1.0f: with 23 random mantissa bits, a float32 in [1, 2)


def _uniform_from_words(rng: np.random.Generator, lo: float, hi: float, shape, dtype: np.dtype) -> np.ndarray:
    """Draw format 2's uniform float32 (or float16: the float32 value rounded) values in [lo, hi): each of the
    generator's raw 64-bit words gives two 32-bit halves (low half first), whose top 23 bits are the mantissa of a
    float32 ``f`` in [1, 2); the value is ``lo + (hi - lo) * (f - 1)`` in float32 -- a grid of 2**23 steps over the
    range, where format 1 had float64's 2**53 before rounding to the dtype. Chunk by chunk (DRAW_CHUNK), the same
    values whatever the chunking, since the words come in one stream."""
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    count = flat.size
    width, low = np.float32(float(hi) - float(lo)), np.float32(lo)
    direct = dtype == np.float32
    buffer = None if direct else np.empty(DRAW_CHUNK, np.float32)
    to_float16 = None if direct else float16_rounder()
    draw_words = rng.bit_generator.random_raw
    for start in range(0, count, DRAW_CHUNK):
        m = min(count - start, DRAW_CHUNK)
        step = flat[start:start + m] if direct else buffer[:m]
        bits = step.view(np.uint32)
        bits[:] = draw_words((m + 1) // 2).view(np.uint32)[:m]
        bits >>= 9
        bits |= _ONE_BITS
        step -= np.float32(1.0)
        step *= width
        step += low
        if not direct:
            to_float16(step, flat[start:start + m])
    return out


def _numpy_float16(source: np.ndarray, target: np.ndarray) -> None:
    target[...] = source


def float16_rounder():
    """A function ``(float32 source, float16 target)`` that writes the source's values rounded to float16 (IEEE
    round to nearest, ties to even) into the target. Torch's cast when torch is importable (every engine
    environment has it): it is vectorised (F16C), where numpy's is element by element -- 20 of the 35 ms a
    float16 sum([100, 102144]) spent drawing its input (2026-12-05). Both are the same IEEE rounding, so the
    values are the same bits either way (tests/engine/test_draws.py checks them over a stride of every float32
    bit pattern; ``benchmarks/draws.py float16`` over all of them); only the time differs."""
    try:
        import torch
    except ImportError:  # a process without torch rounds with numpy: the same bits, only slower
        return _numpy_float16

    def round_with_torch(source: np.ndarray, target: np.ndarray) -> None:
        torch.from_numpy(target).copy_(torch.from_numpy(source))
    return round_with_torch


@dataclass
class InputTensor:
    """A materialised tensor input: the numpy values plus the declared dtype name."""

    array: np.ndarray
    dtype: str

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.array.shape)


@dataclass
class DomainContext:
    shape: tuple[int, ...]
    dtype: str
    rng: np.random.Generator
    args: Mapping[str, Any]
    arrays: Mapping[str, Any]
    name: str = ""
    index: int | None = None  # position inside a list/tuple argument
    format: int = DRAW_FORMAT  # the draw format (DRAW_FORMATS) the values are drawn in


# ---------------------------------------------------------------- defaults


def _uniform(ctx: DomainContext, lo: float, hi: float) -> np.ndarray:
    dt = ctx.dtype
    if dt in COMPLEX_DTYPES:
        real = ctx.rng.uniform(lo, hi, ctx.shape)
        imag = ctx.rng.uniform(lo, hi, ctx.shape)
        return (real + 1j * imag).astype(dt)
    return uniform_array(ctx.rng, lo, hi, ctx.shape, numpy_dtype(dt), fmt=ctx.format)


def default_values(ctx: DomainContext) -> np.ndarray:
    """floats/complex uniform in [-1, 1), ints in [-10, 10) (unsigned [0, 10)), bool random."""
    dt = ctx.dtype
    if dt == "bool":
        return ctx.rng.random(ctx.shape) < 0.5
    if dt in INT_DTYPES:
        lo = 0 if dt.startswith("u") else -10
        return ctx.rng.integers(lo, 10, ctx.shape).astype(dt)
    return _uniform(ctx, -1.0, 1.0)



# ---------------------------------------------------------------- draws and edge values

TYPICAL = "typical"  # the domains as written
EDGE = "edge"        # the typical draw with the domains' edge values at deterministic positions
GIVEN = "given"      # arrays a user gave (``--inputs FILE.npz``): its seed numbers the given set in this process
DRAW_KINDS = (TYPICAL, EDGE, GIVEN)

# Inputs of at most this many elements (all tensors of the config) also get EXTRA_SEEDS more
# typical seeds; larger ones get the typical and the edge draw only (the time budget: a big
# config's seconds are its tensors', and another seed finds little an edge draw does not).
SMALL_INPUT_ELEMENTS = 4096
EXTRA_SEEDS = 2
# Inputs above this many elements get the typical draw only: the few largest configs are most of
# a run's seconds (on a 169-config CPU-task sample, the 15 configs above 4M elements take half of
# them), so an edge draw there would double the run; the edge values' bugs (a NaN region, an
# overflow, a kink) do not need millions of elements to show.  docs/measurements.md "Input draws" has the figures.
EDGE_INPUT_ELEMENTS = 1 << 22
# Up to this many elements a tensor's edge values go to the first positions of a permutation of all of
# them; above it, to positions drawn without replacement (the permutation took ~0.1 s per 4M elements).
EDGE_PERMUTATION_ELEMENTS = 1 << 16


@dataclass(frozen=True)
class Draw:
    """One deterministic draw of a config's inputs: its kind, seed and format ("edge:0@2" as text; DRAW_FORMATS).

    A draw made now has the current format; text or a dict without one is format 1, the format of every draw
    stored or written into a repro before formats existed, so replaying it gives the values it had.

    ``cut`` (a shrunk config's draw, ``apitester.diagnosis.shrink``): the values are the draw of the same config at the
    original sizes, each tensor then cut to its own shape at the given starts -- per tensor, in the order
    ``materialise`` walks the bound arguments, per dim (original size, start).  As text it follows a "/":
    ``"edge:0@2/64+5,128+28;128+28"`` (tensors separated by ";", dims by ",").  A draw without it is drawn at
    the config's own sizes, as every draw written before cuts existed."""

    kind: str
    seed: int = 0
    format: int = DRAW_FORMAT
    cut: tuple | None = None

    def __post_init__(self):
        if self.kind not in DRAW_KINDS:
            raise ValueError(f"unknown draw kind {self.kind!r} (one of {', '.join(DRAW_KINDS)})")
        if self.format not in DRAW_FORMATS:
            raise ValueError(f"unknown draw format {self.format!r} (one of {', '.join(map(str, DRAW_FORMATS))})")
        if self.cut is not None:
            object.__setattr__(self, "cut", tuple(tuple((int(size), int(start)) for size, start in dims)
                                                  for dims in self.cut))

    def __str__(self) -> str:
        text = f"{self.kind}:{self.seed}" + ("" if self.format == 1 else f"@{self.format}")
        if self.cut is None:
            return text
        return text + "/" + ";".join(",".join(f"{size}+{start}" for size, start in dims) for dims in self.cut)

    def to_dict(self) -> dict:
        data = {"kind": self.kind, "seed": self.seed, "format": self.format}
        if self.cut is not None:
            data["cut"] = [[list(dim) for dim in dims] for dims in self.cut]
        return data

    def uncut(self) -> "Draw":
        return Draw(self.kind, self.seed, self.format)

    @classmethod
    def parse(cls, text: "str | Draw | Mapping") -> "Draw":
        """``"edge:0@2"`` / ``"typical:2"`` (format 1) / ``{"kind": "edge", "seed": 0, "format": 2}`` /
        ``"edge:0@2/8+3;1+0"`` (a cut) -> Draw (ValueError if malformed)."""
        if isinstance(text, Draw):
            return text
        try:
            if isinstance(text, Mapping):
                cut = text.get("cut")
                return cls(str(text.get("kind")), int(text.get("seed", 0)), int(text.get("format", 1)),
                           None if cut is None else tuple(tuple(tuple(dim) for dim in dims) for dims in cut))
            head, slash, cut_text = str(text).strip().partition("/")
            body, at, fmt = head.partition("@")
            kind, sep, seed = body.partition(":")
            cut = _parse_cut(cut_text) if slash else None
            return cls(kind, int(seed) if sep else 0, int(fmt) if at else 1, cut)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad draw {text!r}: expected KIND:SEED[@FORMAT][/CUT] with KIND one of "
                             f"{', '.join(DRAW_KINDS)}, SEED an integer and FORMAT one of "
                             f"{', '.join(map(str, DRAW_FORMATS))} ({exc})") from None


def _parse_cut(text: str) -> tuple:
    """"64+5,128+28;128+28" -> (((64, 5), (128, 28)), ((128, 28),)) (an empty tensor part: a 0-d tensor)."""
    tensors = []
    for part in text.split(";"):
        dims = []
        for dim in filter(None, part.split(",")):
            size, plus, start = dim.partition("+")
            if not plus:
                raise ValueError(f"cut dim {dim!r} is not SIZE+START")
            dims.append((int(size), int(start)))
        tensors.append(tuple(dims))
    return tuple(tensors)


def draw_plan(elements: int, seed: int = 0) -> list[Draw]:
    """The draws a verdict is judged over, in order: typical (the given seed: the inputs a
    single-draw verdict always had), edge (up to EDGE_INPUT_ELEMENTS input elements), and for
    small inputs EXTRA_SEEDS more seeds."""
    plan = [Draw(TYPICAL, seed)]
    if elements <= EDGE_INPUT_ELEMENTS:
        plan.append(Draw(EDGE, seed))
    if elements <= SMALL_INPUT_ELEMENTS:
        plan += [Draw(TYPICAL, seed + k) for k in range(1, EXTRA_SEEDS + 1)]
    return plan


@dataclass(frozen=True)
class EdgeOptions:
    """What a spec admits in its edge draws (``Spec.nan_inf``, ``Spec.overflow``, ``Spec.edges``)."""

    nan_inf: bool = False   # NaN and +-inf inputs: only where the API defines its result on them
    overflow: bool = False  # an integer dtype's extremes: where overflow is the question
    magnitudes: bool = True  # large and tiny float magnitudes (False: see Spec.magnitudes)
    extra: Mapping[str, tuple] = field(default_factory=dict)  # per param, placed before the domain's own
    # per param, ``values(dtype, args) -> list`` of values exactly on a rounding tie (Spec.ties), placed
    # TIE_PLACES times over before any other edge, whatever the domain says (a precondition included)
    ties: Mapping[str, Callable] = field(default_factory=dict)


def _float_finfo(dtype: str) -> np.finfo:
    return np.finfo(np.float32 if dtype in ("bfloat16", "complex64") else
                    np.float64 if dtype == "complex128" else numpy_dtype(dtype))


def big_value(dtype: str) -> float:
    """A large magnitude the dtype holds whose square it still holds: the power of two nearest
    sqrt(max) from below.  The dtype's max itself is not a default edge: sums of values near it
    overflow to inf or not depending on accumulation order, which neither framework defines
    (``wide()`` draws the whole range where range limits are the question)."""
    return float(2.0 ** math.floor(math.log2(float(_float_finfo(dtype).max)) / 2))


def float_edges(dtype: str, options: EdgeOptions) -> list:
    """0, +-1, NaN/+-inf (if the API defines them), +-big, +-tiny (the smallest normal; subnormals
    are left out: flush-to-zero is a CPU setting, not the API's behaviour)."""
    big, tiny = big_value(dtype), float(_float_finfo(dtype).tiny)
    special = [math.nan, math.inf, -math.inf] if options.nan_inf else []
    sizes = [big, -big, tiny, -tiny] if options.magnitudes else []
    return [0.0, 1.0, -1.0, *special, *sizes]


def int_extremes(dtype: str) -> list:
    """The dtype's extremes and the magnitude whose square overflows it (products of two overflow)."""
    info = np.iinfo(dtype)
    root = math.isqrt(int(info.max)) + 1
    if dtype.startswith("u"):
        return [int(info.max), root]
    return [int(info.max), int(info.min), root, -root]


def int_edges(dtype: str, options: EdgeOptions, lo: int, hi: int) -> list:
    """The extremes first when overflow is the question, then 0, +-1 and the range's bounds [lo, hi)."""
    values = int_extremes(dtype) if options.overflow else []
    return [*values, 0, 1, -1, lo, hi - 1]


def default_edges(dtype: str, options: EdgeOptions) -> list:
    if dtype == "bool":
        return []  # both values are typical already
    if dtype in INT_DTYPES:
        return int_edges(dtype, options, 0 if dtype.startswith("u") else -10, 10)
    return float_edges(dtype, options)


default_values.edges = default_edges


def precondition(reason: str) -> Callable:
    """Mark a domain as a precondition of the math: its edge draw keeps its typical values
    (``reason`` says why values outside it break what the reference computes)."""

    def mark(domain):
        domain.precondition = reason
        return domain

    return mark


def keeps(check: Callable) -> Callable:
    """Give a domain its rule as a test of values: ``check(values, ctx) -> str | None`` says why an array breaks
    the rule the domain draws by (None: it keeps it).  ``ctx`` is the DomainContext the domain is drawn with
    (shape, dtype, the other arguments and their arrays; no generator).  Shrinking tries no candidate whose
    inputs break it (``domain_violations``): a candidate drawn at a smaller size may not be able to keep it --
    ``indices(unique=True)`` with more indices per row than the target has positions draws duplicates."""

    def mark(domain):
        domain.violation = check
        return domain

    return mark


def domain_violations(bound: Mapping[str, Any], domains: Mapping[str, Any] | None,
                      materialised: Mapping[str, Any]) -> dict[str, str]:
    """{param: why} for each param whose materialised values break its domain's rule (``keeps``)."""
    arrays = {k: _strip(v) for k, v in materialised.items()}
    found: dict[str, str] = {}
    for name, domain in (domains or {}).items():
        check = getattr(domain, "violation", None)
        if check is None or name not in materialised:
            continue

        def leaf(item, _path, name=name, check=check):
            if isinstance(item, InputTensor) and name not in found:
                ctx = DomainContext(item.shape, item.dtype, None, bound, arrays, name)
                why = check(item.array, ctx)
                if why:
                    found[name] = why
            return item

        walk(materialised[name], leaf, into=(list, tuple, slice, dict))
    return found


def with_edges(edges: Callable) -> Callable:
    """Give a domain its edge values: ``edges(dtype, options) -> list``."""

    def mark(domain):
        domain.edges = edges
        return domain

    return mark


def _representable(values, dtype: str) -> list:
    """The edge values the dtype can hold (ints: finite integers within its range)."""
    if dtype == "bool":
        return []
    if dtype not in INT_DTYPES:
        return list(values)
    info = np.iinfo(dtype)
    out = []
    for v in values:
        if isinstance(v, (int, np.integer)) or (isinstance(v, float) and math.isfinite(v) and v == int(v)):
            if info.min <= int(v) <= info.max:
                out.append(int(v))
    return out


def edge_values(domain, dtype: str, options: EdgeOptions, param: str) -> list:
    """The values an edge draw places in a tensor of this domain (spec-declared ones first)."""
    own = getattr(domain or default_values, "edges", None)
    if own is None:  # a precondition, or a domain that declares no edges
        return []
    values = [*options.extra.get(param, ()), *own(dtype, options)]
    seen, out = set(), []
    for v in _representable(values, dtype):
        key = repr(v)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


# How many elements of a tensor an edge draw puts on a tie (Spec.ties), cycling through the tie values: PaddleAPITest's
# engine sees nearest-mode grid_sample differ at 4-12 tied elements of a config.
TIE_PLACES = 16


def tie_values(options: EdgeOptions, param: str, dtype: str, args) -> list:
    """The tie values (``EdgeOptions.ties``) an edge draw places in a tensor of ``param``, repeated to TIE_PLACES."""
    declared = options.ties.get(param)
    if declared is None or dtype not in FLOAT_DTYPES:
        return []
    values = list(declared(dtype, args))
    return [values[i % len(values)] for i in range(TIE_PLACES)] if values else []


def place_edges(values: np.ndarray, edges: list, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """``values`` with each edge value at one deterministic position (the first len(values) edges
    when there are more edges than elements); returns the array and how many were placed."""
    n = int(values.size)
    count = min(n, len(edges))
    if not count:
        return values, 0
    out = np.array(values, copy=True, order="C")  # C order: flat below is a view of it
    # a big tensor's positions without a permutation of all n (O(count), where permutation is O(n));
    # small tensors keep the permutation's positions, those their stored draws were judged on
    positions = rng.permutation(n)[:count] if n <= EDGE_PERMUTATION_ELEMENTS else rng.choice(n, count, replace=False)
    flat = out.reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        flat[positions] = np.asarray(edges[:count]).astype(out.dtype)
    return out, count

# ---------------------------------------------------------------- domain helpers


def positive(lo: float = 0.1, hi: float = 2.0) -> Callable:
    """Strictly positive values in [lo, hi) (ints: [1, 10))."""

    def domain(ctx):
        if ctx.dtype in INT_DTYPES:
            return ctx.rng.integers(1, 10, ctx.shape).astype(ctx.dtype)
        return _uniform(ctx, lo, hi)

    def edges(dtype, options):
        # The bounds and 0 just below them (log -> -inf, rsqrt -> inf: defined on both sides),
        # a large and a tiny positive value.  No negatives: positive() also guards variances and
        # weights, which Torch rejects (gaussian_nll_loss raises) or defines only >= 0.
        if dtype in INT_DTYPES:
            return [*(int_extremes(dtype)[:1] if options.overflow else []), 1, 0, 9]
        sizes = [big_value(dtype), float(_float_finfo(dtype).tiny)] if options.magnitudes else []
        return [lo, 0.0, hi, *sizes]

    return with_edges(edges)(domain)


def unit_open(margin: float = 0.01) -> Callable:
    """Values in the open interval (0, 1), kept ``margin`` away from both ends."""

    def domain(ctx):
        return _uniform(ctx, margin, 1.0 - margin)

    # The interval's ends, nothing outside: unit_open() draws probabilities, and Torch rejects
    # probabilities outside [0, 1] (binary_cross_entropy raises) where Paddle's kernel may not.
    return with_edges(lambda dtype, options: [0.0, 1.0, margin, 1.0 - margin])(domain)


def range_(lo: float, hi: float) -> Callable:
    """Uniform in [lo, hi) for floats, integers in [lo, hi) for ints."""

    def domain(ctx):
        if ctx.dtype in INT_DTYPES:
            return ctx.rng.integers(math.ceil(lo), math.ceil(hi), ctx.shape).astype(ctx.dtype)
        return _uniform(ctx, lo, hi)

    def edges(dtype, options):
        # The bounds only: a range is the spec's choice of a well-conditioned region (logits,
        # a scale factor, a normalizer), and outside it the comparison says nothing new.
        if dtype in INT_DTYPES:
            return [math.ceil(lo), math.ceil(hi) - 1]
        return [lo, hi]

    return with_edges(edges)(domain)


def int_range(lo: int, hi: int) -> Callable:
    """Integer values in [lo, hi) in whatever dtype the tensor has."""

    def domain(ctx):
        values = ctx.rng.integers(lo, hi, ctx.shape)
        return values.astype(numpy_dtype(ctx.dtype))

    def edges(dtype, options):
        # the range's bounds; the dtype's extremes too where the spec says overflow is the question
        if dtype in INT_DTYPES:
            return int_edges(dtype, options, lo, hi)
        return [float(lo), float(hi - 1)]

    return with_edges(edges)(domain)


def nonzero(lo: float = 0.5, hi: float = 1.5) -> Callable:
    """Values with |v| in [lo, hi) and a random sign (ints: +-[1, 10))."""

    def domain(ctx):
        sign = np.where(ctx.rng.random(ctx.shape) < 0.5, -1, 1)
        if ctx.dtype in INT_DTYPES:
            mag = ctx.rng.integers(1, 10, ctx.shape)
            if ctx.dtype.startswith("u"):
                sign = 1
            return (sign * mag).astype(ctx.dtype)
        return (sign * ctx.rng.uniform(lo, hi, ctx.shape)).astype(numpy_dtype(ctx.dtype))

    def edges(dtype, options):
        # the magnitudes' bounds with both signs; 0 never: nonzero() guards a divisor
        if dtype in INT_DTYPES:
            return [1, -1, 9, -9]
        return [lo, -lo, hi, -hi, *([big_value(dtype), -big_value(dtype)] if options.magnitudes else [])]

    return with_edges(edges)(domain)


# The bit pattern of each float format's +inf: patterns 0 .. inf-1 are its finite non-negative
# values in increasing order (bfloat16 as the upper half of a float32).
_FLOAT_BITS = {
    "float16": (np.uint16, np.float16, 0x7C00, 0),
    "bfloat16": (np.uint32, np.float32, 0x7F80, 16),
    "float32": (np.uint32, np.float32, 0x7F800000, 0),
    "float64": (np.uint64, np.float64, 0x7FF0000000000000, 0),
}


def distinct_finite_count(dtype: str) -> int | None:
    """How many distinct finite values the dtype holds (None: more than any tensor has elements)."""
    if dtype == "bool":
        return 2
    if dtype in INT_DTYPES:
        return 1 << (8 * ITEMSIZE[dtype])
    if dtype in _FLOAT_BITS:
        return 2 * _FLOAT_BITS[dtype][2] - 1  # every positive value, its negative, and one zero
    return None


def _nearest_zero(dtype: str, n: int) -> np.ndarray:
    """The n finite values of a float format nearest zero, sorted (zero once, as many negatives
    as positives, one more negative when n is even), as the numpy dtype the format is held in."""
    bits, view, _, shift = _FLOAT_BITS[dtype]
    lo = -(n // 2)
    positive = (np.arange(lo + n, dtype=bits) << bits(shift)).view(view)
    negative = -(np.arange(1, -lo + 1, dtype=bits) << bits(shift)).view(view)[::-1]
    return np.concatenate([negative, positive]).astype(numpy_dtype(dtype))


def _stored(values: np.ndarray, dtype: str) -> np.ndarray:
    """The values as the dtype stores them (bfloat16 rounded, float16 cast)."""
    if dtype == "bfloat16":
        return round_to_bfloat16(values)
    return values.astype(numpy_dtype(dtype))


def unique(lo: float = -1.0, hi: float = 1.0) -> Callable:
    """Pairwise distinct values in the tensor's own dtype.

    Floats: a shuffled even grid over [lo, hi) (float16/bfloat16 with more elements than that
    range holds distinctly: integers around zero).  When the grid still repeats a value in the
    dtype's precision (a large float16 tensor: float16 integers above 2048 are spaced 2, 4, ...),
    the values are the dtype's own representable numbers nearest zero instead (a float16
    [1, 32000] takes 32000 of its 63487 finite values).  Ints and bool: a permutation of
    consecutive values.  A dtype with fewer distinct values than the tensor has elements raises
    ValueError (the config cannot have distinct inputs; the verdict says so).
    """

    def domain(ctx):
        n = math.prod(ctx.shape)
        available = distinct_finite_count(ctx.dtype)
        if available is not None and n > available:
            raise ValueError(f"unique(): {ctx.dtype} has only {available} distinct finite values, "
                             f"the tensor needs {n}")
        if ctx.dtype in INT_DTYPES or ctx.dtype == "bool":
            base = np.arange(n) - (0 if ctx.dtype.startswith("u") else n // 2)
            # cast first, then permute: the same order (the shuffle's draws depend on the length only), half the
            # memory to move for a big tensor
            values = ctx.rng.permutation(base.astype(ctx.dtype))
            values.shape = ctx.shape  # (in place: the array stays its own, not a view _finish would copy)
            return values
        grid = np.linspace(lo, hi, n, endpoint=False) if n else np.zeros(0)
        if ctx.dtype in ("float16", "bfloat16") and n > 1:
            span = 2048 if ctx.dtype == "float16" else 256
            if n > span:  # not enough distinct low-precision values in [lo, hi): widen
                grid = np.arange(n) - n / 2
        values = ctx.rng.permutation(grid.astype(numpy_dtype(ctx.dtype)))
        values.shape = ctx.shape
        # Only formats whose grid can repeat are checked (float32 from 2**22 elements on).
        may_repeat = ctx.dtype in ("float16", "bfloat16") or (ctx.dtype == "float32" and n > 1 << 22)
        if n < 2 or not may_repeat or np.unique(_stored(values, ctx.dtype)).size == n:
            return values
        return ctx.rng.permutation(_nearest_zero(ctx.dtype, n)).reshape(ctx.shape)

    return keeps(_repeats)(precondition("pairwise distinct values (sort/topk ties have no defined order): "
                                        "an edge value would repeat one")(domain))


def _repeats(values: np.ndarray, ctx: DomainContext) -> str | None:
    """unique()'s rule: no value repeated in the tensor's own dtype."""
    stored = _stored(np.asarray(values), ctx.dtype).reshape(-1)
    distinct = np.unique(stored).size
    return None if distinct == stored.size else f"{stored.size - distinct} repeated values where the spec draws distinct ones"


def spd(jitter: float | None = None) -> Callable:
    """Symmetric positive definite matrices over the last two dims: A·Aᵀ/n + I."""

    def domain(ctx):
        *batch, n, m = ctx.shape
        if n != m:
            raise ValueError(f"spd() needs square matrices, got shape {ctx.shape}")
        a = ctx.rng.uniform(-1, 1, (*batch, n, n))
        mat = a @ np.swapaxes(a, -1, -2) / max(n, 1) + np.eye(n) * (1.0 if jitter is None else jitter)
        if ctx.dtype in COMPLEX_DTYPES:
            return mat.astype(ctx.dtype)
        return mat.astype(numpy_dtype(ctx.dtype))

    return precondition("symmetric positive definite matrices: cholesky and its solves are "
                        "undefined otherwise, and one edge value breaks the symmetry")(domain)


def wide(min_exponent: float = -3.0) -> Callable:
    """Values spanning the dtype's whole finite range: random sign, log-uniform magnitude.

    For APIs whose reported failures involve range limits (e.g. a float64 clip that used
    float32's max as its default bound).  Ints: uniform over [-65535, 65535).
    """

    def domain(ctx):
        if ctx.dtype in INT_DTYPES or ctx.dtype == "bool":
            return default_values(ctx) if ctx.dtype == "bool" else \
                ctx.rng.integers(-65535, 65535, ctx.shape).astype(ctx.dtype)
        finfo = np.finfo(np.float32 if ctx.dtype in ("bfloat16", "complex64") else
                         np.float64 if ctx.dtype == "complex128" else numpy_dtype(ctx.dtype))
        top = math.log10(float(finfo.max)) - 0.5
        mag = 10.0 ** ctx.rng.uniform(min_exponent, top, ctx.shape)
        sign = np.where(ctx.rng.random(ctx.shape) < 0.5, -1.0, 1.0)
        return (sign * mag).astype(numpy_dtype(ctx.dtype))

    def edges(dtype, options):
        # the default edges and, since range limits are this domain's question, the dtype's max
        if dtype in INT_DTYPES or dtype == "bool":
            return default_edges(dtype, options)
        top = float(_float_finfo(dtype).max)
        return [*float_edges(dtype, options), *([top, -top] if options.magnitudes else [])]

    return with_edges(edges)(domain)


def ties_with(other: str = "x", fraction: float = 0.1) -> Callable:
    """Default values, but a ``fraction`` of elements equal to the broadcast partner
    element of argument ``other`` (exercises tie-breaking, e.g. maximum's gradient)."""

    def domain(ctx):
        values = default_values(ctx)
        partner = ctx.arrays.get(other)
        if not isinstance(partner, np.ndarray):
            return values
        try:
            full = np.broadcast_to(partner, np.broadcast_shapes(partner.shape, values.shape))
        except ValueError:
            return values
        # reduce the broadcast partner to this argument's shape
        lead = full.ndim - values.ndim
        index = (0,) * lead + tuple(slice(0, 1) if s == 1 else slice(None) for s in values.shape)
        aligned = full[index].reshape(values.shape)
        mask = ctx.rng.random(values.shape) < fraction
        return np.where(mask, aligned.astype(values.dtype), values)

    # the default edges (the ties stay at the other positions)
    return with_edges(default_edges)(domain)


def _arg_value(ctx: DomainContext, key: Any) -> Any:
    if isinstance(key, str) and key in ctx.args:
        return ctx.args[key]
    return key


def _shape_of(value: Any) -> tuple[int, ...] | None:
    if isinstance(value, TensorSpec):
        return value.shape
    if isinstance(value, InputTensor):
        return value.shape
    if isinstance(value, np.ndarray):
        return value.shape
    return None


def indices(of: str = "arr", axis: str | int | None = "axis", unique: bool = False) -> Callable:
    """Valid indices for another argument ``of`` along ``axis`` (an argument name or an int).

    ``axis`` resolving to None means the flattened size.  ``unique=True`` draws distinct
    indices along the last dim of the index tensor itself (no duplicate writes for
    scatter with "assign", where the winner of a duplicate is unspecified).
    """

    def positions(ctx) -> int:
        """How many positions the indices index: the target's size along ``axis`` (flattened for None)."""
        target = ctx.arrays.get(of, ctx.args.get(of))
        shape = _shape_of(target)
        if shape is None:
            raise ValueError(f"indices(of={of!r}): argument {of!r} is not a tensor")
        ax = _arg_value(ctx, axis)
        if isinstance(ax, TensorSpec):
            ax = None
        size = math.prod(shape) if ax is None else (shape[ax] if shape else 1)
        return max(int(size), 1)

    def violation(values, ctx) -> str | None:
        values, size = np.asarray(values), positions(ctx)
        if values.size and (values.min() < 0 or values.max() >= size):
            return f"indices outside [0, {size}) of {of!r}"
        if unique and values.ndim and values.size:
            rows = np.sort(values.reshape(-1, values.shape[-1]), axis=-1)
            if (rows[:, 1:] == rows[:, :-1]).any():
                return f"a repeated index along the last dim, where the spec draws distinct ones (of {size} positions)"
        return None

    @keeps(violation)
    def domain(ctx):
        size = positions(ctx)
        if unique and ctx.shape:
            last = ctx.shape[-1]
            rows = math.prod(ctx.shape[:-1])
            if last <= size:
                out = np.stack([ctx.rng.permutation(size)[:last] for _ in range(rows)]) if rows else np.zeros((0, last))
                return out.reshape(ctx.shape).astype(numpy_dtype(ctx.dtype))
        return ctx.rng.integers(0, size, ctx.shape).astype(numpy_dtype(ctx.dtype))

    return precondition("valid indices into another argument: out of range is an error on both sides")(domain)


def axes(of: str = "x") -> Callable:
    """Valid axis values for argument ``of``: distinct dims in [-ndim, ndim), random sign.

    For axis parameters given as a Tensor (``axis=Tensor([1],"int64")``).
    """

    def domain(ctx):
        shape = _shape_of(ctx.arrays.get(of, ctx.args.get(of)))
        ndim = max(len(shape or ()), 1)
        count = math.prod(ctx.shape)
        if count > ndim:
            raise ValueError(f"axes(of={of!r}): {count} axes asked for a {ndim}-d tensor")
        dims = ctx.rng.permutation(ndim)[:count]
        signs = ctx.rng.random(count) < 0.5
        dims = np.where(signs, dims - ndim, dims)
        return dims.reshape(ctx.shape).astype(numpy_dtype(ctx.dtype))

    return precondition("valid, distinct axes of another argument")(domain)


def probabilities(axis: int = -1) -> Callable:
    """Non-negative values summing to 1 along ``axis``."""

    def domain(ctx):
        values = ctx.rng.uniform(0.05, 1.0, ctx.shape)
        if values.ndim:
            values = values / values.sum(axis=axis, keepdims=True)
        else:
            values = np.ones(())
        return values.astype(numpy_dtype(ctx.dtype))

    return precondition("non-negative values summing to 1 along an axis: one edge value breaks the sum")(domain)


def one_of(values) -> Callable:
    """Each element drawn from ``values``."""
    choices = np.asarray(list(values))

    def domain(ctx):
        return ctx.rng.choice(choices, ctx.shape).astype(numpy_dtype(ctx.dtype))

    return precondition("values from a fixed set the API accepts")(domain)


# ---------------------------------------------------------------- materialisation


def _rng(seed: int, name: str, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode()), index])


def _finish(array: np.ndarray, spec: TensorSpec, fresh: bool = False) -> InputTensor:
    """The input tensor of these values. ``fresh``: the values are a new array nothing else holds (a domain's
    own output), so one of the right dtype and layout is the input itself instead of a copy (a copy of a big
    input was a fifth of its draw); anything else -- kept for the edge draw, a view, read-only -- is copied."""
    target = numpy_dtype(spec.dtype)
    array = np.asarray(array)
    if array.shape != spec.shape:
        array = np.broadcast_to(array, spec.shape)
    reuse = fresh and array.flags.owndata and array.flags.writeable
    # np.array, not ascontiguousarray: the latter turns 0-d into shape (1,)
    array = np.array(array, dtype=target, order="C", copy=None if reuse else True)
    if spec.dtype in ("bfloat16", "uint16"):
        array = round_to_bfloat16(array)
    return InputTensor(array, "bfloat16" if spec.dtype == "uint16" else spec.dtype)


class _Watched(Mapping):
    """Other params' arrays (or the bound arguments) as a domain sees them, noting whether it looked: a domain that
    read the arrays may draw other values in an edge draw (those arrays carry edges there), one that did not draws
    the typical values; one that read neither draws the same values in every config with that tensor."""

    def __init__(self, arrays: Mapping[str, Any]):
        self._arrays = arrays
        self.read = False

    def __getitem__(self, key):
        self.read = True
        return self._arrays[key]

    def __iter__(self):
        self.read = True
        return iter(self._arrays)

    def __len__(self):
        self.read = True
        return len(self._arrays)


# Domain values that depend on the tensor alone (the domain read no other argument and no other param's array) are
# the same in every config with that tensor: the 516 CPU-report configs of Tensor.topk all draw the same 3.3 M
# distinct values, a permutation that cost more than the API (73 ms a run). A process keeps the most recent of them,
# up to REUSED_VALUES_BYTES (it counts against a pool worker's address-space slack, apitester.pool), for tensors
# drawn at least twice: a one-off tensor (every paddle.sum config's) is never kept, so it never pays a copy for it.
REUSED_VALUES_BYTES = 64 << 20
_REUSED: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
_DRAWN_ONCE: set = set()  # keys drawn once so far (forgotten all at once when it reaches _DRAWN_ONCE_LIMIT)
_DRAWN_ONCE_LIMIT = 1 << 14


def clear_reused_values() -> None:
    """Forget every kept domain value (tests start from a process that has drawn nothing)."""
    _REUSED.clear()
    _DRAWN_ONCE.clear()


def _reused(key: tuple) -> "np.ndarray | None":
    values = _REUSED.get(key)
    if values is not None:
        _REUSED.move_to_end(key)
    return values


def _keep_for_reuse(key: tuple, values) -> bool:
    """Keep ``values`` when ``key`` was drawn before and they fit; True when kept (nobody may write to them then)."""
    if not isinstance(values, np.ndarray) or values.nbytes > REUSED_VALUES_BYTES // 2:
        return False
    if key not in _DRAWN_ONCE:
        if len(_DRAWN_ONCE) >= _DRAWN_ONCE_LIMIT:
            _DRAWN_ONCE.clear()
        _DRAWN_ONCE.add(key)
        return False
    _DRAWN_ONCE.discard(key)
    _REUSED[key] = values
    while sum(v.nbytes for v in _REUSED.values()) > REUSED_VALUES_BYTES:
        _REUSED.popitem(last=False)
    return True


def _domain_values(spec: TensorSpec, name: str, index: int, seed: int, domain, args, arrays,
                   typical: "dict | None", fmt: int) -> tuple[np.ndarray, bool]:
    """The domain's values for one tensor, and whether they are a new array nothing else holds; ``typical``
    (an edge draw's cache of its typical draw) hands back the values the typical draw of the same seed drew for
    it, unless the domain read other params' arrays (whose arrays it may also have handed back). Values that depend
    on the tensor alone may be an earlier config's (``_REUSED``): the values a new draw gives, not drawn again."""
    key = (seed, fmt, name, index, spec.shape, spec.dtype)
    if typical is not None and key in typical:
        return typical[key], False
    reuse_key = (domain, *key)
    values = _reused(reuse_key)
    if values is None:
        watched, watched_args = _Watched(arrays), _Watched(args)
        ctx = DomainContext(spec.shape, "bfloat16" if spec.dtype == "uint16" else spec.dtype,
                            _rng(seed, name, index), watched_args, watched, name, index if index else None, fmt)
        values = (domain or default_values)(ctx)
        if _DEPENDENT is not None and (watched.read or watched_args.read):
            _DEPENDENT.add(name.split(".", 1)[0])
        if watched.read:  # it may have handed back another param's array: not its own, not kept for the edge draw
            return values, False
        kept = not watched_args.read and _keep_for_reuse(reuse_key, values)
        if not kept and typical is None:
            return values, True  # its own new array: the input itself
    if typical is not None:
        typical[key] = values
    return values, False  # kept (for the edge draw, or for reuse): never written to; place_edges and _finish copy it


def _make(spec: TensorSpec, name: str, index: int, seed: int, domain, args, arrays,
          edges: "_EdgeDraw | None", typical: "dict | None", fmt: int) -> InputTensor:
    values, fresh = _domain_values(spec, name, index, seed, domain, args, arrays, typical, fmt)
    dtype = "bfloat16" if spec.dtype == "uint16" else spec.dtype
    if edges is not None:
        values = np.asarray(values)
        param = name.split(".", 1)[0]
        wanted = [*tie_values(edges.options, param, dtype, args), *edge_values(domain, dtype, edges.options, param)]
        # a generator of its own, so the typical values under the edges are the typical draw's
        values, placed = place_edges(values, wanted, _rng(seed, "edge " + name, index))
        edges.placed += placed
        fresh = fresh or placed > 0  # place_edges copied
    return _finish(values, spec, fresh)


@dataclass
class _EdgeDraw:
    """An edge draw in progress: the spec's options and how many edge values were placed."""

    options: EdgeOptions
    placed: int = 0


def _materialise_param(value, name, seed, domain, args, arrays, edges, typical, fmt):
    """The param's value with every TensorSpec replaced by an InputTensor (lists, tuples, slices
    and a **kwargs dict walked).  Tensors are numbered in order per name; an entry of a **kwargs
    dict is named ``param.key`` and numbered on its own."""
    counters: dict[str, int] = {}

    def leaf(item, path):
        if not isinstance(item, TensorSpec):
            return item
        scope = ".".join([name, *(p for p in path if isinstance(p, str))])
        index = counters.get(scope, 0)
        counters[scope] = index + 1
        return _make(item, scope, index, seed, domain, args, arrays, edges, typical, fmt)

    return walk(value, leaf, into=(list, tuple, slice, dict))


def materialise(bound: Mapping[str, Any], domains: Mapping[str, Any] | None = None, seed: int = 0,
                fmt: int = DRAW_FORMAT) -> dict[str, Any]:
    """Replace every TensorSpec in the bound arguments by an InputTensor (the typical draw).

    Params without a domain are drawn first, then params with a domain in signature
    order, so a domain (e.g. ``indices(of="arr")``) can look at other params' arrays.
    Each tensor's generator is seeded from (seed, param name, position), so values do not
    depend on evaluation order.
    """
    return _materialise_all(bound, domains or {}, seed, None, None, fmt)


def materialise_draw(bound: Mapping[str, Any], domains: Mapping[str, Any] | None, draw: Draw,
                     options: EdgeOptions | None = None, typical: dict | None = None) -> tuple[dict[str, Any], int]:
    """The inputs of one draw and how many edge values it placed (0 for a typical draw).

    A typical draw is ``materialise(bound, domains, draw.seed, draw.format)``.  An edge draw is that draw with
    each tensor's edge values (``edge_values``) at deterministic positions; a tensor whose domain
    is a precondition keeps its typical values, and a domain reading another argument's array
    sees that argument with its edges.

    ``typical`` (a dict the caller keeps from the typical to the edge draw of one seed): the typical draw leaves
    each tensor's domain values in it and the edge draw takes them from there instead of drawing them again --
    the same values, both draw them from the same generator -- except where a domain read other params' arrays.
    The caller drops it after the edge draw (it holds a copy of the inputs)."""
    if draw.cut is not None:
        return _materialise_cut(bound, domains, draw, options)
    if draw.kind == GIVEN:
        return materialise_given(bound, draw), 0
    edges = _EdgeDraw(options or EdgeOptions()) if draw.kind == EDGE else None
    out = _materialise_all(bound, domains or {}, draw.seed, edges, typical, draw.format)
    return out, edges.placed if edges else 0


def tensor_specs(bound: Mapping[str, Any]) -> list[TensorSpec]:
    """The TensorSpecs of the bound arguments in the order ``materialise`` walks them (a cut's order)."""
    found: list = []
    for value in bound.values():
        walk(value, lambda item, _path: found.append(item) or item if isinstance(item, TensorSpec) else item,
             into=(list, tuple, slice, dict))
    return found


# The params whose domain read another argument while a cut draw is materialised (None otherwise).
_DEPENDENT: "set[str] | None" = None


class CutBreaksDomain(ValueError):
    """A cut draw would keep values a domain drew for another argument's original shape (embedding's ids below
    the weight's original rows, with the weight cut to fewer rows: Paddle's CPU kernel reads past the table and
    the process dies).  The shrink then tries the candidate's own draw instead."""


def _materialise_cut(bound, domains, draw: Draw, options) -> tuple[dict[str, Any], int]:
    """A cut draw (``Draw.cut``): the uncut draw at the original sizes, each tensor then sliced to its shape.

    Raises CutBreaksDomain when a param's domain read other arguments (its values may depend on their shapes)
    and a tensor of another param is cut smaller."""
    global _DEPENDENT
    specs = tensor_specs(bound)
    if len(specs) != len(draw.cut) or any(len(s.shape) != len(dims) for s, dims in zip(specs, draw.cut)):
        raise ValueError(f"draw {draw} cuts {len(draw.cut)} tensors, the config has {len(specs)} of other ranks")
    originals = iter(draw.cut)

    def grown(item, _path):
        return TensorSpec(tuple(size for size, _ in next(originals)), item.dtype) if isinstance(item, TensorSpec) else item

    whole = {k: walk(v, grown, into=(list, tuple, slice, dict)) for k, v in bound.items()}
    _DEPENDENT = set()
    try:
        out, placed = materialise_draw(whole, domains, draw.uncut(), options)
        dependent = _DEPENDENT
    finally:
        _DEPENDENT = None
    if dependent:
        shrunk = {name for name, value in bound.items() for spec, whole_spec in
                  zip(tensor_specs({name: value}), tensor_specs({name: whole[name]})) if spec.shape != whole_spec.shape}
        if shrunk - dependent:
            raise CutBreaksDomain(f"draw {draw}: the values of {', '.join(sorted(dependent))} depend on other "
                                  f"arguments, and the cut changes {', '.join(sorted(shrunk - dependent))}")
    cuts = iter(zip(specs, draw.cut))

    def cut(item, _path):
        if not isinstance(item, InputTensor):
            return item
        spec, dims = next(cuts)
        index = tuple(slice(start, start + size) for (_, start), size in zip(dims, spec.shape))
        return InputTensor(np.array(item.array[index], order="C"), item.dtype)

    return {k: walk(v, cut, into=(list, tuple, slice, dict)) for k, v in out.items()}, placed


def edge_draw_places(bound: Mapping[str, Any], domains: Mapping[str, Any] | None, options: EdgeOptions) -> bool:
    """Whether an edge draw of these arguments would place any edge value (``materialise_draw``'s count > 0),
    read off the tensor specs alone: a config whose tensors are all preconditions or declare no edges (topk's
    distinct values) needs no second materialisation only to find its edge draw is the typical one."""
    domains = domains or {}
    found = [False]

    def leaf(item, _path):
        if isinstance(item, TensorSpec) and not found[0] and math.prod(item.shape) > 0:
            dtype = "bfloat16" if item.dtype == "uint16" else item.dtype
            found[0] = bool(tie_values(options, key, dtype, bound) or edge_values(domains.get(key), dtype, options, key))
        return item

    for key, value in bound.items():
        walk(value, leaf, into=(list, tuple, slice, dict))
        if found[0]:
            return True
    return False


def _materialise_all(bound, domains, seed, edges, typical, fmt) -> dict[str, Any]:
    out: dict[str, Any] = {}
    arrays: dict[str, Any] = {}
    ordered = [k for k in bound if k not in domains] + [k for k in bound if k in domains]
    for key in ordered:
        value = bound[key]
        mat = _materialise_param(value, key, seed, domains.get(key), bound, arrays, edges, typical, fmt)
        out[key] = mat
        arrays[key] = _strip(mat)
    return {k: out[k] for k in bound}


def _strip(value):
    """InputTensors (in lists and tuples) as their numpy arrays: what a domain sees of other params."""
    return walk(value, lambda item, _path: item.array if isinstance(item, InputTensor) else item)


def estimate_bytes(call: Call) -> int:
    """Bytes of all input tensors of a call, as declared (float32 for bfloat16 generation)."""
    total = 0
    for spec in call.tensors():
        size = ITEMSIZE.get(spec.dtype, 8)
        if spec.dtype in ("bfloat16", "uint16"):
            size = 4
        total += spec.numel * size
    return total


def plain_value(value: Any) -> Any:
    """Non-tensor parsed values as plain Python: dtype constructors become their name, named
    constants (math.inf, -math.pi) and complex(...) written with them their number."""

    def leaf(item, _path):
        if isinstance(item, Constructor):
            if item.name == "complex":  # complex(nan,math.inf): named constants inside
                return complex_value(item)
            name = item.dtype_name
            return name if name is not None else item
        if isinstance(item, Name):
            return item.name if item.constant is None else item.constant
        return item

    return walk(value, leaf)


# ---------------------------------------------------------------- given inputs (--inputs FILE.npz)


class GivenInputsError(ValueError):
    """Given arrays that do not fit the config: a name missing or extra, a shape or a dtype other than the config's.
    Never patched over (no cast, no broadcast, no drawn stand-in): the inputs asked about are the inputs judged."""


@dataclass(frozen=True)
class GivenInputs:
    arrays: Mapping[str, np.ndarray]
    source: str  # where they came from (the file name), for messages


# The given sets of this process, numbered by a given draw's seed (a Draw stays a small hashable value that round-trips
# through a verdict's JSON; the arrays stay here).
_GIVEN: dict[int, GivenInputs] = {}


def give_inputs(arrays: Mapping[str, np.ndarray], source: str = "given arrays") -> Draw:
    """Register arrays named as the API's parameters and return the draw that materialises them."""
    seed = len(_GIVEN)
    _GIVEN[seed] = GivenInputs({str(k): np.asarray(v) for k, v in arrays.items()}, source)
    return Draw(GIVEN, seed)


def load_given_inputs(path: str) -> Draw:
    """``give_inputs`` of an .npz file's arrays (GivenInputsError when it cannot be read as one)."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except (OSError, ValueError, EOFError) as exc:  # a missing file, not a zip, an object array
        raise GivenInputsError(f"{path}: cannot read it as an .npz of arrays ({type(exc).__name__}: {exc})") from None
    return give_inputs(arrays, path)


def given_names(bound: Mapping[str, Any]) -> dict[str, TensorSpec]:
    """The name each tensor of the bound arguments is given under: the parameter's name when the parameter is one
    tensor, else ``param.N`` (N-th tensor of a list/tuple, in order) or ``param.key.N`` (a **kwargs entry)."""
    names: dict[str, TensorSpec] = {}
    for name, value in bound.items():
        if isinstance(value, TensorSpec):
            names[name] = value
            continue
        counters: dict[str, int] = {}

        def leaf(item, path, name=name, counters=counters):
            if isinstance(item, TensorSpec):
                scope = ".".join([name, *(p for p in path if isinstance(p, str))])
                index = counters.get(scope, 0)
                counters[scope] = index + 1
                names[f"{scope}.{index}"] = item
            return item

        walk(value, leaf, into=(list, tuple, slice, dict))
    return names


def _given_array(name: str, array: np.ndarray, spec: TensorSpec, source: str) -> InputTensor:
    dtype = "bfloat16" if spec.dtype == "uint16" else spec.dtype
    where = f"{source}: array {name!r}"
    if tuple(array.shape) != tuple(spec.shape):
        raise GivenInputsError(f"{where} has shape {list(array.shape)}, the config's {name} is {list(spec.shape)}")
    if array.dtype != numpy_dtype(dtype):
        held = "float32 holding bfloat16 values" if dtype == "bfloat16" else dtype
        raise GivenInputsError(f"{where} has dtype {array.dtype}, the config's {name} is {dtype} (give {held})")
    if dtype == "bfloat16" and not np.array_equal(round_to_bfloat16(array), array, equal_nan=True):
        raise GivenInputsError(f"{where} holds float32 values that are not bfloat16 values (round them first)")
    return InputTensor(np.array(array, order="C", copy=True), dtype)


def materialise_given(bound: Mapping[str, Any], draw: Draw) -> dict[str, Any]:
    """The bound arguments with each tensor replaced by its given array (GivenInputsError when they do not fit)."""
    given = _GIVEN.get(draw.seed)
    if given is None:
        raise GivenInputsError(f"draw {draw}: no inputs were given under that number in this process (--inputs)")
    names = given_names(bound)
    missing = [n for n in names if n not in given.arrays]
    extra = [n for n in given.arrays if n not in names]
    if missing or extra:
        raise GivenInputsError(f"{given.source}: the config's tensors are {', '.join(names) or 'none'}; "
                               + "; ".join(filter(None, [missing and f"missing {', '.join(missing)}",
                                                         extra and f"not a tensor of the config: {', '.join(extra)}"])))
    # given_names walks the arguments in the order this walk does: the n-th tensor met is the n-th name
    tensors = iter([_given_array(n, given.arrays[n], spec, given.source) for n, spec in names.items()])
    return {k: walk(v, lambda item, _path: next(tensors) if isinstance(item, TensorSpec) else item,
                    into=(list, tuple, slice, dict)) for k, v in bound.items()}
