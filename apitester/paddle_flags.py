"""Paddle flags a run is asked to run with (``FLAGS_use_accuracy_compatible_kernel=1``): the grammar, the check of
each value against the type of the flag as a Paddle build defines it, and what a worker reports it ran with.

Django-free, and imports no paddle: the parent that checks a request asks the release's own interpreter which flags
its Paddle defines (``apitester.builds.probe_flags``, a subprocess, like ``probe_build``); a pool worker gets the
flags in its environment before it imports Paddle (Paddle reads ``FLAGS_*`` from the environment at import) and
reports the values ``paddle.get_flags`` gives it (``effective``), which every verdict it sends carries.

The grammar: ``NAME=VALUE`` items separated by commas or spaces; a name is ``FLAGS_`` and letters, digits and
underscores; a value is letters, digits and ``. + - _``; a name given twice, an item without ``=``, an empty value
or anything else is refused with a message naming the item. Paddle itself takes a value it cannot read as the
flag's default without a word (``FLAGS_use_accuracy_compatible_kernel=abc`` reads ``False``), so values are
checked here against the flag's type: a bool takes 1/0/true/false, an int an integer, a float a number.
"""
from __future__ import annotations

import re

NAME = re.compile(r"^FLAGS_[A-Za-z0-9_]+$")
VALUE = re.compile(r"^[A-Za-z0-9_.+\-]+$")
_SEPARATORS = re.compile(r"[,\s]+")
_TRUE = ("1", "true")
_FALSE = ("0", "false")


class FlagError(ValueError):
    """A flag string that is malformed, or names a flag (or value) the Paddle build does not take."""


def parse_flags(text: str | None) -> dict[str, str]:
    """``"FLAGS_a=1, FLAGS_b=0"`` -> ``{"FLAGS_a": "1", "FLAGS_b": "0"}`` (sorted by name); "" -> {}."""
    flags: dict[str, str] = {}
    for item in _SEPARATORS.split((text or "").strip()):
        if not item:
            continue
        if item.count("=") != 1:
            raise FlagError(f"malformed Paddle flag {item!r}: write NAME=VALUE, e.g. "
                            "FLAGS_use_accuracy_compatible_kernel=1")
        name, value = item.split("=")
        if not NAME.match(name):
            raise FlagError(f"malformed Paddle flag name {name!r} in {item!r}: a name is FLAGS_ followed by letters, "
                            "digits and underscores")
        if not VALUE.match(value):
            raise FlagError(f"malformed value {value!r} of Paddle flag {name}: a value is letters, digits and . + - _"
                            if value else f"Paddle flag {name} has no value: write {name}=VALUE")
        if name in flags:
            raise FlagError(f"Paddle flag {name} is given twice")
        flags[name] = value
    return dict(sorted(flags.items()))


def format_flags(flags: dict | None) -> str:
    """The flags as one line, ``FLAGS_a=1 FLAGS_b=0`` ("" for none)."""
    return " ".join(f"{name}={value}" for name, value in sorted((flags or {}).items()))


def typed_value(name: str, value: str, kind: str):
    """A flag's value as the Python type Paddle gives it (``kind``: "bool", "int", "float", "str")."""
    text = str(value).strip()
    if kind == "bool":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise FlagError(f"Paddle flag {name} is a boolean: give 1 or 0 (true or false), not {text!r}")
    if kind == "int":
        try:
            return int(text)
        except ValueError:
            raise FlagError(f"Paddle flag {name} is an integer, not {text!r}") from None
    if kind == "float":
        try:
            return float(text)
        except ValueError:
            raise FlagError(f"Paddle flag {name} is a number, not {text!r}") from None
    return text


def check_flags(flags: dict[str, str], defined: dict[str, str | None], *, release: str) -> dict[str, str]:
    """Refuse a flag the build does not define (``defined[name]`` None: ``paddle.get_flags`` raised for it) or a
    value of the wrong type; returns the flags with bool values spelled 1/0. ``release`` names the build in the
    messages."""
    unknown = [name for name in flags if defined.get(name) is None]
    if unknown:
        raise FlagError(f"Paddle {release} does not define {', '.join(unknown)} (paddle.get_flags does not know "
                        f"{'it' if len(unknown) == 1 else 'them'})")
    out = {}
    for name, value in flags.items():
        typed = typed_value(name, value, defined[name])
        out[name] = ("1" if typed else "0") if isinstance(typed, bool) else value
    return out


def matches(requested: dict[str, str], effective: dict) -> bool:
    """Whether a worker's ``paddle.get_flags`` readings are the requested values (``effective[name]`` is the
    typed value, or None for a flag the worker's Paddle does not know)."""
    for name, value in (requested or {}).items():
        got = (effective or {}).get(name)
        if got is None:
            return False
        try:
            if typed_value(name, value, kind_of(got)) != got:
                return False
        except FlagError:
            return False
    return True


def kind_of(value) -> str:
    """The type name ``check_flags`` works with, of a value ``paddle.get_flags`` returned."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


def read_flags(paddle, names) -> dict:
    """In a process that imported paddle: each name's value (None when this Paddle does not define it)."""
    found = {}
    for name in names:
        try:
            found[name] = paddle.get_flags([name]).get(name)
        except Exception:  # Paddle raises ValueError for a flag it does not define
            found[name] = None
    return found


def apply_flags(paddle, flags: dict[str, str]) -> dict:
    """In a process that already imported paddle (``python -m apitester``): check the flags against this Paddle and
    set them (``paddle.set_flags``); returns the values now in effect."""
    defined = {name: (None if value is None else kind_of(value))
               for name, value in read_flags(paddle, flags).items()}
    checked = check_flags(flags, defined, release=getattr(paddle, "__version__", "?"))
    paddle.set_flags({name: typed_value(name, value, defined[name]) for name, value in checked.items()})
    return read_flags(paddle, flags)
