"""Real configs for engine tests, read from the PaddleAPITest reports at run time (never copied)."""
from functools import lru_cache

import pytest

from apitester.engine.execute import run_config
from apitester.reports import iter_config_lines, reports_dir

REPORTS = reports_dir() / "reports"


def require_reports():
    """The reports directory (``reports/`` of the PaddleAPITest data); FAILS the test when it is missing."""
    if not REPORTS.is_dir():
        pytest.fail(f"PaddleAPITest reports not found at {REPORTS} (set PADDLEAPITEST_REPORTS to the data)")
    return REPORTS


@lru_cache(maxsize=None)
def _lines(lane: str) -> tuple[str, ...]:
    require_reports()
    return tuple(sorted({line for _, _, line in iter_config_lines([REPORTS / f"ci_ce_{lane}"])}))


def configs(api: str, contains: str = "", *, lane: str = "cpu", max_len: int | None = None) -> list[str]:
    """Distinct configs of `api` in the lane's reports containing `contains`, sorted.

    Missing data fails the test: a test that silently skips would hide the engine breaking."""
    found = [line for line in _lines(lane)
             if line.startswith(api + "(") and contains in line and (max_len is None or len(line) < max_len)]
    if not found:
        pytest.fail(f"no {api} config containing {contains!r} under {REPORTS}/ci_ce_{lane} "
                    "(set PADDLEAPITEST_REPORTS to the PaddleAPITest data)")
    return found


def verdict_of(config: str):
    verdict = run_config(config)
    assert not verdict.engine_error, verdict.message
    return verdict


def report_line(api: str, *fragments: str, lane: str = "cpu") -> str:
    """The one config of `api` in the lane's reports that contains every fragment (read at run time)."""
    found = [line for line in configs(api, lane=lane) if all(f in line for f in fragments)]
    assert len(found) == 1, f"{api} with {fragments}: {len(found)} report configs match, expected exactly 1"
    return found[0]
