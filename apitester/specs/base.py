"""The declarative spec of one Paddle API and helpers to write references.

A Spec says which Torch code is the reference for a Paddle API, how inputs are drawn, and
how to compare; apitester/specs/README.md ("Writing a spec") describes every field and how
a config runs.  Helpers shared by the family modules' references live in ``_helpers.py``.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..vocab import SILENT_ADAPTATIONS, AdaptationKind

Domain = Callable[[Any], Any]

# What a spec may adapt, relative to the plain Torch call on identical inputs at the config's dtypes (the
# *strict* reference): apitester.vocab.AdaptationKind.  The silent kinds only rename arguments or rearrange
# layouts and change no result; every other kind is shown in every verdict of the spec.
SILENT_KINDS = tuple(kind for kind in AdaptationKind if kind in SILENT_ADAPTATIONS)
ADAPTATION_KINDS = tuple(AdaptationKind)
# Kinds where a plain comparison exists, so the spec must give it (strict_torch/strict_paddle).
# randomness and output_invariant have none; reference_precision gives one where Torch has
# the plain call (a composed reference of a fused op has no plain Torch call to fall back to).
NEEDS_STRICT_REFERENCE = (AdaptationKind.DOCUMENTED_SEMANTICS, AdaptationKind.GRADIENT_CONVENTION)


@dataclass(frozen=True)
class Adaptation:
    """One way a spec's reference departs from the plain Torch call (OpInfo-style declaration).

    ``reason`` says why in one sentence; ``link`` points at the Paddle doc / issue / PR that
    backs it.  A result-changing adaptation needs the spec to give the strict reference too
    (``strict_torch`` / ``strict_paddle``) unless no plain comparison exists (randomness,
    output_invariant): then both layers are the adapted comparison and the verdict says so.
    """

    kind: AdaptationKind  # a member or its value ("documented_semantics"), held as the member
    reason: str = ""
    link: str = ""

    def __post_init__(self):
        if self.kind not in ADAPTATION_KINDS:
            raise ValueError(f"unknown adaptation kind {self.kind!r} (one of {', '.join(ADAPTATION_KINDS)})")
        object.__setattr__(self, "kind", AdaptationKind(self.kind))
        if self.kind not in SILENT_KINDS and not self.reason:
            raise ValueError(f"a {self.kind} adaptation needs a reason")

    @property
    def changes_result(self) -> bool:
        return self.kind not in SILENT_KINDS

    def to_dict(self) -> dict:
        return {"kind": self.kind.value, "reason": self.reason, "link": self.link}


def maps_arguments(reason: str) -> tuple[Adaptation, ...]:
    """The declaration of a reference that is a call mapping composed of Torch ops (Paddle's
    argument forms, defaults, layouts) and changes no result.  ``reason`` (required) says which
    Paddle argument maps to which Torch argument; tests/engine/test_silent_mappings.py checks on
    report configs that the mapping leaves the plain Torch call's result unchanged."""
    if not reason or not reason.strip():
        raise ValueError("maps_arguments needs its reason: which Paddle argument maps to which Torch argument")
    return (Adaptation(AdaptationKind.ARGUMENT_MAPPING, reason),)


def _release_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.strip().split(".") if part.isdigit())


_RELEASE_OPS = {
    "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "==": lambda a, b: a == b,
    "<": lambda a, b: a < b, ">": lambda a, b: a > b,
}


def release_matches(releases: str, version: str) -> bool:
    """Does a Paddle version fall in a release range: "" (every release), "<3.1", ">=3.0,<3.3", "==3.3.1"."""
    have = _release_tuple(version.split("+", 1)[0])
    for clause in filter(None, (c.strip() for c in releases.split(","))):
        for op in ("<=", ">=", "==", "<", ">"):
            if clause.startswith(op):
                want = _release_tuple(clause[len(op):])
                width = max(len(want), len(have))
                pad = lambda t: t + (0,) * (width - len(t))  # noqa: E731
                if not _RELEASE_OPS[op](pad(have), pad(want)):
                    return False
                break
        else:
            raise ValueError(f"release clause {clause!r} needs an operator (<, <=, ==, >=, >)")
    return True


@dataclass(frozen=True)
class KnownFailure:
    """A Paddle failure known on this spec's API, scoped like OpInfo's ``DecorateInfo``.

    It documents a failure; it never excuses one: the verdict keeps its failing status and
    shows the matching entry (``Verdict.known_failure``).  ``releases`` is a range of Paddle
    versions ("" = every release, "<3.1", "==3.3.1"); ``dtypes`` the config input dtypes it
    concerns (empty = any); ``status`` and ``direction`` the verdict it gives; ``contains`` a
    fragment the config line must contain (e.g. ``"upper=True"``; empty = any config);
    ``source`` the issue / PR / report that shows it.
    """

    status: str
    reason: str
    releases: str = ""
    dtypes: tuple[str, ...] = ()
    direction: str | None = None
    contains: str = ""
    source: str = ""

    def __post_init__(self):
        if not self.reason:
            raise ValueError("a known failure needs its reason")
        release_matches(self.releases, "0")  # a malformed range fails at import time

    def matches(self, version: str, dtypes, config: str = "") -> bool:
        """Does this entry concern a config with these input dtypes on this Paddle version?"""
        if not release_matches(self.releases, version):
            return False
        if self.dtypes and not set(self.dtypes) & {dtype_name(d) for d in dtypes}:
            return False
        return self.contains in config

    def to_dict(self) -> dict:
        return {"status": self.status, "direction": self.direction, "releases": self.releases,
                "dtypes": list(self.dtypes), "contains": self.contains, "reason": self.reason,
                "source": self.source}


@dataclass(frozen=True)
class Ties:
    """An API that rounds one argument's values to a grid or an integer (nearest sampling, round, an index
    computed from a value): the edge draw places values exactly on the ties of that rounding, and a
    difference there is read as a convention naming both rounding rules (``apitester.diagnosis.ties``).

    ``param``: the argument rounded.  ``coordinate(values, args) -> array``: the coordinate each element is
    rounded to an integer at (same shape; increasing in the value; ``args`` the bound parsed arguments,
    tensors as TensorSpec).  ``values(dtype, args) -> list``: values of ``param`` whose coordinate is exactly
    k + 0.5 (empty where the config does not round, e.g. grid_sample in bilinear mode)."""

    param: str
    coordinate: Callable
    values: Callable
    note: str = ""


@dataclass(frozen=True)
class Comparison:
    """What a spec compares where it differs from the engine's default (atol = rtol = 1e-2 on
    every output and gradient) or from PaddleAPITest's choice for the API, and why.

    Required for any spec with ``tolerances`` (no silent widening); shown with every verdict
    of the spec (``Verdict.comparison``).  ``source``: the issue / PR / doc behind the decision.
    """

    note: str
    source: str = ""

    def __post_init__(self):
        if not self.note:
            raise ValueError("a comparison note needs its text")

    def to_dict(self) -> dict:
        return {"note": self.note, "source": self.source}


@dataclass(frozen=True, eq=False)  # identity hash: specs are cache keys
class Spec:
    api: str
    torch: Callable[..., Any]
    aliases: tuple[str, ...] = ()
    domains: Mapping[str, Domain] = field(default_factory=dict)
    tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    backward: bool = True
    random: bool = False
    check: Callable | None = None
    paddle: Callable | None = None
    outputs: Callable | None = None
    note: str = ""
    # A stub whose signature stands in for Paddle's when inspect cannot read it (builtin
    # Tensor methods such as __mul__), e.g. ``signature=lambda x, y: None``.
    signature: Callable | None = None
    # What the reference adapts (see Adaptation).  A spec with a result-changing adaptation
    # gives the strict reference beside the adapted one: ``strict_torch`` (the plain Torch
    # call on identical inputs) and/or ``strict_paddle`` (Paddle's own call, when the adapted
    # Paddle side also changes something, e.g. detaching labels); a side left None is the
    # same in both layers.
    adaptations: tuple[Adaptation, ...] = ()
    strict_torch: Callable | None = None
    strict_paddle: Callable | None = None
    # The edge draw (apitester.inputs: a verdict is the worst over its draws).  ``edges``: per
    # param, values placed before the domain's own edges (the API's own boundaries, e.g.
    # logit's 0 and 1).  ``nan_inf``: NaN and +-inf are edges, where the API defines its result
    # on them.  ``overflow``: integer inputs get their dtype's extremes, where overflow is the
    # question (cumulative and product APIs).  A domain that is a precondition of the math
    # (spd, valid indices) gets no edges whatever these say (``inputs.precondition``).
    # ``magnitudes=False``: no large/tiny float edges, where every output mixes all inputs so its
    # rounding scales with the largest (eigenvalues of a matrix with a 1e154 entry: the small ones
    # are rounding noise on both sides, and the comparison would measure LAPACK, not the API).
    edges: Mapping[str, tuple] = field(default_factory=dict)
    nan_inf: bool = False
    overflow: bool = False
    magnitudes: bool = True
    # Known Paddle failures of this API (KnownFailure), read by the tests and shown in verdicts.
    known_failures: tuple[KnownFailure, ...] = ()
    # What this spec compares and why, where it differs from the engine default or from
    # PaddleAPITest (Comparison); required when ``tolerances`` is set.
    comparison: Comparison | None = None
    # Integer arguments that are free sizes, tied to no input's shape (one_hot's num_classes):
    # ``python -m apitester shrink`` may reduce them like a tensor dimension (apitester.diagnosis.shrink).
    free_sizes: tuple[str, ...] = ()
    # How the tensor arguments' shapes must relate (rnnt_loss: labels [B, U] beside logits [B, T, U+1, V]):
    # ``shapes_agree(**{param: shape})`` returns why they do not, or None.  Shrinking never runs a candidate
    # that breaks it: a kernel reading past a tensor it was told is larger corrupts the process's heap
    # (Paddle's warp-rnnt does), which says nothing about the failure being shrunk.
    shapes_agree: Callable[..., str | None] | None = None
    # An independent reference (OpInfo's ``ref``): the API's documented semantics in NumPy / SciPy /
    # mpmath, never torch or paddle.  Called as ``ref(**args)`` with the keyword arguments the torch
    # reference gets, every tensor a numpy array upcast like apitester.diagnosis.sides.upcast (float ->
    # float64, complex -> complex128, integer/bool unchanged; scalars, lists, strings as the config
    # gives them); returns an array or a tuple/list of arrays in the order of the flattened outputs
    # (trial.flatten_outputs).  It may raise NotImplementedError for arguments it does not cover.
    # The oracle uses it where the float64 pair is disputed, the config is float64, or a side is
    # non-finite (docs/diagnosis.md, "The independent reference"); helpers: apitester.references.
    ref: Callable[..., Any] | None = None
    # An argument whose values the API rounds (Ties): its edge draw gets values exactly on the ties.
    ties: Ties | None = None
    # The part of a gradient the API defines, where a gradient_convention says only that part is compared
    # (a function of a Hermitian matrix defines the Hermitian part): ``gradient_part(grad, **arguments)``
    # takes a float64/complex128 gradient of a floating input and the config's non-tensor arguments, and
    # returns the part (or None where the convention does not apply: pinv without hermitian=True); its ``label``
    # names the part in the evidence ("Hermitian part").  The
    # reference's derivative then settles a disputed gradient on that part of both sides' gradients.
    gradient_part: Callable[..., Any] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.api, *self.aliases)

    @property
    def visible_adaptations(self) -> tuple[Adaptation, ...]:
        """The adaptations every verdict of this spec shows (the result-changing ones)."""
        return tuple(a for a in self.adaptations if a.changes_result)

    def known_failure_for(self, version: str, dtypes, status: str, direction: str | None,
                          config: str = "") -> KnownFailure | None:
        """The declared known failure matching a failing verdict (release, dtype, status, direction)."""
        for known in self.known_failures:
            if known.status == status and known.direction in (None, direction) \
                    and known.matches(version, dtypes, config):
                return known
        return None

    @property
    def has_strict_reference(self) -> bool:
        """The engine can run the strict comparison separately from the adapted one."""
        return self.strict_torch is not None or self.strict_paddle is not None


REGISTRY: dict[str, Spec] = {}
PRIMARY: dict[str, Spec] = {}
# The primary names this package's own modules registered: the engine's registry.  Test-only specs
# (APITESTER_EXTRA_SPECS, or a test module importing tests.fake_specs) register beside them in the same
# process; a registry walk that means "every API the engine serves" (specs.engine_specs) must not see them.
ENGINE_APIS: set[str] = set()


def register(*specs: Spec) -> None:
    """Add entries; a name (api or alias) registered twice raises at import time."""
    # who registers: a module of this package (the engine's registry), or a test's module
    engine = sys._getframe(1).f_globals.get("__name__", "").startswith(__name__.rsplit(".", 1)[0] + ".")
    for spec in specs:
        for name in spec.names:
            if name in REGISTRY:
                raise ValueError(f"duplicate spec name {name!r} ({spec.api} vs {REGISTRY[name].api})")
        if spec.tolerances and spec.comparison is None:
            raise ValueError(f"{spec.api} sets tolerances {dict(spec.tolerances)} without a comparison= "
                             "note saying why (no silent widening)")
        needs_strict = [a.kind for a in spec.adaptations if a.kind in NEEDS_STRICT_REFERENCE]
        if needs_strict and not spec.has_strict_reference:
            raise ValueError(f"{spec.api} declares {', '.join(needs_strict)} but gives no strict_torch / "
                             "strict_paddle: the strict layer (the plain Torch call) cannot be computed")
        for name in spec.names:
            REGISTRY[name] = spec
        PRIMARY[spec.api] = spec
        if engine:
            ENGINE_APIS.add(spec.api)


# ---------------------------------------------------------------- torch helpers

_TORCH_DTYPES = {
    "bool": "bool",
    "uint8": "uint8",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
    # aliases seen in configs / paddle
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "int": "int64",
    "uint16": "bfloat16",  # paddle's storage name for bfloat16
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
}


def dtype_name(dtype: Any) -> str | None:
    """Normalise a dtype (name string, paddle/torch/numpy dtype) to a plain name like 'float16'."""
    if dtype is None:
        return None
    text = str(dtype)
    for prefix in ("paddle.", "torch.", "numpy.", "np.", "VarType.", "DataType."):
        if text.startswith(prefix):
            text = text[len(prefix):]
    text = text.lower()
    if text.startswith("<class '"):
        text = text[8:-2].rsplit(".", 1)[-1]
    return _TORCH_DTYPES.get(text, text)


def torch_dtype(name: Any):
    """The torch dtype for a dtype name (or None for None)."""
    import torch

    norm = dtype_name(name)
    if norm is None:
        return None
    return getattr(torch, norm)


def resolve_torch(dotted: str) -> Callable:
    """'torch.cumsum' / 'torch.nn.functional.relu' -> the callable."""
    module_name, _, attr = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except ModuleNotFoundError:
        parent, _, mid = module_name.rpartition(".")
        return getattr(getattr(importlib.import_module(parent), mid), attr)


def torch_call(target: str | Callable, **renames: str | None) -> Callable:
    """A reference that calls ``target`` with Paddle's parameter names renamed.

    ``torch_call("torch.cumsum", x="input", axis="dim")``: parameters not mentioned pass
    through under their own name; a parameter mapped to None is dropped.  The torch
    callable is resolved lazily so spec modules import without torch.
    """
    resolved: list[Callable] = []

    def reference(**kwargs):
        if not resolved:
            resolved.append(resolve_torch(target) if isinstance(target, str) else target)
        call_kwargs = {}
        for key, value in kwargs.items():
            if key in renames:
                new = renames[key]
                if new is None:
                    continue
                call_kwargs[new] = value
            else:
                call_kwargs[key] = value
        return resolved[0](**call_kwargs)

    reference.__name__ = f"torch_call({target if isinstance(target, str) else target.__name__})"
    return reference


def tol(atol: float, rtol: float | None = None) -> tuple[float, float]:
    """A tolerance pair; rtol defaults to atol."""
    return (atol, atol if rtol is None else rtol)


def low_precision(atol: float, rtol: float | None = None) -> dict[str, tuple[float, float]]:
    """The same override for float16 and bfloat16."""
    return {"float16": tol(atol, rtol), "bfloat16": tol(atol, rtol)}
