"""The diagnosis' typed readings and their JSON, in one place (issue #42).

Each reading type is a frozen dataclass whose kinds are ``apitester.vocab`` enums; ``to_dict`` is the one way it
becomes the JSON a diagnosis or a verdict prints (``python -m apitester diagnose --json``, ``--readings``, what the
board stores), ``from_dict`` reads that JSON back. The keys, their order and their values are the interface scripts
and the tracker read (``tracker/services/diagnoses.py``): they are the ones the dicts had before the types.

Typed so far: one side's error to an oracle (``Errors``), the elements where a disputed float64 pair agrees
(``AgreeingElements``), the oracle of one draw (``DrawReadings``) and a spec reference's check
(``ReferenceCheck``). The per-output reading inside ``DrawReadings.readings`` (``output``, ``reading``, …) is still a
dict: the next type to convert.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..compare import decode_float, encode_float
from ..vocab import NoOracle, Reading

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

    readings: tuple[dict, ...] = ()
    no_oracle: NoOracle | None = None
    reason: str = ""

    def to_dict(self) -> dict:
        return {"readings": [dict(r) for r in self.readings], "no_oracle": self.no_oracle, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: dict) -> DrawReadings:
        code = data.get("no_oracle")
        return cls(tuple(data.get("readings") or ()), NoOracle(code) if code else None, data.get("reason", ""))

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
