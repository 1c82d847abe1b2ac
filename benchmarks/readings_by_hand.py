"""Ten "who is wrong" readings (issue 34) checked by hand against mpmath, outside the engine.

    .venv/bin/python benchmarks/readings_by_hand.py [--engine]

Each case calls Paddle and Torch directly on small explicit inputs, computes the true value (or derivative) with
mpmath at 40 significant digits from the documented formula, and prints both sides' distance to it and the side
that is off.  ``--engine`` also prints the engine's reading (``python -m apitester diagnose``'s ``reading``) of the
report config named beside each case, so the two can be compared; docs/measurements.md records one run on Paddle
3.3.1.  Nothing here imports apitester unless ``--engine`` is given: the truth is computed independently.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import mpmath
import numpy as np
import paddle
import torch

mpmath.mp.dps = 40
ROWS: list[tuple[str, str, str, str]] = []  # (case, hand reading, value, report config for --engine)


def err(side, truth) -> float:
    a, b = np.asarray(side, dtype=np.float64), np.asarray(truth, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        d = np.abs(a - b)
    return float(np.nanmax(np.where(np.isnan(a) != np.isnan(b), np.inf, d)))


def side_off(p_err: float, t_err: float, tol: float) -> str:
    if p_err <= tol and t_err <= tol:
        return "within_rounding"
    if p_err > tol and t_err <= tol:
        return "paddle_off"
    if t_err > tol and p_err <= tol:
        return "torch_off"
    return "both_off"


def record(case: str, p_err: float, t_err: float, tol: float, value: str, config: str) -> None:
    reading = side_off(p_err, t_err, tol)
    ROWS.append((case, reading, f"{value}; max error Paddle {p_err:.3g}, Torch {t_err:.3g}", config))


def grads(fn_paddle, fn_torch, *arrays, cotangent=None):
    """Both sides' gradients of sum(cotangent * f(inputs)) w.r.t. every input (float64)."""
    pt = [paddle.to_tensor(a, stop_gradient=False) for a in arrays]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    po, to = fn_paddle(*pt), fn_torch(*tt)
    g = np.ones(tuple(po.shape)) if cotangent is None else cotangent
    (po * paddle.to_tensor(g)).sum().backward()
    (to * torch.tensor(g)).sum().backward()
    # no gradient (Paddle's clip sets a Tensor bound's stop_gradient) reads as zeros, as the engine compares it
    return ([t.grad.numpy() if t.grad is not None else np.zeros(t.shape) for t in pt],
            [t.grad.numpy() if t.grad is not None else np.zeros(tuple(t.shape)) for t in tt])


def eigh_batched() -> None:
    a = np.array([[[0.7]], [[-1.3]]])
    g = np.array([[0.5], [2.0]])
    (p,), (t,) = grads(lambda x: paddle.linalg.eigh(x)[0], lambda x: torch.linalg.eigh(x)[0], a, cotangent=g)
    truth = g.reshape(2, 1, 1) * mpmath.mpf(1)  # the eigenvalue of [[a]] is a: d(lambda)/da = 1
    truth = np.asarray(truth, dtype=np.float64)
    record("eigh, batched 1x1, gradient of the eigenvalues", err(p, truth), err(t, truth), 1e-9,
           f"true gradient {truth.ravel().tolist()}, Paddle {p.ravel().tolist()}, Torch {t.ravel().tolist()}",
           'paddle.linalg.eigh(Tensor([2, 3, 3],"float64"), )')


def eigvalsh_batched() -> None:
    rng = np.random.RandomState(1)
    a = rng.randn(2, 3, 3)
    a = (a + a.transpose(0, 2, 1)) / 2
    g = rng.randn(2, 3)
    (p,), (t,) = grads(paddle.linalg.eigvalsh, torch.linalg.eigvalsh, a, cotangent=g)
    truth = np.zeros((2, 3))
    for b in range(2):  # d(sum g_k lambda_k)/dA_ii = sum_k g_k V_ik^2 (eigenvectors at 40 digits)
        values, vectors = mpmath.eigsy(mpmath.matrix(a[b].tolist()))
        order = sorted(range(3), key=lambda k: values[k])
        for i in range(3):
            truth[b, i] = float(sum(g[b, r] * vectors[i, k] ** 2 for r, k in enumerate(order)))
    p_diag, t_diag = np.diagonal(p, axis1=1, axis2=2), np.diagonal(t, axis1=1, axis2=2)
    record("eigvalsh, batched 3x3, gradient's diagonal", err(p_diag, truth), err(t_diag, truth), 1e-9,
           f"true diagonal {np.round(truth, 6).tolist()}", 'paddle.linalg.eigvalsh(x=Tensor([4, 5, 5],"float64"), )')


def pinv_hermitian_batched() -> None:
    a = np.array([[[0.8]], [[-2.5]]])
    (p,), (t,) = grads(lambda x: paddle.linalg.pinv(x, hermitian=True),
                       lambda x: torch.linalg.pinv(x, hermitian=True), a)
    truth = np.asarray([[[float(-1 / mpmath.mpf(v) ** 2)]] for v in (0.8, -2.5)])  # d(1/a)/da = -1/a^2
    record("pinv(hermitian=True), batched 1x1, gradient", err(p, truth), err(t, truth), 1e-9,
           f"true gradient {truth.ravel().tolist()}, Paddle {p.ravel().tolist()}",
           'paddle.linalg.pinv(Tensor([3, 5, 5],"float64"), rcond=1e-15, hermitian=True, )')


def pinv_hermitian_convention() -> None:
    a = np.array([[2.0, 0.5], [0.5, 1.0]])
    g = np.array([[1.0, 2.0], [0.5, -1.0]])  # a cotangent that is not symmetric, as the engine's random one
    (p,), (t,) = grads(lambda x: paddle.linalg.pinv(x, hermitian=True),
                       lambda x: torch.linalg.pinv(x, hermitian=True), a, cotangent=g)

    def f(i, j, h):  # sum(g * pinv) of the Hermitian part with A_ij moved by h (40 digits)
        m = mpmath.matrix(a.tolist())
        m[i, j] += h
        inv = mpmath.inverse((m + m.T) / 2)
        return sum(g[r, c] * inv[r, c] for r in range(2) for c in range(2))

    truth = np.array([[float(mpmath.diff(lambda h: f(i, j, h), 0)) for j in range(2)] for i in range(2)])
    herm = lambda g: (g + g.T) / 2  # noqa: E731
    p_h, t_h = err(herm(p), truth), err(herm(t), truth)
    reading = "convention" if p_h <= 1e-9 and t_h <= 1e-9 and err(p, t) > 1e-9 else side_off(p_h, t_h, 1e-9)
    ROWS.append(("pinv(hermitian=True), 2x2, gradient", reading,
                 f"Hermitian parts: Paddle {p_h:.3g}, Torch {t_h:.3g} off the derivative {truth.ravel().tolist()}; "
                 f"Paddle's gradient Hermitian: {np.allclose(p, p.T)}, Torch's: {np.allclose(t, t.T)}",
                 'paddle.linalg.pinv(x=Tensor([2, 2],"float64"), hermitian=True, )'))


def cholesky_solve_unread_triangle() -> None:
    factor = np.array([[1.5, 0.0], [0.4, 1.2]])  # lower: the function reads the lower triangle only
    b = np.array([[0.3], [-0.7]])
    (_, p), (_, t) = grads(lambda x, y: paddle.linalg.cholesky_solve(x, y, upper=False),
                           lambda x, y: torch.cholesky_solve(x, y, upper=False), b, factor)

    def f(h):  # the solution with the (unread) upper entry y[0, 1] moved by h: tril(y) is what is solved with
        y = mpmath.matrix(factor.tolist())
        y[0, 1] += h
        low = mpmath.matrix([[y[0, 0], 0], [y[1, 0], y[1, 1]]])
        return sum(mpmath.lu_solve(low * low.T, mpmath.matrix(b.tolist())))

    truth = float(mpmath.diff(f, 0))
    record("cholesky_solve, gradient at the unread upper entry", abs(p[0, 1] - truth), abs(t[0, 1] - truth), 1e-9,
           f"true derivative {truth}, Paddle {p[0, 1]}, Torch {t[0, 1]}",
           'paddle.linalg.cholesky_solve(x=Tensor([5, 4, 3],"float64"), y=Tensor([5, 4, 4],"float64"), )')


def embedding_padding() -> None:
    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    ids = np.array([[0, 2], [2, 1]])
    p = paddle.nn.functional.embedding(paddle.to_tensor(ids), paddle.to_tensor(w), padding_idx=2).numpy()
    t = torch.nn.functional.embedding(torch.from_numpy(ids), torch.from_numpy(w), padding_idx=2).numpy()
    truth = np.array([[[0.0] * 4 if i == 2 else [float(mpmath.mpf(float(v))) for v in w[i]] for i in row]
                      for row in ids])  # Paddle's documented function: an all-zero row where the id is padding_idx
    record("embedding(padding_idx=2), forward", err(p, truth), err(t, truth), 0.0,
           "the documented output has zero rows at the padding id",
           'paddle.nn.functional.embedding(Tensor([6, 3],"int32"), Tensor([10, 4],"float32"), padding_idx=5, )')


def mul_float16() -> None:
    x = np.array([0.0287, -0.05, 0.06, 0.0001], dtype=np.float16)
    p = (paddle.to_tensor(x) * 1000000.0).numpy()
    t = (torch.from_numpy(x) * 1000000.0).numpy()
    truth = np.array([float(mpmath.mpf(float(v)) * 10 ** 6) for v in x]).astype(np.float16)
    record("Tensor.__mul__(float16, 1e6), forward", err(p, truth), err(t, truth), 0.0,
           f"the exact product rounded to float16 {truth.tolist()}, Paddle {p.tolist()}",
           'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )')


def clip_min_gradient() -> None:
    x = np.array([0.1, 0.5, 0.9])
    lo = np.array([0.6])
    (_, p), (_, t) = grads(lambda a, m: paddle.clip(a, min=m), lambda a, m: torch.clamp(a, min=m), x, lo)
    truth = float(mpmath.diff(lambda h: sum(max(mpmath.mpf(v), mpmath.mpf(0.6) + h) for v in x), 0))
    record("clip(min=Tensor), gradient of min", err(p, [truth]), err(t, [truth]), 1e-9,
           f"true derivative {truth} (two elements clamped), Paddle {p.tolist()}, Torch {t.tolist()}",
           'paddle.clip(x=Tensor([3, 3],"float64"), min=Tensor([1],"float64"), max=None, )')


def diag_padding_value() -> None:
    x = np.array([0.3, -1.7])
    p = paddle.diag(paddle.to_tensor(x), offset=1, padding_value=1.1).numpy()
    t = torch.diag(torch.from_numpy(x), diagonal=1).numpy()
    t = np.where(np.eye(3, k=1, dtype=bool), t, 1.1)  # the spec's composed Torch call: diag, then the padding
    truth = np.full((3, 3), float(mpmath.mpf("1.1")))
    truth[0, 1], truth[1, 2] = x
    record("diag(padding_value=1.1), forward", err(p, truth), err(t, truth), 0.0,
           f"Paddle pads with {p[0, 0]!r} (1.1 rounded to float32), the value is {float(mpmath.mpf('1.1'))!r}",
           'paddle.diag(x=Tensor([2],"float64"), offset=1, padding_value=1.1, )')


def cosine_similarity_overflow() -> None:
    # the engine's shrunk edge draw (report config below, --draw edge:0@2): axis 0 has size 1, so each element is
    # its own vector and cos = x1 x2 / max(|x1| |x2|, eps); at element 2 |x1|^2 is over float64's range
    x1 = np.array([[[0.5275499065922291, 0.35474865244062026, -1.3407807929942597e+154]]])
    x2 = np.array([[-1.0, 0.0, 1.0]])
    (_, p), (_, t) = grads(lambda a, b: paddle.nn.functional.cosine_similarity(a, b, axis=0, eps=1e-8),
                           lambda a, b: torch.nn.functional.cosine_similarity(a, b, dim=0, eps=1e-8), x1, x2)

    def cos(h):  # element 2 at 40 digits, x2 moved by h (mpmath's range has no overflow)
        a, b = mpmath.mpf(x1[0, 0, 2]), mpmath.mpf(x2[0, 2]) + h
        return a * b / max(abs(a) * abs(b), mpmath.mpf("1e-8"))

    truth = float(mpmath.diff(cos, 0))
    record("cosine_similarity, |x1|^2 over float64's range, gradient of x2 at that element",
           err(p[0, 2], truth), err(t[0, 2], truth), 1e-9,
           f"true derivative {truth}, Paddle {p[0, 2]}, Torch {t[0, 2]} (element 1, x2 = 0, is the eps clamp: "
           f"each side's own documented placement of eps, a convention)",
           'paddle.nn.functional.cosine_similarity(Tensor([5, 1, 3],"float64"), Tensor([1, 3],"float64"), axis=0, '
           'eps=1e-08, )')


CASES = (eigh_batched, eigvalsh_batched, pinv_hermitian_batched, pinv_hermitian_convention,
         cholesky_solve_unread_triangle, embedding_padding, mul_float16, clip_min_gradient, diag_padding_value,
         cosine_similarity_overflow)


def engine_reading(config: str) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from apitester.diagnosis.diagnose import diagnose_config  # noqa: PLC0415  (only with --engine)

    d = diagnose_config(config, max_seconds=60)
    if not d.get("diagnosed"):  # passes the 1e-2 rule: the exact rule's closer reading (issue 35) instead
        from apitester.readings import run_with_readings  # noqa: PLC0415

        verdict = run_with_readings(config)
        return f"{d.get('reason')}; not exact, closer: {verdict.closer} ({verdict.closer_code or 'float64 oracle'})"
    reading = d.get("reading") or {}
    return f"{reading.get('reading')} ({reading.get('oracle') or reading.get('no_oracle') or ''})"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", action="store_true", help="print the engine's reading of each case's report config")
    args = p.parse_args()
    print(f"Paddle {paddle.__version__}, Torch {torch.__version__}, mpmath {mpmath.__version__} at {mpmath.mp.dps} digits")
    for case in CASES:
        case()
    for i, (case, reading, value, config) in enumerate(ROWS, 1):
        print(f"{i}. {case}: by hand {reading} — {value}")
        if args.engine:
            print(f"   the engine on {config}: {engine_reading(config)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
