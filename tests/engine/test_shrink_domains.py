"""Issue #44 item 7: shrinking stays in the spec's input domains.  A domain declares its rule as a test of values
(``inputs.keeps``), the same helper that draws by it; a shrink candidate whose inputs break it is never run.
Real paddle and torch."""
from diagnosis_helpers import EXTRA  # noqa: F401  (the apitester_diag.* specs and their register())
from diagnosis_test_specs import register
from apitester.diagnosis import shrink as shrinking
from apitester.inputs import Draw, indices
from apitester.specs.base import Spec

TYPICAL = Draw("typical", 0)
NN = "paddle.nn.functional."


def _paddle_take_off(arr, indices, axis):
    import paddle

    return paddle.take_along_axis(arr, indices, axis) * 1.05  # off at every precision: the failure stays


def _torch_take(arr, indices, axis, **_):
    import torch

    return torch.take_along_dim(arr, indices, dim=axis)


register(
    Spec(api="apitester_diag.take_unique_off", paddle=_paddle_take_off, torch=_torch_take,
         signature=lambda arr, indices, axis: None, backward=False,
         domains={"indices": indices(of="arr", axis="axis", unique=True)},
         note="test-only: take_along_axis 5% off on Paddle's side; indices drawn distinct along each row"),
)
TAKE = 'apitester_diag.take_unique_off(Tensor([4, 6],"float32"), Tensor([4, 3],"int64"), 1, )'
# the candidate "dims of size 6 -> 1": one position per row for three indices, so the domain draws duplicates
TAKE_NARROW = 'apitester_diag.take_unique_off(Tensor([4, 1],"float32"), Tensor([4, 3],"int64"), 1, )'


def test_a_draw_that_cannot_keep_distinct_indices_is_named():
    assert shrinking.domains_broken(TAKE, TYPICAL) == {}
    broken = shrinking.domains_broken(TAKE_NARROW, TYPICAL)
    assert list(broken) == ["indices"] and "repeated index" in broken["indices"]


def test_a_shrink_of_distinct_indices_never_runs_a_candidate_with_a_repeat(monkeypatch):
    ran = []
    real_probe = shrinking.probe

    def recording_probe(config, draw):  # the real probe, each candidate's (config, draw) written down
        ran.append((config, draw))
        return real_probe(config, draw)

    monkeypatch.setattr(shrinking, "probe", recording_probe)
    result = shrinking.shrink(TAKE, "typical:0")
    assert result.start.failure.status == "accuracy_error" and result.final.failure == result.start.failure
    assert ran and all(shrinking.domains_broken(config, draw) == {} for config, draw in ran), ran
    assert TAKE_NARROW not in [config for config, _ in ran] and result.rejected >= 1
    assert result.to_dict()["elements_after"] < result.to_dict()["elements_before"]
    # the repro keeps three distinct indices per row: the target axis kept at least three positions
    assert shrinking.domains_broken(result.config, Draw.parse(result.final_draw)) == {}


def test_ctc_labels_never_equal_the_blank_label_in_a_candidate():
    ctc = NN + 'ctc_loss(Tensor([6, 3, {c}],"float64"), Tensor([3, 3],"int32"), Tensor([3],"int64"), ' \
               'Tensor([3],"int64"), blank={blank}, reduction="none", )'
    assert shrinking.domains_broken(ctc.format(c=7, blank=0), TYPICAL) == {}
    assert shrinking.domains_broken(ctc.format(c=7, blank=3), TYPICAL) == {}
    # one class left: the labels can only be 0, the blank -- the candidate "dims of size 7 -> 1" breaks the domain
    broken = shrinking.domains_broken(ctc.format(c=1, blank=0), TYPICAL)
    assert list(broken) == ["labels"] and "blank=0" in broken["labels"]


def test_the_rule_is_the_domains_own_on_values_a_draw_gives():
    from apitester.engine import trial
    from apitester.inputs import InputTensor, domain_violations

    prepared = trial.prepare(TAKE)
    materialised = prepared.inputs_of(TYPICAL)
    drawn = materialised["indices"].array
    assert all(len(set(row)) == len(row) for row in drawn.tolist())  # what the domain draws keeps its rule
    assert domain_violations(prepared.parsed, prepared.spec.domains, materialised) == {}
    repeated = drawn.copy()
    repeated[:, 1] = repeated[:, 0]
    materialised["indices"] = InputTensor(repeated, materialised["indices"].dtype)
    assert list(domain_violations(prepared.parsed, prepared.spec.domains, materialised)) == ["indices"]
