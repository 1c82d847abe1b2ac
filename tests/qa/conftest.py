# The browser and page fixtures of the chart tests (Debian's chromium through Playwright).
from tests.charts.conftest import browser, page  # noqa: F401
