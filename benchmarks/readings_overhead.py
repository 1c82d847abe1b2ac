"""The time the exact rule's readings add (#35): the same configs run in one process with and without them.

Each config runs through ``execute.run_config`` (the verdict alone) and ``readings.run_with_readings`` (plus the
stability re-run and the float64 oracle of a config that is not exact), alternately, after one warm-up run of each;
prints per config both times, whether it was exact and its readings, then the whole set's ratio (with ÷ without).

Usage: python benchmarks/readings_overhead.py FILE_OF_CONFIGS [LIMIT]   (one config per line)
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apitester.engine.execute import frameworks, run_config  # noqa: E402
from apitester.readings import run_with_readings  # noqa: E402


def timed(fn, config):
    start = time.perf_counter()
    verdict = fn(config)
    return time.perf_counter() - start, verdict


def main(path: str, limit: int | None) -> None:
    configs = [line.strip() for line in Path(path).read_text().splitlines() if line.strip()][:limit]
    frameworks()
    if configs:
        run_config(configs[0]), run_with_readings(configs[0])  # warm-up
    without = with_readings = 0.0
    for config in configs:
        plain, _ = timed(run_config, config)
        full, verdict = timed(run_with_readings, config)
        without, with_readings = without + plain, with_readings + full
        print(f"{plain:8.3f} s {full:8.3f} s  exact={verdict.exact} stable={verdict.stable} "
              f"closer={verdict.closer or verdict.closer_skipped[:30] or '-'}  {config[:100]}", flush=True)
    ratio = with_readings / without if without else float("nan")
    print(f"{len(configs)} configs: {without:.1f} s without the readings, {with_readings:.1f} s with them, "
          f"ratio {ratio:.2f}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else None)
