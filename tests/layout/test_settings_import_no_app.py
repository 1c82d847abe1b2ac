"""The settings import no module of the app (issue 42): config/settings.py, and the config modules it loads, import
nothing from tracker/ or apitester/. What the settings need of a rule (where a GitHub token may go) lives in a
plain config module the app imports too (config/token_urls.py); a default the engine owns (where PaddleAPITest's
reports are) is asked by the app at run time (tracker.selectors.reported.reports_root), not at settings load.
Read statically (ast), and once for real in a fresh interpreter."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from .imports import REPO

APP_PACKAGES = ("tracker", "apitester")


def imported_modules(source: str, package: str) -> list[tuple[int, str]]:
    """(line, dotted module) of every import in `source`, relative ones resolved against `package`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            found.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
    return found


def settings_closure(root: Path = REPO, start: str = "config.settings") -> dict[str, list[tuple[int, str]]]:
    """module -> its imports, for the settings module and every config module reached from it."""
    seen: dict[str, list[tuple[int, str]]] = {}
    todo = [start]
    while todo:
        name = todo.pop()
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        if name in seen or not path.is_file():
            continue
        seen[name] = imported_modules(path.read_text(encoding="utf-8"), name.rpartition(".")[0])
        todo += [module for _line, module in seen[name] if module.split(".")[0] == "config"]
    return seen


def app_imports(closure: dict[str, list[tuple[int, str]]]) -> list[tuple[str, int, str]]:
    return sorted((name, line, module) for name, imports in closure.items() for line, module in imports
                  if module.split(".")[0] in APP_PACKAGES)


def test_the_settings_and_the_config_modules_they_load_import_no_app_module():
    closure = settings_closure()
    assert "config.token_urls" in closure  # the scan follows the settings into config/
    assert app_imports(closure) == [], "move what the settings read into config/ (or ask the app at run time)"


def test_loading_the_settings_loads_no_app_module():
    """Not only no import statement: nothing the settings load imports the app either (a fresh interpreter)."""
    code = ("import sys, config.settings; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tracker', 'apitester')))")
    env = {**os.environ, "DJANGO_DEBUG": "1"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_the_scan_catches_a_planted_app_import_reached_through_config(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "settings.py").write_text("import os\nfrom .helpers import knob\n", encoding="utf-8")
    (tmp_path / "config" / "helpers.py").write_text(
        "from apitester.reports import reports_dir\nimport tracker.github.client as client\n", encoding="utf-8")
    assert app_imports(settings_closure(tmp_path)) == [("config.helpers", 1, "apitester.reports"),
                                                       ("config.helpers", 2, "tracker.github.client")]


def test_the_board_reads_the_reports_where_the_engine_does(settings, monkeypatch, tmp_path):
    """PADDLEAPITEST_REPORTS is read by the settings; when it is empty the board asks the engine's default."""
    from apitester.reports import reports_dir
    from tracker.selectors.reported import reports_root

    settings.PADDLEAPITEST_REPORTS = ""
    assert reports_root() == reports_dir()
    monkeypatch.setenv("PADDLEAPITEST_REPORTS", str(tmp_path))
    assert reports_root() == reports_dir() == tmp_path
    settings.PADDLEAPITEST_REPORTS = str(tmp_path / "elsewhere")
    assert reports_root() == tmp_path / "elsewhere"
