"""A silent mapping (argument_mapping / layout: "changes no result") must give the plain Torch
call's result: each such spec's reference is run beside the plain Torch call (tests/engine_helpers/
silent_mappings.py derives it) on the API's real report configs (the three shortest of at most 1e6 elements per API, both lanes)."""
import tests.fake_specs.engine  # noqa: F401  (registers apitester_test.cumsum)
import pytest

from apitester.config import ConfigSyntaxError, parse_config
from apitester.specs import all_specs, get_spec
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
    return {api: spec for api, spec in all_specs().items() if api.startswith("paddle.") and spec.adaptations
            and all(a.kind in SILENT_KINDS for a in spec.adaptations)}


def _elements(line: str) -> int:
    try:
        return sum(t.numel for t in parse_config(line).tensors())
    except ConfigSyntaxError:
        return MAX_ELEMENTS + 1


def _samples(spec) -> list[str]:
    lines = {line for lane in ("cpu", "gpu") for line in _lines(lane)
             if any(line.startswith(name + "(") for name in spec.names)}
    small = sorted((line for line in lines if _elements(line) <= MAX_ELEMENTS), key=lambda line: (len(line), line))
    return small[:SAMPLES_PER_API] or WRITTEN_SAMPLES.get(spec.api, [])


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
    print(f"checked {len(checked)} silent specs; no plain call derived for {len(not_derivable)}: "
          + ", ".join(sorted(not_derivable)))
    assert len(checked) >= 38, sorted(checked)  # 38 of the 80 silent specs on 3.3.1's report configs
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


@pytest.mark.parametrize("api", ["paddle.cumprod", "paddle.prod", "paddle.Tensor.__getitem__", "paddle.scatter"])
def test_a_result_changing_mapping_is_declared_and_its_strict_layer_is_the_plain_call(api):
    spec = get_spec(api)
    assert "documented_semantics" in [a.kind for a in spec.visible_adaptations]
    assert spec.strict_torch is not None
    # the check above, run on the declared strict reference, sees the difference the declaration names
    differences = [check_config(spec, config) for config in _samples(spec)]
    assert any(differences), (api, differences)
