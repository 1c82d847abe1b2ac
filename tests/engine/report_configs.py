"""Moved to tests/engine_helpers/report_configs.py: import from `tests.engine_helpers.report_configs`.

Kept only for engine tests written before the move that still `from report_configs import ...`; delete it once
none does (grep -rn "from report_configs" tests)."""
from tests.engine_helpers.report_configs import (  # noqa: F401
    REPORTS, _lines, configs, report_line, require_reports, verdict_of)
