"""Per-config overhead of run_config on tiny configs (paddle+torch imported once).

Usage: python benchmarks/run_overhead.py [N]
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apitester.engine.execute import frameworks, run_config  # noqa: E402

CONFIGS = [
    'paddle.clip(Tensor([5],"float64"), min=0, )',
    'paddle.logit(Tensor([],"float32"), )',
    'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )',
    'paddle.sum(Tensor([2, 3, 4, 5, 6],"float16"), tuple(3,4,), keepdim=False, )',
]


def main(n: int) -> None:
    t0 = time.perf_counter()
    frameworks()
    print(f"import paddle+torch: {time.perf_counter() - t0:.2f} s")
    for config in CONFIGS:
        run_config(config)  # warm caches
        times = []
        for seed in range(n):
            start = time.perf_counter()
            run_config(config, seed=seed)
            times.append(time.perf_counter() - start)
        print(f"median {statistics.median(times) * 1000:.2f} ms  p90 {sorted(times)[int(0.9 * n)] * 1000:.2f} ms  {config}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
