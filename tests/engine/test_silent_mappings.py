"""A silent mapping (argument_mapping / layout: "changes no result") must give the plain Torch
call's result: each such spec's reference is run beside the plain Torch call (tests/engine_helpers/
silent_mappings.py derives it) on the API's real report configs (the three shortest of at most 1e6 elements per API, both lanes, and the shortest of every other
combination of tensor dtypes)."""
import dataclasses

import tests.fake_specs.engine  # noqa: F401  (registers apitester_test.cumsum)
import pytest

from apitester.config import ConfigSyntaxError, parse_config
from apitester.specs import engine_specs, get_spec
from apitester.specs.base import SILENT_KINDS

from tests.engine_helpers.report_configs import _lines
from tests.engine_helpers.silent_mappings import NotDerivable, check_config

SAMPLES_PER_API = 3
MAX_ELEMENTS = 1_000_000  # report configs larger than this are left out (scatter's GPU configs have 2.8e9)
# Written configs for APIs whose report configs are all too large (the spec's own sample).
WRITTEN_SAMPLES = {
    "paddle.scatter": ['paddle.scatter(Tensor([4, 3],"float32"), Tensor([9],"int64"), Tensor([9, 3],"float32"), '
                       'overwrite=False, )'],
}


def _silent_specs():
    return {api: spec for api, spec in engine_specs().items() if spec.adaptations
            and all(a.kind in SILENT_KINDS for a in spec.adaptations)}


def _elements(line: str) -> int:
    try:
        return sum(t.numel for t in parse_config(line).tensors())
    except ConfigSyntaxError:
        return MAX_ELEMENTS + 1


def _dtypes(line: str) -> tuple:
    return tuple(t.dtype for t in parse_config(line).tensors())


def _samples(spec) -> list[str]:
    """The three shortest report configs, and the shortest of every other combination of tensor
    dtypes (a mapping that casts — promotion of mixed float16/float32, integers — shows only there)."""
    lines = {line for lane in ("cpu", "gpu") for line in _lines(lane)
             if any(line.startswith(name + "(") for name in spec.names)}
    small = sorted((line for line in lines if _elements(line) <= MAX_ELEMENTS), key=lambda line: (len(line), line))
    chosen = small[:SAMPLES_PER_API]
    seen = {_dtypes(line) for line in chosen}
    for line in small[SAMPLES_PER_API:]:
        if _dtypes(line) not in seen:
            seen.add(_dtypes(line))
            chosen.append(line)
    return chosen or WRITTEN_SAMPLES.get(spec.api, [])


def test_every_silent_mapping_leaves_the_plain_torch_result_unchanged():
    checked, not_derivable, changed = set(), {}, []
    for api, spec in sorted(_silent_specs().items()):
        for config in _samples(spec):
            try:
                difference = check_config(spec, config)
            except NotDerivable as exc:
                not_derivable.setdefault(api, str(exc)[:120])
                continue
            checked.add(api)
            if difference:
                changed.append(f"{config}: {difference}")
    assert changed == [], "silent mappings that change the result (declare them for what they are):\n" + "\n".join(changed)
    # The specs whose plain call is derived (same-named Torch callable, or silent_mappings.PLAIN_CALLS)
    # and checked; the rest compose several Torch ops (pools with -inf padding, conv padding forms,
    # Paddle-only APIs) and are listed by `pytest -rA`.
    unchecked = sorted(set(not_derivable) - checked)
    print(f"checked {len(checked)} of {len(_silent_specs())} silent specs; no plain call derived for "
          f"{len(unchecked)}: " + ", ".join(unchecked))
    # 61 of the 74 silent specs on the report configs; the 13 others have no Torch counterpart
    # (send_ue_recv, strided_slice, deform_conv2d, ...) or only Paddle-only argument values
    # (a logical shift, diag's padding_value, hardsigmoid's slope, "SAME" padding)
    assert len(checked) >= 61, sorted(checked)
    # the five the issue named: cumprod and __getitem__/scatter are no longer silent; concat and
    # tensordot stay silent and are checked here
    assert {"paddle.concat", "paddle.tensordot"} <= checked
    assert {"paddle.cumprod", "paddle.Tensor.__getitem__", "paddle.scatter", "paddle.prod"}.isdisjoint(_silent_specs())


def test_a_silent_mapping_that_changes_the_result_is_refused():
    spec = get_spec("apitester_test.cumsum")
    assert [a.kind for a in spec.adaptations] == ["argument_mapping"]
    # int32: the plain torch.cumsum gives int64, the "mapping" casts back to int32
    difference = check_config(spec, 'apitester_test.cumsum(Tensor([3, 4],"int32"), 0)')
    assert difference is not None and difference.startswith("dtype_mismatch"), difference
    assert "int32 (paddle) vs int64 (torch)" in difference
    # float32: both give float32 with equal values, so the same check accepts it
    assert check_config(spec, 'apitester_test.cumsum(Tensor([3, 4],"float32"), 0)') is None


@pytest.mark.parametrize("api, config, refusal", [
    ("paddle.Tensor.__matmul__", 'paddle.Tensor.__matmul__(Tensor([1, 20, 4],"float32"), Tensor([4, 32],"float16"), )',
     "same dtype"),
    ("paddle.nn.functional.linear",
     'paddle.nn.functional.linear(x=Tensor([1, 10],"float16"), weight=Tensor([10, 10],"float32"), bias=None, )',
     "same dtype"),
    ("paddle.nn.functional.conv1d", 'paddle.nn.functional.conv1d(Tensor([2, 4, 8],"float32"), Tensor([3, 4, 3],"float16"), '
     'bias=Tensor([3],"float16"), padding=1, )', "should be the same"),
])
def test_a_cast_that_makes_a_refused_call_run_is_not_silent(api, config, refusal):
    """Torch refuses mixed float16/float32 operands: a reference that promotes them changes the
    result (from no result to one), so these specs declare it (reference_precision, shown in every
    verdict) and are no longer silent; the check, run as if the declaration were silent, says why."""
    spec = get_spec(api)
    assert api not in _silent_specs()
    assert "reference_precision" in [a.kind for a in spec.visible_adaptations]
    silent_twin = dataclasses.replace(spec, adaptations=tuple(a for a in spec.adaptations if a.kind in SILENT_KINDS))
    difference = check_config(silent_twin, config)
    assert difference is not None and difference.startswith("torch_error") and refusal in difference, difference
    same_dtype = config.replace('"float16"', '"float32"')
    assert check_config(silent_twin, same_dtype) is None  # one dtype: the plain call, unchanged


@pytest.mark.parametrize("api", ["paddle.cumprod", "paddle.prod", "paddle.Tensor.__getitem__", "paddle.scatter",
                                 "paddle.Tensor.mean", "paddle.histogram"])
def test_a_result_changing_mapping_is_declared_and_its_strict_layer_is_the_plain_call(api):
    spec = get_spec(api)
    assert "documented_semantics" in [a.kind for a in spec.visible_adaptations]
    assert spec.strict_torch is not None
    # the check above, run on the declared strict reference, sees the difference the declaration names
    differences = [check_config(spec, config) for config in _samples(spec)]
    assert any(differences), (api, differences)
