"""Real paddle 3.3.1 + torch 2.13 (CPU) runs of the cov-misc linalg specs.

Configs are read from the PaddleAPITest reports at run time (PADDLEAPITEST_REPORTS); each
expected verdict was checked by hand and the reason is written beside it.
"""

import numpy as np

from apitester.specs import get_spec

from tests.engine_helpers.report_configs import configs, verdict_of


def test_eigh_invariants_pass_for_every_report_config():
    # Eigenvectors compared as |V| (sign/phase gauge): all 15 CPU configs agree, real and
    # complex, UPLO L and U, forward and backward.
    for config in configs("paddle.linalg.eigh"):
        v = verdict_of(config)
        assert v.status == "pass", (config, v.message)


def test_eigh_batched_real_backward_is_wrong_in_paddle():
    # A GPU-task config (run here on the CPU): the batched real gradient of Paddle's eigh
    # disagrees with central finite differences (Torch agrees with them to 1e-9).
    v = verdict_of('paddle.linalg.eigh(Tensor([4, 4, 4],"float64"), "L", )')
    assert (v.status, v.direction, v.output) == ("accuracy_error", "backward", "grad x")


def test_eigvals_sorted_before_comparing():
    # The general eigenvalue order is undefined; after sorting both sides agree.
    for config in configs("paddle.linalg.eigvals", "[6, 6]"):
        assert verdict_of(config).status == "pass", config


def test_eigvalsh_batched_real_backward_is_wrong_in_paddle():
    # Verified against central finite differences: Torch's gradient matches them to 1e-9,
    # Paddle's batched real gradient is off (a single matrix is right) -> a real bug.
    v = verdict_of('paddle.linalg.eigvalsh(x=Tensor([4, 5, 5],"float64"), )')
    assert (v.status, v.direction, v.output) == ("accuracy_error", "backward", "grad x")
    assert verdict_of('paddle.linalg.eigvalsh(x=Tensor([5, 10, 10],"complex128"), )').status == "pass"


def test_pinv_hermitian_gradient_compared_on_its_hermitian_part():
    # Unbatched: Paddle's symmetric gradient and Torch's lopsided one share the Hermitian
    # part -> the adapted layer passes, but the plain Torch call's gradient differs, and the
    # strict layer (what the board's tasks mean) says so: a convention is not a fix.
    # Batched: Paddle's gradient is wrong even on its Hermitian part: both layers fail.
    v = verdict_of('paddle.linalg.pinv(Tensor([5, 5],"float64"), rcond=1e-15, hermitian=True, )')
    assert (v.status, v.direction) == ("accuracy_error", "backward"), v.message
    assert v.adapted["status"] == "pass" and [a["kind"] for a in v.adaptations] == ["gradient_convention"]
    v = verdict_of('paddle.linalg.pinv(x=Tensor([4, 2, 2],"float64"), hermitian=True, )')
    assert (v.status, v.direction) == ("accuracy_error", "backward")
    assert (v.adapted["status"], v.adapted["direction"]) == ("accuracy_error", "backward")


def test_matrix_rank_tolerance_forms_all_reach_a_verdict():
    # tol / atol / rtol as floats, tensors and mixed: every report config agrees.
    statuses = {verdict_of(c).status for c in configs("paddle.linalg.matrix_rank", "Tensor([3, 4")}
    assert statuses == {"pass"}


def test_lstsq_rank_dtype_differs():
    # Paddle returns rank as int32, Torch as int64 (the values agree): dtype_mismatch.
    v = verdict_of('paddle.linalg.lstsq(Tensor([5, 4],"float64"), Tensor([5, 3],"float64"), rcond=1e-15, driver="gelsd", )')
    assert v.status == "dtype_mismatch" and "int32 (paddle) vs int64 (torch)" in v.message


def test_norm_and_cond():
    for config in configs("paddle.linalg.norm") + configs("paddle.linalg.cond"):
        assert verdict_of(config).status == "pass", config


def test_tensor_cholesky_solve_matches_the_report():
    # Same as paddle.linalg.cholesky_solve: Paddle's grad of the factor y is triangular,
    # Torch's is dense; the report saw exactly this backward difference.
    v = verdict_of('paddle.Tensor.cholesky_solve(x=Tensor([4, 3],"float64"), y=Tensor([4, 4],"float64"), )')
    assert (v.status, v.output) == ("accuracy_error", "grad y")
    grid = np.array(v.diff_map)
    assert np.all(np.tril(grid) < 1e-9) and np.triu(grid, 1).max() > 0.01


def test_svd_lowrank_statistical_check():
    v = verdict_of('paddle.linalg.svd_lowrank(Tensor([3, 100, 40],"float64"), q=6, )')
    assert v.status == "pass" and v.statistical, v.message
    assert "reconstruction error" in v.message


def test_svd_lowrank_check_rejects_bad_factors():
    check = get_spec("paddle.linalg.svd_lowrank").check
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (30, 12))
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    good = (u[:, :4], s[:4], vh[:4].T, a)
    assert check(good, good, {})[0]
    inflated = (u[:, :4], s[:4] * 1.5, vh[:4].T, a)  # above the true singular values
    ok, message = check(inflated, good, {})
    assert not ok and "exceeds the true singular values" in message
    skewed = (u[:, :4] + 0.1, s[:4], vh[:4].T, a)  # U not orthonormal
    ok, message = check(skewed, good, {})
    assert not ok and "not orthonormal" in message
