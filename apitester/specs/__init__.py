"""The spec registry: every module in this package is imported once (auto-discovery).

Adding a family file needs no edit here.  Extra modules (test-only specs) are loaded
from the comma-separated env var APITESTER_EXTRA_SPECS.
"""

from __future__ import annotations

import importlib
import os
import pkgutil

from .base import ENGINE_APIS, PRIMARY, REGISTRY, Spec, register  # noqa: F401

_loaded = False


def _load() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    for name in filter(None, (s.strip() for s in os.environ.get("APITESTER_EXTRA_SPECS", "").split(","))):
        importlib.import_module(name)


def get_spec(api: str) -> Spec | None:
    """The spec serving this config API name (aliases resolved), or None."""
    _load()
    return REGISTRY.get(api)


def all_specs() -> dict[str, Spec]:
    """Primary API name -> spec."""
    _load()
    return dict(PRIMARY)


def all_names() -> dict[str, Spec]:
    """Every served name (primary and aliases) -> spec."""
    _load()
    return dict(REGISTRY)


def engine_specs() -> dict[str, Spec]:
    """Primary API name -> spec, for the specs of this package only (no test-only specs, whatever
    a test loaded into the process before or after)."""
    _load()
    return {api: spec for api, spec in PRIMARY.items() if api in ENGINE_APIS}
