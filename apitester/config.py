"""Parse and format PaddleAPITest config strings.

A config is one API call as PaddleAPITest traced it, e.g.
``paddle.clip(x=Tensor([3, 3],"float64"), min=Tensor([1],"float64"), max=None, )``.

The parser is a regex tokenizer plus a recursive-descent reader; it never evaluates
anything.  Values become plain Python objects where Python has one (int, float, complex,
str, bool, None, list, tuple, slice) and small dataclasses otherwise:

* ``TensorSpec(shape, dtype)`` for ``Tensor([dims],"dtype")``;
* ``Name("float16")`` for a bare (possibly dotted) identifier such as ``numpy.float64``;
  a named constant (``math.inf``, ``np.pi``, ...) may be negated, ``-math.inf`` being
  ``Name("math.inf", negated=True)``, and ``Name.constant`` gives its number;
* ``Constructor(name, args)`` for any other ``Name(...)`` / ``dotted.name(...)`` form,
  e.g. ``Dtype(float16)``, ``VarType(float32)``, ``type(numpy.float64)``; the API spec
  decides what it means.  ``complex(nan,math.inf)`` (a named constant inside) stays a
  ``Constructor("complex", ...)`` so it formats back as written; ``complex_value`` evaluates it.

``format_call`` writes the canonical form, which is the form PaddleAPITest writes, so
``format_call(parse_config(line)) == line`` for the report lines.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any


class ConfigSyntaxError(ValueError):
    """A config string that does not follow the grammar.

    ``column`` is 1-based; ``expected`` says what the parser was looking for.
    """

    def __init__(self, text: str, column: int, expected: str, found: str):
        self.text = text
        self.column = column
        self.expected = expected
        self.found = found
        super().__init__(f"column {column}: expected {expected}, found {found}")


@dataclass(frozen=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


# Named numeric constants a config may write instead of a number (``-math.inf``,
# ``complex(nan,math.inf)``); the engine passes their value.
NAMED_CONSTANTS = {
    f"{module}.{name}": value
    for module in ("math", "numpy", "np")
    for name, value in (("inf", math.inf), ("nan", math.nan), ("pi", math.pi), ("e", math.e), ("tau", math.tau))
    if not (module != "math" and name == "tau")
}


@dataclass(frozen=True)
class Name:
    """A bare identifier used as a value, e.g. ``float16`` inside ``Dtype(float16)``, or a
    named constant such as ``math.inf``; only a named constant may be negated (``-math.inf``)."""

    name: str
    negated: bool = False

    @property
    def constant(self) -> float | None:
        """The number a named constant stands for (sign applied), or None for other names."""
        value = NAMED_CONSTANTS.get(self.name)
        if value is None:
            return None
        return -value if self.negated else value


@dataclass(frozen=True)
class Constructor:
    """Any ``Name(...)`` form other than Tensor/list/tuple/slice/complex."""

    name: str
    args: tuple = ()

    @property
    def dtype_name(self) -> str | None:
        """The dtype a ``Dtype(x)`` / ``VarType(x)`` / ``type(numpy.x)`` node names, if any."""
        if len(self.args) == 1:
            inner = self.args[0]
            if isinstance(inner, Name):
                return inner.name.rsplit(".", 1)[-1]
            if isinstance(inner, str):
                return inner
        return None


@dataclass(frozen=True)
class Call:
    api: str
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def tensors(self):
        """Every TensorSpec in the call, depth first."""
        out: list[TensorSpec] = []

        def collect(value, _path):
            if isinstance(value, TensorSpec):
                out.append(value)
            return value

        for value in (*self.args, *self.kwargs.values()):
            walk(value, collect, into=(list, tuple, slice, Constructor))
        return out


def walk(value: Any, leaf, *, into: tuple[type, ...] = (list, tuple), path: tuple = ()) -> Any:
    """The one walker of nested values (parsed configs and what the engine makes of them).

    Rebuilds the containers whose type is in ``into`` -- list, tuple, slice, dict,
    Constructor (its args) -- and replaces every other value by ``leaf(value, path)``.
    ``path`` says where the value sits: list/tuple indices and slice parts (0, 1, 2) as
    ints, dict keys as strings.  Items are visited depth first, in order.
    """
    if isinstance(value, list) and list in into:
        return [walk(v, leaf, into=into, path=(*path, i)) for i, v in enumerate(value)]
    if isinstance(value, tuple) and tuple in into:
        return tuple(walk(v, leaf, into=into, path=(*path, i)) for i, v in enumerate(value))
    if isinstance(value, slice) and slice in into:
        return slice(*(walk(v, leaf, into=into, path=(*path, i))
                       for i, v in enumerate((value.start, value.stop, value.step))))
    if isinstance(value, dict) and dict in into:
        return {k: walk(v, leaf, into=into, path=(*path, str(k))) for k, v in value.items()}
    if isinstance(value, Constructor) and Constructor in into:
        return Constructor(value.name, tuple(walk(v, leaf, into=into, path=(*path, i))
                                             for i, v in enumerate(value.args)))
    return leaf(value, path)


# ---------------------------------------------------------------- limits

# A config is anyone's text (a report line, a staff edit), so every way it can be absurd is a
# ConfigSyntaxError at its column, never another exception: int() refuses more than 4,300 digits
# (ValueError) and is quadratic beyond that anyway, nesting recurses (RecursionError), and a float
# cannot hold a huge integer (OverflowError in complex()). Real configs stay far below these.
MAX_INT_DIGITS = 4300  # Python's own default limit for int(str) (sys.int_info.default_max_str_digits)
MAX_NESTING = 100  # list/tuple/constructor levels; traced configs nest a few levels deep
MAX_TOKENS = 10_000  # the longest report line (4,494 characters) has 1,684; bounds the work per line


# ---------------------------------------------------------------- tokenizer

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>-?(?:inf|nan)(?![\w.])|-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)
  | (?P<punct>[()\[\],=-])
  | (?P<bad>[\s\S])
    """,
    re.VERBOSE,
)

_END = ("end", None, -1)


def _tokenize(text: str) -> list[tuple[str, Any, int]]:
    tokens: list[tuple[str, Any, int]] = []
    append = tokens.append
    pos = 0
    n = len(text)
    # finditer: one C loop instead of a match() call per token. Every character starts some token (`bad`
    # at worst), so it never searches ahead past a character no real token starts with.
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "bad":
            break  # reported below
        if len(tokens) >= MAX_TOKENS:
            # Named at once, before any other error: the work for one line stays bounded.
            raise ConfigSyntaxError(text, pos + 1, f"a config of at most {MAX_TOKENS} tokens", "more")
        if kind != "ws":
            append((kind, m.group(), pos))
        pos = m.end()
    if pos < n:
        # Reported when the parser reaches it, so earlier errors are named first.
        what = "an unterminated string" if text[pos] == '"' else f"unexpected character {text[pos]!r}"
        append(("error", what, pos))
    append(("end", None, n))
    return tokens


# ---------------------------------------------------------------- parser


class _Parser:
    __slots__ = ("text", "tokens", "i", "depth")

    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0  # containers open at the current token

    def error(self, expected: str) -> ConfigSyntaxError:
        kind, value, pos = self.tokens[self.i]
        if kind == "end":
            found = "end of input"
        elif kind == "error":
            found = value
        elif len(value) > 40:  # a 5,000-digit number is named, not repeated
            found = f"{value[:30]!r}… ({len(value)} characters)"
        else:
            found = repr(value)
        return ConfigSyntaxError(self.text, pos + 1, expected, found)

    def expect(self, punct: str) -> None:
        kind, value, _ = self.tokens[self.i]
        if kind != "punct" or value != punct:
            raise self.error(f"'{punct}'")
        self.i += 1

    def peek_punct(self, punct: str) -> bool:
        kind, value, _ = self.tokens[self.i]
        return kind == "punct" and value == punct

    def call(self) -> Call:
        kind, api, _ = self.tokens[self.i]
        if kind != "name":
            raise self.error("an API name")
        self.i += 1
        self.expect("(")
        args: list = []
        kwargs: dict = {}
        while not self.peek_punct(")"):
            kind, value, _ = self.tokens[self.i]
            # A name is never the last token (the end token follows), so it has a next one.
            nxt = self.tokens[self.i + 1] if kind == "name" else None
            if nxt is not None and nxt[0] == "punct" and nxt[1] == "=":
                if "." in value:
                    raise self.error("a keyword name without dots")
                if value in kwargs:
                    raise self.error(f"a keyword other than the repeated '{value}'")
                self.i += 2
                kwargs[value] = self.value()
            else:
                if kwargs:
                    raise self.error("a keyword argument (positional after keyword)")
                args.append(self.value())
            if self.peek_punct(","):
                self.i += 1
            elif not self.peek_punct(")"):
                raise self.error("',' or ')'")
        self.i += 1
        if self.tokens[self.i][0] != "end":
            raise self.error("end of input after ')'")
        return Call(api, tuple(args), kwargs)

    def items(self, close: str) -> list:
        """Comma-separated values up to ``close`` (trailing comma allowed)."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.i -= 1  # at the bracket that opened one level too many
            raise self.error(f"at most {MAX_NESTING} levels of nesting")
        out = []
        while not self.peek_punct(close):
            out.append(self.value())
            if self.peek_punct(","):
                self.i += 1
            elif not self.peek_punct(close):
                raise self.error(f"',' or '{close}'")
        self.i += 1
        self.depth -= 1
        return out

    def integer(self, tok: str, what: str) -> int:
        """int(tok) for the current token; too many digits is a syntax error there."""
        if len(tok.lstrip("-")) > MAX_INT_DIGITS:
            raise self.error(f"{what} of at most {MAX_INT_DIGITS} digits")
        return int(tok)

    def value(self) -> Any:
        kind, tok, _ = self.tokens[self.i]
        if kind == "number":
            if tok.lstrip("-").isdigit():
                value = self.integer(tok, "an integer")
            else:
                value = float(tok)  # never raises: a float too large for a double reads as inf
            self.i += 1
            return value
        if kind == "string":
            self.i += 1
            body = tok[1:-1]
            if "\\" in body:
                body = re.sub(r"\\(.)", r"\1", body)
            return body
        if kind == "name":
            self.i += 1
            if tok == "True":
                return True
            if tok == "False":
                return False
            if tok == "None":
                return None
            if tok == "list":
                self.expect("[")
                return self.items("]")
            if self.peek_punct("("):
                self.i += 1
                if tok == "Tensor":
                    return self.tensor()
                items = self.items(")")
                if tok == "tuple":
                    return tuple(items)
                if tok == "slice":
                    if len(items) != 3:
                        self.i -= 1
                        raise self.error("slice(start,stop,step) with three parts")
                    return slice(*items)
                if tok == "complex":
                    if len(items) != 2 or not all(_is_number(v) for v in items):
                        self.i -= 1
                        raise self.error("complex(real,imag) with two numbers")
                    if any(isinstance(v, Name) for v in items):
                        # Kept as written (complex(nan,math.inf)) so it formats back to itself;
                        # complex_value() gives the number.
                        return Constructor("complex", tuple(items))
                    try:
                        return complex(items[0], items[1])
                    except OverflowError:  # an integer part too large for a float
                        self.i -= 1
                        raise self.error("complex(real,imag) with numbers a float can hold") from None
                return Constructor(tok, tuple(items))
            return Name(tok)
        if kind == "punct" and tok == "-":
            # Only a named constant can follow a minus sign here (a negative number is one token).
            kind, tok, _ = self.tokens[self.i + 1]
            if kind != "name" or tok not in NAMED_CONSTANTS:
                self.i += 1
                raise self.error("a number or a named constant such as math.inf after '-'")
            self.i += 2
            return Name(tok, negated=True)
        if kind == "punct" and tok == "[":
            # A bare list; PaddleAPITest writes list[...] but accept [...] too.
            self.i += 1
            return self.items("]")
        raise self.error("a value")

    def tensor(self) -> TensorSpec:
        self.expect("[")
        dims = []
        while not self.peek_punct("]"):
            kind, tok, _ = self.tokens[self.i]
            if kind != "number" or not tok.isdigit():
                raise self.error("a non-negative integer dimension")
            dims.append(self.integer(tok, "a dimension"))
            self.i += 1
            if self.peek_punct(","):
                self.i += 1
            elif not self.peek_punct("]"):
                raise self.error("',' or ']'")
        self.i += 1
        self.expect(",")
        kind, tok, _ = self.tokens[self.i]
        if kind != "string":
            raise self.error('a dtype string like "float32"')
        self.i += 1
        if self.peek_punct(","):
            self.i += 1
        self.expect(")")
        return TensorSpec(tuple(dims), tok[1:-1])


def _is_number(value: Any) -> bool:
    """An int or float (not a bool), or a named numeric constant."""
    if isinstance(value, Name):
        return value.constant is not None
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def complex_value(value: Constructor) -> complex:
    """The number ``complex(real,imag)`` written with named constants stands for."""
    real, imag = (v.constant if isinstance(v, Name) else v for v in value.args)
    return complex(real, imag)


@lru_cache(maxsize=200_000)
def parse_config(text: str) -> Call:
    """Parse one config line (surrounding whitespace ignored). Cached by string."""
    return _Parser(text.strip()).call()


def parse_value(text: str) -> Any:
    p = _Parser(text.strip())
    v = p.value()
    if p.tokens[p.i][0] != "end":
        raise p.error("end of input")
    return v


# ---------------------------------------------------------------- formatter


def format_value(value: Any) -> str:
    if value is None or value is True or value is False:
        return repr(value)
    if isinstance(value, TensorSpec):
        return f'Tensor([{", ".join(map(str, value.shape))}],"{value.dtype}")'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # 'inf', '-inf', 'nan', '1e-06', '1000000.0'
    if isinstance(value, complex):
        return f"complex({value.real!r},{value.imag!r})"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "list[" + "".join(format_value(v) + "," for v in value) + "]"
    if isinstance(value, tuple):
        return "tuple(" + "".join(format_value(v) + "," for v in value) + ")"
    if isinstance(value, slice):
        return f"slice({format_value(value.start)},{format_value(value.stop)},{format_value(value.step)})"
    if isinstance(value, Name):
        return ("-" if value.negated else "") + value.name
    if isinstance(value, Constructor):
        return f"{value.name}({','.join(format_value(v) for v in value.args)})"
    raise TypeError(f"cannot format {type(value).__name__} as a config value")


def format_call(call: Call) -> str:
    parts = [format_value(v) + ", " for v in call.args]
    parts += [f"{k}={format_value(v)}, " for k, v in call.kwargs.items()]
    return f"{call.api}({''.join(parts)})"


def api_name(text: str) -> str:
    """The API name of a config line without parsing the arguments."""
    head = text.strip().split("(", 1)[0]
    return head.strip()
