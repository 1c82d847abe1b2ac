"""Three "who is closer" readings (issue 35) checked by hand: Paddle and Torch called directly, the true value
computed with NumPy float64 outside the engine, each side's RMSE to it.

    .venv/bin/python benchmarks/closer_by_hand.py

Compare with the engine's reading of the same configs (``python -m apitester --json '<config>'``: ``closer``,
``paddle_rmse``, ``torch_rmse``), recorded in docs/measurements.md:

1. ``paddle.diag(x=Tensor([2],"float64"), offset=1, padding_value=1.1, )`` — Paddle pads with 1.1 rounded to
   float32 (1.100000023841858): paddle_off, RMSE 2.10e-8 over the 3x3 output, Torch's composed call exact;
2. ``paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )`` — Paddle overflows to inf where the product
   rounds to a finite float16: paddle_off;
3. ``paddle.nn.functional.embedding(..., padding_idx=...)`` — Paddle's documented output zeroes the padding rows,
   Torch returns the weight row: torch_off against the documented function (a convention, read as Torch off the
   documented value).
"""
import numpy as np
import paddle
import torch


def rmse(a, b) -> float:
    return float(np.sqrt(np.mean((np.asarray(a, np.float64) - b) ** 2)))


def main() -> None:
    x = np.array([0.3, -1.7], dtype=np.float64)
    p = paddle.diag(paddle.to_tensor(x), offset=1, padding_value=1.1).numpy()
    t = torch.diag(torch.from_numpy(x), diagonal=1).numpy()
    t = np.where(np.eye(3, k=1, dtype=bool), t, 1.1)  # the spec's composed Torch call: diag, then the padding value
    true = np.full((3, 3), 1.1)
    true[0, 1], true[1, 2] = x
    print(f"diag: Paddle pads with {p[0, 0]!r}; RMSE Paddle {rmse(p, true):.6g}, Torch {rmse(t, true):.6g}")

    x16 = np.array([0.0287, -0.05, 0.06, 0.0001], dtype=np.float16)
    p = (paddle.to_tensor(x16) * 1000000.0).numpy()
    t = (torch.from_numpy(x16) * 1000000.0).numpy()
    true = (x16.astype(np.float64) * 1e6).astype(np.float16)
    print(f"mul: Paddle {p}, Torch {t}, float64 product rounded to float16 {true}")

    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    ids = np.array([[0, 2], [2, 1]])
    p = paddle.nn.functional.embedding(paddle.to_tensor(ids), paddle.to_tensor(w), padding_idx=2).numpy()
    t = torch.nn.functional.embedding(torch.from_numpy(ids), torch.from_numpy(w), padding_idx=2).numpy()
    true = w[ids].astype(np.float64)
    true[ids == 2] = 0.0
    print(f"embedding: RMSE Paddle {rmse(p, true):.6g}, Torch {rmse(t, true):.6g}")


if __name__ == "__main__":
    main()
