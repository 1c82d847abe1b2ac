"""The config grammar: every construct, canonical round trip, error columns."""

import math

import pytest

from apitester.config import (
    MAX_INT_DIGITS, MAX_NESTING, MAX_TOKENS, Call, ConfigSyntaxError, Constructor, Name, TensorSpec, format_call,
    format_value,
    parse_config, parse_value,
)


def test_positional_and_keyword_arguments():
    call = parse_config('paddle.clip(x=Tensor([3, 3],"float64"), min=Tensor([1],"float64"), max=None, )')
    assert call == Call("paddle.clip", (), {
        "x": TensorSpec((3, 3), "float64"), "min": TensorSpec((1,), "float64"), "max": None})
    call = parse_config('paddle.put_along_axis(Tensor([3, 5],"float32"), Tensor([2, 3],"int64"), '
                        'Tensor([2, 5],"float32"), 1, "assign", True, False, )')
    assert call.args[3:] == (1, "assign", True, False)
    assert call.kwargs == {}


@pytest.mark.parametrize("text, value", [
    ('Tensor([],"float32")', TensorSpec((), "float32")),
    ('Tensor([0, 3],"int64")', TensorSpec((0, 3), "int64")),
    ('Tensor([3276800],"bfloat16")', TensorSpec((3276800,), "bfloat16")),
    ("0", 0), ("-1", -1), ("12345678901234567890", 12345678901234567890),
    ("1.0", 1.0), ("-65504.0", -65504.0), ("1e-06", 1e-06), ("-3.4028234663852886e+38", -3.4028234663852886e38),
    ("inf", math.inf), ("-inf", -math.inf),
    ("complex(1.0,-2.5)", complex(1.0, -2.5)),
    ('"NCHW"', "NCHW"), ('""', ""), ('"i,j->ij"', "i,j->ij"),
    ("True", True), ("False", False), ("None", None),
    ("list[]", []), ("list[1,2,3,]", [1, 2, 3]),
    ('list[Tensor([5],"int64"),list[0,2,],]', [TensorSpec((5,), "int64"), [0, 2]]),
    ("tuple()", ()), ("tuple(64,-1,-1,)", (64, -1, -1)),
    ('tuple(Tensor([2, 3],"float32"),)', (TensorSpec((2, 3), "float32"),)),
    ("slice(None,None,None)", slice(None, None, None)), ("slice(1,-1,2)", slice(1, -1, 2)),
    ("Dtype(float16)", Constructor("Dtype", (Name("float16"),))),
    ("VarType(float32)", Constructor("VarType", (Name("float32"),))),
    ("type(numpy.float64)", Constructor("type", (Name("numpy.float64"),))),
    ("paddle.CPUPlace()", Constructor("paddle.CPUPlace", ())),
])
def test_every_value_construct_round_trips(text, value):
    parsed = parse_value(text)
    assert parsed == value
    assert type(parsed) is type(value)
    assert format_value(parsed) == text


def test_nan_parses_and_formats():
    value = parse_value("nan")
    assert math.isnan(value)
    assert format_value(value) == "nan"


@pytest.mark.parametrize("line", [
    # Forms of PaddleAPITest's wider config corpus: negated named constants, and named constants
    # inside complex(...).  Each must format back to itself.
    'paddle.full_like(Tensor([152113426, 5, 3],"float32"), -math.inf, )',
    'paddle.full(shape=list[2,3,], fill_value=complex(nan,math.inf), dtype="complex64", )',
    'paddle.full(shape=list[2,], fill_value=complex(-math.inf,-numpy.pi), )',
    'paddle.clip(Tensor([5],"float64"), min=-np.inf, max=math.e, )',
    'paddle.x(tuple(-1,-math.nan,math.tau,), )',
])
def test_named_constants_negated_and_inside_complex_round_trip(line):
    assert format_call(parse_config(line)) == line


def test_named_constants_stand_for_their_numbers():
    from apitester.inputs import plain_value

    assert parse_value("-math.inf") == Name("math.inf", negated=True)
    assert plain_value(parse_value("-math.inf")) == -math.inf
    assert plain_value(parse_value("np.pi")) == math.pi
    value = plain_value(parse_value("complex(nan,math.inf)"))
    assert isinstance(value, complex) and math.isnan(value.real) and value.imag == math.inf
    assert plain_value(parse_value("complex(-math.inf,-numpy.pi)")) == complex(-math.inf, -math.pi)
    assert plain_value(parse_value("float16")) == "float16"  # other names stay names


def test_a_config_with_named_constants_runs_to_a_verdict():
    from apitester.engine.execute import run_config

    verdict = run_config('paddle.clip(Tensor([5],"float64"), min=-math.inf, max=math.pi, )')
    assert verdict.status == "pass", verdict.message


def test_constructor_dtype_names():
    assert parse_value("Dtype(float16)").dtype_name == "float16"
    assert parse_value("VarType(float32)").dtype_name == "float32"
    assert parse_value("type(numpy.float64)").dtype_name == "float64"


@pytest.mark.parametrize("line", [
    'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )',
    'paddle.cast(Tensor([20, 500, 2],"int32"), dtype=Dtype(float16), )',
    'paddle.Tensor.__getitem__(Tensor([6, 5, 4],"int64"), list[list[0,2,0,1,3,],list[0,0,1,2,0,],], )',
    'paddle.sum(Tensor([2, 3, 4, 5, 6],"float16"), tuple(3,4,), keepdim=False, )',
    'paddle.einsum("i, i", Tensor([2],"float64"), Tensor([1],"float64"), )',
    'paddle.logit(Tensor([],"float32"), )',
    'paddle.nn.functional.interpolate(x=Tensor([2, 3, 6, 10],"float32"), scale_factor=list[1.7999999999999998,2.9999999999999996,], )',
    'paddle.empty()',
])
def test_report_lines_round_trip_exactly(line):
    assert format_call(parse_config(line)) == line


def test_whitespace_variants_reach_the_same_canonical_form():
    loose = ' paddle.clip( x = Tensor( [3 ,3] , "float64" ) , min = list[ 1 , 2 ] , max=None )  '
    canonical = 'paddle.clip(x=Tensor([3, 3],"float64"), min=list[1,2,], max=None, )'
    assert format_call(parse_config(loose)) == canonical
    assert parse_config(canonical) == parse_config(loose)
    assert format_call(parse_config(canonical)) == canonical


def test_escaped_quote_in_string_round_trips():
    value = parse_value(r'"a\"b\\c"')
    assert value == 'a"b\\c'
    assert parse_value(format_value(value)) == value


@pytest.mark.parametrize("text, column, expected", [
    ('paddle.x(Tensor([3],"float32"), $)', 33, "a value"),
    ('paddle.x("abc', 10, "a value"),
    ("paddle.x(1,,)", 12, "a value"),
    ("paddle.x(a=1, 2, )", 15, "a keyword argument (positional after keyword)"),
    ('paddle.x(Tensor([-1],"float32"), )', 18, "a non-negative integer dimension"),
    ("paddle.x(Tensor([3],float32), )", 21, 'a dtype string like "float32"'),
    ("paddle.x(1, ) extra", 15, "end of input after ')'"),
    ("(1)", 1, "an API name"),
    ("paddle.x(slice(1,2), )", 19, "slice(start,stop,step) with three parts"),
    ("paddle.x(list[1, 2)", 19, "',' or ']'"),
    ("paddle.x(1, 2", 14, "',' or ')'"),
    ("paddle.x(a=1, a=2, )", 15, "a keyword other than the repeated 'a'"),
    ("paddle.x(complex(1,\"a\"), )", 23, "complex(real,imag) with two numbers"),
    ("paddle.x(complex(1,float16), )", 27, "complex(real,imag) with two numbers"),
    ("paddle.x(-float16, )", 11, "a number or a named constant such as math.inf after '-'"),
    ("paddle.x(-, )", 11, "a number or a named constant such as math.inf after '-'"),
])
def test_syntax_errors_name_column_and_expectation(text, column, expected):
    with pytest.raises(ConfigSyntaxError) as info:
        parse_config(text)
    assert info.value.column == column
    assert info.value.expected == expected
    assert f"column {column}" in str(info.value)


def test_unterminated_string_is_named():
    with pytest.raises(ConfigSyntaxError) as info:
        parse_config('paddle.x("abc')
    assert info.value.found == "an unterminated string"


def test_tensors_are_collected_depth_first():
    call = parse_config('paddle.concat(list[Tensor([2],"float32"),Tensor([3],"float32"),], axis=0, )')
    assert [t.shape for t in call.tensors()] == [(2,), (3,)]


def test_every_report_line_parses_and_round_trips():
    """All config lines of the PaddleAPITest reports (read at run time, never copied)."""
    from apitester.reports import iter_config_lines, reports_dir

    root = reports_dir()
    if not (root / "reports").is_dir():
        pytest.fail(f"PaddleAPITest reports not found at {root}/reports (set PADDLEAPITEST_REPORTS)")
    seen = set()
    lines = 0
    for path, lineno, line in iter_config_lines([root]):
        lines += 1
        if line in seen:
            continue
        seen.add(line)
        try:
            call = parse_config(line)
        except ConfigSyntaxError as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{path}:{lineno}:{exc.column}: {exc}")
        assert format_call(call) == line, f"{path}:{lineno}"
    assert lines > 100_000 and len(seen) > 40_000


@pytest.mark.parametrize("text, column, expected", [
    ("paddle.x(" + "1" * 4301 + ", )", 10, f"an integer of at most {MAX_INT_DIGITS} digits"),
    ("paddle.x(-" + "1" * 4301 + ", )", 10, f"an integer of at most {MAX_INT_DIGITS} digits"),
    ('paddle.x(Tensor([' + "9" * 5000 + '],"float32"), )', 18, f"a dimension of at most {MAX_INT_DIGITS} digits"),
    ("paddle.x(" + "[" * 5000, 10 + MAX_NESTING, f"at most {MAX_NESTING} levels of nesting"),
    ("paddle.x(" + "list[" * 300, 10 + 5 * MAX_NESTING + 4, f"at most {MAX_NESTING} levels of nesting"),
    ("paddle.x(complex(" + "1" * 400 + ",0), )", 420, "complex(real,imag) with numbers a float can hold"),
    ("paddle.x(", 10, "a value"),
    ("paddle.x(a", 11, "',' or ')'"),
    ("paddle.x(" + "1," * MAX_TOKENS + ")", 9 + (MAX_TOKENS - 2) + 1, f"a config of at most {MAX_TOKENS} tokens"),
])
def test_absurd_configs_are_syntax_errors_never_other_exceptions(text, column, expected):
    """A >4,300-digit number (int() raises ValueError), deep nesting (RecursionError), a float overflow
    and a name at the very end (IndexError) are ConfigSyntaxErrors at their column, like any typo."""
    with pytest.raises(ConfigSyntaxError) as info:
        parse_config(text)
    assert (info.value.column, info.value.expected) == (column, expected)
    assert len(str(info.value)) < 200  # a 5,000-digit token is named, not repeated


def test_configs_up_to_the_limits_still_parse():
    assert parse_config("paddle.x(" + "1" * MAX_INT_DIGITS + ", )").args[0] == int("1" * MAX_INT_DIGITS)
    nested = parse_config("paddle.x(" + "list[" * MAX_NESTING + "]" * MAX_NESTING + ", )").args[0]
    for _ in range(MAX_NESTING - 1):
        nested = nested[0]
    assert nested == []
