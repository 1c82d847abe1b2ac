"""Moved to tests/fake_specs/engine.py: import `tests.fake_specs.engine` (APITESTER_EXTRA_SPECS=tests.fake_specs.engine).

Kept only for engine tests written before the move that still `import apitester_test_specs`; delete it once
none does (grep -rn apitester_test_specs tests)."""
import tests.fake_specs.engine  # noqa: F401  (registers the apitester_test.* specs)
