"""Serve plotly.js from the installed plotly package as the static file `plotly/plotly.min.js`.

No CDN: many users sit behind firewalls, and the bundled file always matches the Python plotly
version that built the figures. Only that one file is exposed (not the package's datasets).
"""
from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = "plotly/plotly.min.js"
_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyJsFinder(BaseFinder):
    def __init__(self, *args, **kwargs):
        self.storage = FileSystemStorage(location=str(_PACKAGE_DATA))
        self.storage.prefix = "plotly"

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        if path == PLOTLY_JS:
            match = str(_PACKAGE_DATA / "plotly.min.js")
            return [match] if find_all else match
        return [] if find_all else None

    def list(self, ignore_patterns):
        yield "plotly.min.js", self.storage
