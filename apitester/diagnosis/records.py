"""The diagnosis' typed readings and their JSON, in one place (issue #42).

Each reading type is a frozen dataclass whose kinds are ``apitester.vocab`` enums; ``to_dict`` is the one way it
becomes the JSON a diagnosis or a verdict prints (``python -m apitester diagnose --json``, ``--readings``, what the
board stores), ``from_dict`` reads that JSON back. The keys and their values are the interface scripts and the
tracker read (``tracker/services/diagnoses.py``): they are the ones the dicts had before the types (a key absent on
one path is absent still). Key order is not part of it (JSON objects are unordered; no consumer reads by position):
``to_dict`` writes its fields' order.

The types: one side's error to an oracle (``Errors``), the elements where a disputed float64 pair agrees
(``AgreeingElements``), a convention (``Convention``, named by ``conventions``), one output's reading
(``OutputReading``), the oracle of one draw (``DrawReadings``), a spec
reference's check (``ReferenceCheck``), the float64 gradient check (``GradientCheck``, ``SideCheck``,
``OutputCheck``), and what a diagnosis says beside its reading: the verdict it starts from (``VerdictSummary``), its
``Repro``, the readings its final reading stands on (``EvidenceReadings``: ``BriefReading``, ``CheckWord``) and the
verdict the reading implies (``ImpliedVerdict``); a verdict's worst reading of each inexact draw (``CloserDraw``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine.compare import decode_float, encode_float
from ..vocab import ConventionKind, Describes, NoOracle, Reading, ReadingSource, Side, Status

_ERROR_KEYS = ("max_abs", "max_rel", "rmse")


@dataclass(frozen=True)
class Errors:
    """One side's error to an oracle (``measuring.error_to_oracle``): max abs, max rel, RMSE (inf: a NaN or inf
    where the oracle has another value)."""

    max_abs: float
    max_rel: float
    rmse: float

    def to_dict(self) -> dict:
        return {key: encode_float(getattr(self, key)) for key in _ERROR_KEYS}

    @classmethod
    def from_dict(cls, data: dict) -> Errors:
        return cls(*(float(decode_float(data[key])) for key in _ERROR_KEYS))


@dataclass(frozen=True)
class AgreeingElements:
    """Where a disputed float64 pair agrees on some elements only (``oracle.agreeing_elements``): the reading of
    those elements, Torch's float64 value the oracle there."""

    elements: int
    of: int
    dtype: str
    reading: Reading
    noise_floor: float
    k: float
    paddle: Errors
    torch: Errors

    def to_dict(self) -> dict:
        return {"elements": self.elements, "of": self.of, "dtype": self.dtype, "reading": self.reading,
                "noise_floor": encode_float(self.noise_floor), "k": self.k,
                "paddle": self.paddle.to_dict(), "torch": self.torch.to_dict()}

    @classmethod
    def from_dict(cls, data: dict) -> AgreeingElements:
        return cls(data["elements"], data["of"], data["dtype"], Reading(data["reading"]),
                   float(decode_float(data["noise_floor"])), data["k"],
                   Errors.from_dict(data["paddle"]), Errors.from_dict(data["torch"]))


@dataclass(frozen=True)
class DrawReadings:
    """The float64 oracle of one draw (``oracle.oracle_for``): a reading per output (and input gradient), labelled
    as the verdict labels them ("output 0", "grad x"); or none, and why (``no_oracle``, ``reason``)."""

    readings: tuple[OutputReading, ...] = ()
    no_oracle: NoOracle | None = None
    reason: str = ""

    def to_dict(self) -> dict:
        return {"readings": [r.to_dict() for r in self.readings], "no_oracle": self.no_oracle, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict) -> DrawReadings:
        code = data.get("no_oracle")
        return cls(tuple(OutputReading.from_dict(r) for r in data.get("readings") or ()), NoOracle(code) if code else None,
                   data.get("reason", ""))

    @classmethod
    def none(cls, code: NoOracle, reason: str) -> DrawReadings:
        return cls((), code, reason)


@dataclass(frozen=True)
class ReferenceAgreement:
    """One forward output of ``reference.check_reference``: do the frameworks agree at float64, does the reference
    agree with them (None where not compared), and the gap (or what kept them from being compared)."""

    output: int
    frameworks_agree: bool
    ref_agrees: bool | None
    gap: float | str

    def to_dict(self) -> dict:
        return {"output": self.output, "frameworks_agree": self.frameworks_agree, "ref_agrees": self.ref_agrees,
                "gap": self.gap}

    @classmethod
    def from_dict(cls, data: dict) -> ReferenceAgreement:
        return cls(data["output"], data["frameworks_agree"], data["ref_agrees"], data["gap"])


@dataclass(frozen=True)
class ReferenceCheck:
    """A spec's reference against both frameworks' float64 results on one draw (``reference.check_reference``)."""

    ran: bool
    why: str = ""
    outputs: tuple[ReferenceAgreement, ...] = ()

    def to_dict(self) -> dict:
        return {"ran": self.ran, "why": self.why, "outputs": [row.to_dict() for row in self.outputs]}

    @classmethod
    def from_dict(cls, data: dict) -> ReferenceCheck:
        return cls(data["ran"], data.get("why", ""),
                   tuple(ReferenceAgreement.from_dict(row) for row in data.get("outputs", ())))


# ---------------------------------------------------------------- the float64 gradient check

_COUNTS = ("match", "miss", "unresolved", "kinks", "absorbed", "undefined")
_FIRSTS = ("first_miss", "first_kink", "first_absorbed", "first_undefined")


@dataclass(frozen=True)
class OutputCheck:
    """One input's gradient judged element by element (``gradients.gradient_check``): how many elements match, miss,
    stay unresolved, sit at a kink, had an absorbed step, have no derivative (``undefined``); where it missed (the
    JSON keeps the first 20) and the first element of each kind (index, analytic value, the derivative's figures).
    ``unresolved_at`` serves the comparison of the two sides and is not in the JSON."""

    match: int = 0
    miss: int = 0
    unresolved: int = 0
    kinks: int = 0
    absorbed: int = 0
    undefined: int = 0
    missed_at: tuple[int, ...] = ()
    first_miss: dict | None = None
    first_kink: dict | None = None
    first_absorbed: dict | None = None
    first_undefined: dict | None = None
    unresolved_at: tuple[int, ...] = ()

    def to_dict(self) -> dict:
        return {**{key: getattr(self, key) for key in _COUNTS}, "missed_at": list(self.missed_at),
                **{key: getattr(self, key) for key in _FIRSTS}}

    @classmethod
    def from_dict(cls, data: dict) -> OutputCheck:
        return cls(**{key: data.get(key, 0) for key in _COUNTS}, missed_at=tuple(data.get("missed_at", ())),
                   **{key: data.get(key) for key in _FIRSTS})


@dataclass(frozen=True)
class SideCheck:
    """One side's gradient check: ``matches`` (None with ``error`` when the side could not be checked), the largest
    gap to the derivative, and each input gradient's ``OutputCheck`` by label ("grad x")."""

    matches: bool | None
    error: str = ""
    max_abs: float = 0.0
    outputs: dict[str, OutputCheck] = field(default_factory=dict)

    def to_dict(self) -> dict:
        if self.matches is None:
            return {"matches": None, "error": self.error}
        return {"matches": self.matches, "max_abs": encode_float(self.max_abs),
                "outputs": {label: out.to_dict() for label, out in self.outputs.items()}}

    @classmethod
    def from_dict(cls, data: dict) -> SideCheck:
        if data.get("matches") is None:
            return cls(None, data.get("error", ""))
        return cls(data["matches"], "", float(decode_float(data.get("max_abs", 0.0))),
                   {label: OutputCheck.from_dict(out) for label, out in (data.get("outputs") or {}).items()})


@dataclass(frozen=True)
class GradientCheck:
    """The float64 gradient check of one draw (``gradients.gradient_check``): each side's analytic gradient against
    the numeric derivative of its own float64 forward (``against`` "own_forward") or a reference derivative
    ("reference"); the side off (``side_off``, and per input ``side_off_by_output``) with its ``evidence``. Not run:
    ``ran`` False and the ``reason``."""

    ran: bool
    reason: str = ""
    elements: int = 0
    step: float = 0.0
    atol: float = 0.0
    rtol: float = 0.0
    method: str = ""
    against: str = ""
    chosen: dict | None = None
    paddle: SideCheck | None = None
    torch: SideCheck | None = None
    side_off: Side | None = None
    side_off_by_output: dict[str, Side] = field(default_factory=dict)
    evidence: dict[str, str] = field(default_factory=dict)

    @classmethod
    def not_run(cls, reason: str) -> GradientCheck:
        return cls(False, reason)

    def side(self, name: str) -> SideCheck | None:
        return self.paddle if name == Side.PADDLE else self.torch if name == Side.TORCH else None

    def output(self, name: str, label: str | None) -> OutputCheck:
        """Side ``name``'s check of the input gradient ``label`` (an empty one where it has none)."""
        side = self.side(name)
        return (side.outputs.get(label) if side is not None else None) or OutputCheck()

    def to_dict(self) -> dict:
        if not self.ran:
            return {"ran": False, "reason": self.reason}
        out = {"ran": True, "elements": self.elements, "step": self.step, "atol": self.atol, "rtol": self.rtol,
               "method": self.method, "against": self.against}
        if self.chosen is not None:
            out["chosen"] = dict(self.chosen)
        return {**out, "paddle": self.paddle.to_dict(), "torch": self.torch.to_dict(), "side_off": self.side_off,
                "side_off_by_output": dict(self.side_off_by_output), "evidence": dict(self.evidence)}

    @classmethod
    def from_dict(cls, data: dict) -> GradientCheck:
        if not data.get("ran"):
            return cls.not_run(data.get("reason", ""))
        side_off = data.get("side_off")
        return cls(True, "", data["elements"], data["step"], data["atol"], data["rtol"], data["method"],
                   data["against"], data.get("chosen"), SideCheck.from_dict(data["paddle"]),
                   SideCheck.from_dict(data["torch"]), Side(side_off) if side_off else None,
                   {label: Side(side) for label, side in (data.get("side_off_by_output") or {}).items()},
                   dict(data.get("evidence") or {}))


# ---------------------------------------------------------------- what a diagnosis says beside its reading


@dataclass(frozen=True)
class VerdictSummary:
    """The verdict a diagnosis starts from (its ``verdict``): both layers' statuses, where it failed, by how much,
    the draw, the message's first 500 characters."""

    status: Status
    strict_status: Status
    direction: str | None
    output: str | None
    max_abs: float | None
    max_rel: float | None
    draw: str | None
    message: str

    @classmethod
    def of(cls, verdict) -> VerdictSummary:
        """The summary of an ``apitester.engine.compare.Verdict``."""
        return cls(Status(verdict.status), Status(verdict.strict_status), verdict.direction, verdict.output,
                   verdict.max_abs, verdict.max_rel, verdict.draw, verdict.message[:500])

    def to_dict(self) -> dict:
        return {"status": str(self.status), "strict_status": str(self.strict_status), "direction": self.direction,
                "output": self.output, "max_abs": encode_float(self.max_abs), "max_rel": encode_float(self.max_rel),
                "draw": self.draw, "message": self.message}

    @classmethod
    def from_dict(cls, data: dict) -> VerdictSummary:
        return cls(Status(data["status"]), Status(data["strict_status"]), data.get("direction"), data.get("output"),
                   decode_float(data.get("max_abs")), decode_float(data.get("max_rel")), data.get("draw"),
                   data.get("message", ""))


@dataclass(frozen=True)
class Repro:
    """The repro of a diagnosed failure (its ``repro``): the shrunk config, its draw, the command that replays it
    and the paste-ready script (``apitester.diagnosis.repro``)."""

    config: str
    draw: str
    command: str
    script: str

    def to_dict(self) -> dict:
        return {"config": self.config, "draw": self.draw, "command": self.command, "script": self.script}

    @classmethod
    def from_dict(cls, data: dict) -> Repro:
        return cls(data["config"], data["draw"], data["command"], data["script"])


# ---------------------------------------------------------------- the readings a final reading stands on

_BRIEF_KEYS = ("output", "oracle", "no_oracle")


@dataclass(frozen=True)
class BriefReading:
    """A reading as evidence (``evidence_readings``' ``float64_oracle`` and ``repro``): its word, the config it
    describes, and its output, source and no_oracle code where it has them."""

    reading: str
    describes: Describes
    output: str = ""
    oracle: str = ""
    no_oracle: str = ""

    @classmethod
    def of(cls, reading: OutputReading | None, describes: Describes) -> BriefReading | None:
        if reading is None:
            return None
        return cls(str(reading.reading or Reading.NO_ORACLE), describes,
                   *(str(getattr(reading, key)) if getattr(reading, key) else "" for key in _BRIEF_KEYS))

    def to_dict(self) -> dict:
        return {"reading": self.reading, "describes": self.describes,
                **{key: getattr(self, key) for key in _BRIEF_KEYS if getattr(self, key)}}

    @classmethod
    def from_dict(cls, data: dict) -> BriefReading:
        return cls(data["reading"], Describes(data["describes"]), *(data.get(key, "") for key in _BRIEF_KEYS))


@dataclass(frozen=True)
class CheckWord:
    """The gradient check's word on the failing output (``evidence_readings``' ``gradient_check``): the side it
    reads off there (``reading``: None for no side), or that it did not run and why."""

    ran: bool
    describes: Describes
    reading: Reading | None = None
    reason: str = ""

    @classmethod
    def of(cls, check: GradientCheck | None, output: str | None, describes: Describes) -> CheckWord | None:
        if not check:
            return None
        if not check.ran:
            return cls(False, describes, reason=str(check.reason)[:200])
        side = check.side_off_by_output.get(output)
        return cls(True, describes, {Side.PADDLE: Reading.PADDLE_OFF, Side.TORCH: Reading.TORCH_OFF}.get(side))

    def to_dict(self) -> dict:
        if not self.ran:
            return {"ran": False, "describes": self.describes, "reason": self.reason}
        return {"ran": True, "describes": self.describes, "reading": str(self.reading) if self.reading else None}

    @classmethod
    def from_dict(cls, data: dict) -> CheckWord:
        if not data.get("ran"):
            return cls(False, Describes(data["describes"]), reason=data.get("reason", ""))
        word = data.get("reading")
        return cls(True, Describes(data["describes"]), Reading(word) if word else None)


@dataclass(frozen=True)
class EvidenceReadings:
    """What a diagnosis' final reading stands on (its ``evidence_readings``): the float64 oracle's reading, the
    gradient check's word and, where the config was shrunk and the reported one read, the repro's reading
    (``has_repro``: the JSON has a ``repro`` key)."""

    float64_oracle: BriefReading | None = None
    gradient_check: CheckWord | None = None
    repro: BriefReading | None = None
    has_repro: bool = False

    def to_dict(self) -> dict:
        out = {"float64_oracle": self.float64_oracle.to_dict() if self.float64_oracle else None,
               "gradient_check": self.gradient_check.to_dict() if self.gradient_check else None}
        if self.has_repro:
            out["repro"] = self.repro.to_dict() if self.repro else None
        return out

    @classmethod
    def from_dict(cls, data: dict) -> EvidenceReadings:
        brief, word, repro = data.get("float64_oracle"), data.get("gradient_check"), data.get("repro")
        return cls(BriefReading.from_dict(brief) if brief else None, CheckWord.from_dict(word) if word else None,
                   BriefReading.from_dict(repro) if repro else None, "repro" in data)


# ---------------------------------------------------------------- a convention (apitester.diagnosis.conventions)

_CONVENTION_KEYS = ("kind", "paddle", "torch", "text", "key")


@dataclass(frozen=True)
class Convention:
    """Two behaviours that differ by convention, not by value: each side's, the sentence naming both (``text``)
    and what distinct failures group by (``key``: sizes and error texts left out). ``details``: the kind's own
    fields, in the order the JSON shows them (between ``torch`` and ``text``)."""

    kind: ConventionKind
    paddle: str
    torch: str
    text: str
    key: str
    details: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict:
        """The JSON form every reading, diagnosis file and the board read (one definition)."""
        return {"kind": self.kind, "paddle": self.paddle, "torch": self.torch, **dict(self.details),
                "text": self.text, "key": self.key}

    @classmethod
    def from_dict(cls, data: dict) -> Convention:
        details = tuple((key, value) for key, value in data.items() if key not in _CONVENTION_KEYS)
        return cls(ConventionKind(data["kind"]), data["paddle"], data["torch"], data["text"], data["key"], details)


# ---------------------------------------------------------------- one output's reading

# OutputReading's fields that are JSON-valued as they are (str, number, or a dict of them); the others are encoded
# below (``_ENCODED``: floats through ``encode_float``; typed: their own ``to_dict``).
_FLOATS = ("noise_floor", "oracle_gap")
_TYPED = {"paddle": Errors, "torch": Errors, "agreeing_elements": AgreeingElements, "convention": Convention,
          "evidence_readings": EvidenceReadings}


@dataclass(frozen=True)
class OutputReading:
    """One output's (or input gradient's) reading: the float64 oracle's (``oracle.read_output``), the spec's
    reference's (``reference.read_by_reference``), a convention's (``conventions``), the gradient check's word
    (``diagnose.read_with_gradient_check``), and a diagnosis' final reading (``describes``, ``evidence_readings``).

    ``output`` and ``reading`` are always there; every other field is None where the reading has no such key (a
    key is in the JSON exactly where its field is not None; no path writes one of them as null). Key order is not
    part of the JSON's interface (the lead's decision on issue #42): ``to_dict`` writes the fields' order."""

    output: str
    reading: Reading
    no_oracle: NoOracle | None = None
    reason: str | None = None
    dtype: str | None = None
    noise_floor: float | None = None
    k: float | None = None
    oracle_gap: float | None = None            # the float64 pair's max gap (of the output's scale)
    paddle: Errors | None = None
    torch: Errors | None = None
    nonfinite: dict | None = None              # {"paddle"?: str, "torch"?: str}: a NaN/inf against a finite oracle
    oracle: ReadingSource | None = None        # absent: the float64 oracle
    evidence: str | None = None
    float64_match: dict | None = None          # {"paddle": bool, "torch": bool}: computes the reference's function
    reference_gap: dict | None = None          # {"paddle", "torch"}: each float64 result's gap to the reference
    reference_check: dict | None = None        # {"digits": [int, int], "uncertain": int}
    gradient_match: dict | None = None         # {"paddle": bool, "torch": bool}: to the reference's derivative
    agreeing_elements: AgreeingElements | None = None
    convention: Convention | None = None
    float64_oracle: dict | None = None         # what the float64 oracle said where another source read the output
    read_on: str | None = None                 # "reported": a shrunk gradient read on the reported config
    shrunk_reading: dict | None = None         # ... and what the shrunk config said ({"no_oracle", "reason"})
    describes: Describes | None = None         # a diagnosis' final reading: which config it describes
    describes_why: str | None = None
    evidence_readings: EvidenceReadings | None = None

    @classmethod
    def none(cls, output: str, code: NoOracle | str, reason: str) -> OutputReading:
        """No oracle for the output: the code and why (``measuring.no_oracle``)."""
        return cls(output, Reading.NO_ORACLE, code, reason)

    @property
    def is_gradient(self) -> bool:
        return str(self.output).startswith("grad ")  # the oracle's labels: "output 0", "grad x"

    def to_dict(self) -> dict:
        out = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if value is None:
                continue
            if name in _TYPED:
                value = value.to_dict()
            elif name in _FLOATS:
                value = encode_float(value)
            elif isinstance(value, str):
                value = str(value)  # an enum member as its plain value
            out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict) -> OutputReading:
        values = {}
        for name in cls.__dataclass_fields__:
            value = data.get(name)
            if value is None:
                continue
            if name in _TYPED:
                value = _TYPED[name].from_dict(value)
            elif name in _FLOATS:
                value = float(decode_float(value))
            values[name] = value
        for name, kind in (("reading", Reading), ("no_oracle", NoOracle), ("oracle", ReadingSource),
                           ("describes", Describes)):
            if name in values:
                values[name] = kind(values[name])
        return cls(**values)


@dataclass(frozen=True)
class CloserDraw:
    """One inexact draw's worst reading on a verdict (``Verdict.closer_draws``, apitester.readings): the draw, the
    output, its reading and its no_oracle code ("" for none)."""

    draw: str
    output: str
    reading: Reading
    code: str = ""

    def to_dict(self) -> dict:
        return {"draw": self.draw, "output": self.output, "reading": str(self.reading), "code": str(self.code)}

    @classmethod
    def from_dict(cls, data: dict) -> CloserDraw:
        return cls(data["draw"], data["output"], Reading(data["reading"]), data.get("code", ""))


@dataclass(frozen=True)
class ImpliedVerdict:
    """What a diagnosis' final reading implies for the verdict (``diagnose.implied_verdict``): ``torch_suspect``,
    the output, the evidence and its source; with both sides' errors (and then ``k`` and ``noise_floor``, null where
    the reading has none) where the reading measured them; ``describes`` where the reading says which config."""

    output: str
    evidence: str
    source: str
    paddle: Errors | None = None
    torch: Errors | None = None
    k: float | None = None
    noise_floor: float | None = None
    describes: Describes | None = None
    status: Status = Status.TORCH_SUSPECT

    def to_dict(self) -> dict:
        out = {"status": str(self.status), "output": self.output, "evidence": self.evidence, "source": self.source}
        if self.paddle is not None:
            out.update(paddle=self.paddle.to_dict(), torch=self.torch.to_dict(), k=self.k,
                       noise_floor=encode_float(self.noise_floor))
        if self.describes:
            out["describes"] = str(self.describes)
        return out

    @classmethod
    def from_dict(cls, data: dict) -> ImpliedVerdict:
        errors = {side: Errors.from_dict(data[side]) for side in ("paddle", "torch") if data.get(side)}
        floor = data.get("noise_floor")
        return cls(data["output"], data["evidence"], data["source"], errors.get("paddle"), errors.get("torch"),
                   data.get("k"), None if floor is None else float(decode_float(floor)),
                   Describes(data["describes"]) if data.get("describes") else None, Status(data["status"]))
