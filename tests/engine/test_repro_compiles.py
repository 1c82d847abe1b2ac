"""Every repro script compiles, whatever characters the config's string arguments hold.

The script quotes its config in the module docstring; a config such as ``name="\\N"`` (which the config grammar
accepts) once made the script a SyntaxError. The scripts are only generated and compiled here, never run."""
import ast
import json
import re
from functools import lru_cache

import pytest

from apitester.config import parse_config
from apitester.diagnosis.repro import repro_script, script_docstring
from apitester.reports import iter_report_configs
from tests.engine_helpers.report_configs import require_reports

# A cheap real config whose `name` argument takes any string: the carrier of the strings under test.
CARRIER = 'paddle.floor(Tensor([2],"float32"), name="{}", )'
STRING_ARGUMENT = re.compile(r'"(?:[^"\\]|\\.)*"')


def config_with_name(escaped: str) -> str:
    config = CARRIER.format(escaped)
    parse_config(config)  # the premise: the config grammar accepts it
    return config


def assert_compiles_and_quotes(source: str, config: str) -> None:
    tree = compile(source, "repro.py", "exec", flags=ast.PyCF_ONLY_AST)
    compile(tree, "repro.py", "exec")
    docstring = ast.get_docstring(tree, clean=False)
    assert docstring.split("\n")[0] == f"Repro: {config}"


@pytest.mark.parametrize("escaped", [
    r"\N", r"\x4", r"\u12",  # malformed escapes to Python
    r"a\N{x", r"\U0001", r"\\", r"\"\"\"", r"\"\"\"\"\"\"", "nul\x00byte", "tab\there", "\u2028", "中文",
])
def test_a_script_compiles_whatever_its_string_argument(escaped):
    config = config_with_name(escaped)
    source = repro_script(config, "typical:0")
    assert_compiles_and_quotes(source, config)
    # The config the script runs is the same config.
    assigned = re.search(r"^CONFIG = (.*)$", source, re.MULTILINE).group(1)
    assert json.loads(assigned) == config


@lru_cache(maxsize=1)
def report_configs() -> tuple[str, ...]:
    return tuple(sorted({line.config for line in iter_report_configs(require_reports().parent)}))


def test_every_string_argument_in_the_reports_makes_a_compiling_script():
    strings = sorted({s for config in report_configs() for s in STRING_ARGUMENT.findall(config)})
    assert len(strings) > 20, strings  # dtypes, data formats, modes, einsum equations, …
    for quoted in strings:
        config = config_with_name(quoted[1:-1])
        assert_compiles_and_quotes(repro_script(config, "typical:0"), config)


def test_every_config_in_the_reports_makes_a_compiling_docstring():
    """The docstring is the only place a config's text enters a script's source as it is (CONFIG is a JSON
    literal, arguments are repr()s): compiled for every config of the reports."""
    configs = report_configs()
    assert len(configs) > 10_000
    for config in configs:
        source = script_docstring(config, "typical:0", "apitester.specs.reference")
        assert ast.get_docstring(ast.parse(source), clean=False).split("\n")[0] == f"Repro: {config}", config
