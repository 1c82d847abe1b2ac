"""Shrinking's invariants: the same failure, deterministic, bounded; equal dimensions move together;
distinct-failure signatures and grouping.  Real paddle and torch."""
from diagnosis_helpers import MUL_FP16
from apitester.diagnosis.diagnose import diagnose_config, failure_signature, group_failures
from apitester.inputs import Draw
from apitester.diagnosis.shrink import Budget, probe, shrink

MATMUL = 'apitester_diag.matmul_off(Tensor([6, 4],"float32"), Tensor([4, 6],"float32"), )'


def comparable(result) -> dict:
    data = result.to_dict()
    data.pop("seconds")
    return data


def test_the_shrunk_config_has_the_same_failure_and_is_smaller():
    result = shrink(MATMUL, "typical:0")
    assert result.stopped == "fixpoint"
    assert result.final.failure == result.start.failure
    assert result.failure == {"status": "accuracy_error", "direction": "forward", "output": "output 0",
                              "reading": "paddle_off"}
    # inner size and the outer sizes moved together: one element each, and matmul still runs
    assert result.config == 'apitester_diag.matmul_off(Tensor([1, 1],"float32"), Tensor([1, 1],"float32"), )'
    assert (result.to_dict()["elements_before"], result.to_dict()["elements_after"]) == (48, 2)
    assert probe(result.config, Draw("typical", 0)).failure == result.start.failure


def test_shrinking_is_deterministic():
    assert comparable(shrink(MATMUL, "typical:0")) == comparable(shrink(MATMUL, "typical:0"))
    assert comparable(shrink(MUL_FP16, "typical:0")) == comparable(shrink(MUL_FP16, "typical:0"))


def test_shrinking_is_bounded_by_trials_and_seconds():
    by_trials = shrink(MATMUL, "typical:0", Budget(max_trials=1, max_seconds=600))
    assert by_trials.trials == 1 and by_trials.stopped == "max_trials"
    by_seconds = shrink(MATMUL, "typical:0", Budget(max_trials=100, max_seconds=0))
    assert by_seconds.trials == 0 and by_seconds.stopped == "max_seconds" and by_seconds.config == MATMUL


def test_a_step_that_changes_the_failure_is_not_kept():
    # [1, 8] * 1e6 would overflow everywhere on both sides: the paddle_off reading needs an element
    # whose float16 product is finite, so the shrink stops before losing it
    result = shrink(MUL_FP16, "typical:0")
    assert result.failure["reading"] == "paddle_off"
    assert result.final.elements < 64


def test_a_free_size_argument_shrinks_with_the_tensors():
    config = 'paddle.nn.functional.one_hot(Tensor([4],"int64"), num_classes=10, )'
    result = shrink(config, "typical:0")
    assert result.failure["status"] == "dtype_mismatch"
    assert result.config == 'paddle.nn.functional.one_hot(Tensor([1],"int64"), num_classes=1, )'


def test_a_passing_config_is_not_shrunk():
    result = shrink('paddle.tanh(Tensor([4],"float32"), )', "typical:0")
    assert result.stopped == "not_failing" and result.trials == 0


def test_signatures_group_configs_that_shrink_to_the_same_failure():
    wide = diagnose_config('apitester_diag.paddle_off(Tensor([16, 8],"float32"), )')
    narrow = diagnose_config('apitester_diag.paddle_off(Tensor([4, 2],"float32"), )')
    other = diagnose_config('apitester_diag.torch_off(Tensor([3],"float32"), )')
    # the shrunk shapes keep their rank: [1, 1] and [1] are different signatures
    assert wide["signature"] == narrow["signature"] == failure_signature(narrow)
    assert "paddle_off" in wide["signature"]["key"] and "float32[1,1]" in wide["signature"]["key"]
    groups = group_failures([wide, other, narrow, {"diagnosed": False, "config": "x", "api": "x"}])
    assert [g["count"] for g in groups] == [2, 1]
    assert groups[0]["representative"] == narrow["config"]  # same shrunk size: the shorter config
    assert groups[0]["configs"] == [narrow["config"], wide["config"]]


def test_a_candidate_whose_shapes_break_the_specs_relation_is_never_run():
    """rnnt_loss's labels [B, U] beside logits [B, T, U+1, V]: a candidate cutting U+1 alone made Paddle's
    warp-rnnt read past the labels and corrupt the diagnosing process's heap (3.3.1).  A spec's shapes_agree
    rejects such candidates before they run; the shrink still reaches a smaller config that keeps the relation."""
    import diagnosis_test_specs as specs

    specs.PAIR_SHAPES_SEEN.clear()
    result = shrink('apitester_diag.pair_off(Tensor([4, 6],"float32"), Tensor([4, 7],"float32"), )', "typical:0")
    assert result.failure["status"] == "accuracy_error"
    assert result.rejected > 0  # x's 6 or y's 7 cut alone: never run
    assert specs.PAIR_SHAPES_SEEN and all(y == (*x[:-1], x[-1] + 1) for x, y in specs.PAIR_SHAPES_SEEN)
    assert result.config == 'apitester_diag.pair_off(Tensor([1, 6],"float32"), Tensor([1, 7],"float32"), )'
    assert result.to_dict()["rejected"] == result.rejected


def test_rnnt_losss_shapes_relation_names_what_breaks_it():
    from apitester.specs import get_spec

    agree = get_spec("paddle.nn.functional.rnnt_loss").shapes_agree
    assert agree(input=(3, 4, 3, 3), label=(3, 2), input_lengths=(3,), label_lengths=(3,)) is None
    assert agree(input=(1, 4, 1, 1), label=(1, 2), input_lengths=(1,), label_lengths=(1,)) == (
        "label [1, 2] is not [B, U] = [1, 0] for input [1, 4, 1, 1]")
    assert agree(input=(3, 4, 3, 3), label=(3, 2), input_lengths=(1,), label_lengths=(3,)) == (
        "input_lengths [1] is not [B] = [3]")


def test_a_cut_that_would_keep_ids_drawn_for_a_larger_table_is_refused():
    """embedding's ids are drawn below the weight's rows (a domain reading another argument).  A cut keeping the
    ids' values while the weight is cut to fewer rows would index past the table: Paddle 3.3.1's CPU kernel
    segfaulted the diagnosing process on it.  The cut is refused (CutBreaksDomain, the candidate's own draw is
    tried instead); cutting the ids alone keeps valid values."""
    import numpy as np
    import pytest

    from apitester.inputs import CutBreaksDomain
    from apitester.diagnosis.shrink import draw_inputs, prepare_strict

    api = "paddle.nn.functional.embedding"
    both = f'{api}(Tensor([1, 3],"int64"), weight=Tensor([2, 4],"float32"), )'
    with pytest.raises(CutBreaksDomain, match="the values of x depend on other arguments, and the cut changes weight"):
        draw_inputs(prepare_strict(both), Draw.parse("typical:0@2/4+0,6+0;50+0,4+0"))
    ids_only = f'{api}(Tensor([1, 3],"int64"), weight=Tensor([50, 4],"float32"), )'
    inputs = draw_inputs(prepare_strict(ids_only), Draw.parse("typical:0@2/4+0,6+0;50+0,4+0"))
    ids = np.asarray(inputs["x"].array)
    assert ids.shape == (1, 3) and ids.max() < 50
    result = shrink(f'{api}(Tensor([16, 173],"int64"), weight=Tensor([337, 16],"float32"), padding_idx=0, )',
                    "typical:0@2")
    assert result.failure["status"] == "accuracy_error" and result.final.elements < 16 * 173 + 337 * 16
