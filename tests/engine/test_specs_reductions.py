"""Reductions, scans, sort/search, statistics: real configs from the PaddleAPITest reports,
run on real paddle and torch (CPU), with the verdicts we have understood.

Configs are read from the reports at run time (PADDLEAPITEST_REPORTS, else the default
location); each case picks the first distinct config of an API matching a pattern.
"""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache

import numpy as np
import pytest

from apitester.engine.execute import run_config
from apitester.inputs import DomainContext
from apitester.reports import iter_config_lines, reports_dir
from apitester.specs import base, get_spec
from apitester.specs import reductions
from tests.engine_helpers.report_configs import require_reports

REPORTS = reports_dir() / "reports"


@lru_cache(maxsize=None)
def _configs() -> dict[str, list[str]]:
    require_reports()
    by_api: dict[str, list[str]] = {}
    seen: set[str] = set()
    for _path, _lineno, line in iter_config_lines([REPORTS]):
        match = re.match(r"(paddle[\w.]*)\(", line)
        if match and line not in seen:
            seen.add(line)
            by_api.setdefault(match.group(1), []).append(line)
    return by_api


def config(api: str, pattern: str = "") -> str:
    """The first report config of `api` whose text matches the regex `pattern`."""
    for line in _configs().get(api, []):
        if re.search(pattern, line):
            return line
    raise AssertionError(f"no config of {api} matching {pattern!r} in {REPORTS}")


# (api, pattern) -> every one of these real configs agrees with the reference on this build.
# Most of these tasks are marked fixed upstream; the patterns pick the semantics that matter.
PASSING = [
    ("paddle.all", r'"complex64"'),                   # axis=tuple(): Paddle reduces every dim
    ("paddle.any", r'"int32"'),
    ("paddle.count_nonzero", r"axis=list\[1,3,\]"),    # list axis + keepdim
    ("paddle.max", r"axis=list\[0,\]"),
    ("paddle.cummax", r'dtype="int32"'),              # int32 indices
    ("paddle.cummin", r'dtype="int32"'),
    ("paddle.trapezoid", r'x=Tensor\(\[3\]'),          # 1-D x along axis 1 of a 3-D y
    ("paddle.cumulative_trapezoid", r"x=None"),
    ("paddle.sort", r'"float16"'),                    # 32000 distinct float16 values
    ("paddle.argsort", r"\[5, 12000\].*descending=True"),
    ("paddle.Tensor.argsort", r'"int64"'),
    ("paddle.std", r"list\[\]"),                      # 0-d, unbiased: NaN on both sides
    ("paddle.var", r'\[\],"float32"\), \)'),
    ("paddle.trace", r"axis1=2, axis2=-2"),
    ("paddle.unique", r"axis=0"),
    ("paddle.unique", r'dtype="int32"'),              # 1-D x: index (first occurrence), inverse, counts
    ("paddle.Tensor.median", r""),                    # 784000 elements, mode avg, with backward
    ("paddle.Tensor.topk", r"10173"),                 # 3.2M elements, k=10173, with backward
]


# With axis=None Paddle flattens x and documents a 1-D inverse where Torch's keeps x's shape:
# the plain Torch call disagrees on the inverse's shape (strict shape_mismatch), Paddle's
# documented form agrees (adapted pass) -> documented_difference, never pass.
DOCUMENTED_DIFFERENCES = [
    ("paddle.unique", r'\[\],"float32"'),              # 0-d input: 1-D inverse
    ("paddle.unique_consecutive", r"return_counts=True"),
]

# int32 stays int32 in Paddle (documented; an int32 product wraps), the plain Torch call promotes to
# int64: strict dtype_mismatch, adapted (Torch's result cast back) pass -> documented_difference.
KEPT_DTYPE = [("paddle.prod", r'"int32"'), ("paddle.cumprod", r'"int32"')]


# Paddle's documented result dtype where the plain Torch call gives another (histogram: int64 counts,
# torch.histc's float counts; an integer mean in x's dtype, truncated, where torch.mean refuses
# integers and the strict layer is the mean of x as float64): documented_difference, never pass.
DOCUMENTED_DTYPES = [
    ("paddle.histogram", r"min=-41, max=-5", "int64 (paddle) vs float64 (torch); values agree"),  # a float64 input
    ("paddle.histogram", r'"int32"', "int64 (paddle) vs float64 (torch); values agree"),  # ints binned as float64
    ("paddle.Tensor.mean", r'\[2, 28, 28\],"int32"', "int32 (paddle) vs float64 (torch)"),
]


@pytest.mark.parametrize("api,pattern,strict", DOCUMENTED_DTYPES, ids=[f"{a}[{p}]" for a, p, _ in DOCUMENTED_DTYPES])
def test_a_documented_result_dtype_is_a_documented_difference(api, pattern, strict):
    line = config(api, pattern)
    verdict = run_config(line)
    assert verdict.status == "documented_difference", (line, verdict.status, verdict.message)
    assert strict in verdict.message, verdict.message
    assert verdict.adapted["status"] == "pass", verdict.adapted
    assert "documented_semantics" in [a["kind"] for a in verdict.adaptations]


@pytest.mark.parametrize("api,pattern", KEPT_DTYPE, ids=[f"{a}[{p}]" for a, p in KEPT_DTYPE])
def test_an_int32_product_keeps_its_dtype_by_design(api, pattern):
    line = config(api, pattern)
    verdict = run_config(line)
    assert verdict.status == "documented_difference", (line, verdict.status, verdict.message)
    assert verdict.strict["status"] == "dtype_mismatch" and "int32 (paddle) vs int64 (torch)" in verdict.message
    assert verdict.adapted["status"] == "pass", verdict.adapted


@pytest.mark.parametrize("api,pattern", DOCUMENTED_DIFFERENCES, ids=[f"{a}[{p}]" for a, p in DOCUMENTED_DIFFERENCES])
def test_flattened_inverse_is_a_documented_difference(api, pattern):
    line = config(api, pattern)
    verdict = run_config(line)
    assert verdict.status == "documented_difference", (line, verdict.status, verdict.message)
    assert verdict.strict["status"] == "shape_mismatch", verdict.strict
    assert verdict.adapted["status"] == "pass", verdict.adapted
    assert [a["kind"] for a in verdict.adaptations] == ["documented_semantics"]


@pytest.mark.parametrize("api,pattern", PASSING, ids=[f"{a}[{p}]" for a, p in PASSING])
def test_report_config_passes(api, pattern):
    line = config(api, pattern)
    verdict = run_config(line)
    assert verdict.status == "pass", (line, verdict.status, verdict.message)
    assert not verdict.engine_error


def test_every_small_cpu_config_of_the_family_reaches_pass():
    """All CPU-task configs of the small APIs (topk's 3.2M-element configs left out for time)."""
    apis = ["paddle.all", "paddle.any", "paddle.count_nonzero", "paddle.max", "paddle.prod",
            "paddle.cumprod", "paddle.trapezoid", "paddle.cumulative_trapezoid", "paddle.std",
            "paddle.var", "paddle.trace", "paddle.unique", "paddle.unique_consecutive"]
    statuses, verdicts = {}, {}
    for api in apis:
        for line in _configs().get(api, []):
            verdicts[line] = run_config(line)
            statuses[line] = verdicts[line].status
    assert len(statuses) >= 40
    # the unique APIs' configs that ask for the inverse differ from Torch by design (its shape), and
    # so do cumprod's integer configs (Paddle keeps x's dtype; see test_int32_cumprod_is_a_documented_difference)
    by_design = {line for line, s in statuses.items()
                 if s == "documented_difference" and line.startswith("paddle.unique") and "return_inverse=True" in line}
    # int32 products keep Paddle's documented dtype where Torch promotes
    by_design |= {line for line, s in statuses.items()
                  if s == "documented_difference" and line.startswith(("paddle.prod(", "paddle.cumprod(")) and '"int32"' in line}
    assert by_design
    by_design |= {line for line, s in statuses.items()
                  if s == "documented_difference" and line.startswith("paddle.cumprod") and '"int' in line}
    # paddle.prod's gradient at an element equal to 0 is NaN (Paddle divides the product by x), where
    # Torch's is the product of the others: a real Paddle bug (3.0.0 and 3.3.1) that only the edge
    # draw's 0 reaches, so float prod configs reducing over such an element fail in their edge draw.
    zero_gradient = {line for line, v in verdicts.items()
                     if line.startswith("paddle.prod") and (v.status, v.direction) == ("accuracy_error", "backward")
                     and v.draw == {"kind": "edge", "seed": 0, "format": 2}}
    assert zero_gradient
    explained = by_design | zero_gradient
    assert {line: s for line, s in statuses.items() if s != "pass" and line not in explained} == {}


def _with_reference(monkeypatch, api: str, reference) -> None:
    spec = get_spec(api)
    # a plain spec with this reference: the strict layer is the one replaced
    replaced = dataclasses.replace(spec, torch=reference, strict_torch=None, strict_paddle=None, adaptations=())
    for name in spec.names:
        monkeypatch.setitem(base.REGISTRY, name, replaced)


def test_torch_native_semantics_would_be_caught(monkeypatch):
    """The same configs discriminate: Torch's own defaults differ from Paddle's and are flagged."""
    import torch

    all_config = config("paddle.all", r'"bool"')
    _with_reference(monkeypatch, "paddle.all", lambda x, axis=None, keepdim=False, **_:
                    torch.all(x, dim=tuple(axis), keepdim=keepdim))  # dim=() reduces nothing
    assert run_config(all_config).status == "shape_mismatch"

    cumprod_config = config("paddle.cumprod", r'"int32"')
    _with_reference(monkeypatch, "paddle.cumprod", lambda x, dim=None, **_: torch.cumprod(x, dim))
    verdict = run_config(cumprod_config)  # Torch promotes int32 to int64, Paddle keeps int32
    assert verdict.status == "dtype_mismatch", verdict.message

    median_config = config("paddle.Tensor.median")
    _with_reference(monkeypatch, "paddle.Tensor.median", lambda x, **_: torch.median(x))
    verdict = run_config(median_config)
    # the lower median where Paddle's mode='avg' averages the two middle values: the values
    # are 2/784000 apart (within tolerance), but the gradient goes to one element, not two
    assert verdict.status == "accuracy_error" and verdict.direction == "backward", verdict.message

    mean_config = config("paddle.Tensor.mean", r'"int32"')
    _with_reference(monkeypatch, "paddle.Tensor.mean", lambda x, **_: torch.mean(x.double()))
    assert run_config(mean_config).status == "dtype_mismatch"


def test_wrong_indices_or_gradients_are_caught(monkeypatch):
    import torch

    unique_config = config("paddle.unique", r'dtype="int32"')
    last_occurrence = reductions._unique

    def unique_last(x, **kw):
        out, index, inverse, counts = last_occurrence(x, **kw)
        n = x.numel()
        last = torch.full(out.shape, -1, dtype=torch.int64).scatter_reduce(
            0, inverse.long(), torch.arange(n), "amax")
        return out, last.to(index.dtype), inverse, counts

    _with_reference(monkeypatch, "paddle.unique", unique_last)
    verdict = run_config(unique_config)
    assert verdict.status == "accuracy_error" and verdict.output == "output 1", verdict.message

    prod_config = config("paddle.prod", r"keepdim=True")
    _with_reference(monkeypatch, "paddle.prod", lambda x, **kw:
                    reductions._prod(x, **kw) + (x.sum() - x.sum().detach()))  # same values, grad + 1
    verdict = run_config(prod_config)
    assert verdict.status == "accuracy_error" and verdict.direction == "backward", verdict.message


@pytest.mark.parametrize("dtype,n", [("float16", 32000), ("float16", 63487), ("bfloat16", 3000), ("float32", 50304),
                                     ("int8", 256), ("uint8", 256)])
def test_unique_domain_gives_distinct_values_in_the_tensor_precision(dtype, n):
    # The sort/top-k specs draw x from inputs.unique(); it keeps its promise on its own (a float16
    # tensor of 32000 elements, and even one with every finite float16 value).
    from apitester.inputs import round_to_bfloat16, unique

    ctx = DomainContext((1, n), dtype, np.random.default_rng(0), {}, {})
    values = unique()(ctx)
    stored = values.astype(np.float16) if dtype == "float16" else (
        round_to_bfloat16(values) if dtype == "bfloat16" else values.astype(dtype))
    assert stored.shape == (1, n)
    assert np.unique(stored).size == n
    assert np.isfinite(stored).all()


@pytest.mark.parametrize("dtype,n,available", [("float16", 63488, 63487), ("bfloat16", 65281, 65279),
                                               ("int8", 257, 256), ("bool", 3, 2)])
def test_unique_domain_refuses_more_elements_than_the_dtype_has_values(dtype, n, available):
    from apitester.inputs import unique

    ctx = DomainContext((n,), dtype, np.random.default_rng(0), {}, {})
    with pytest.raises(ValueError, match=f"{dtype} has only {available} distinct finite values, the tensor needs {n}"):
        unique()(ctx)
