"""Settings are read from the environment in one place, config/settings.py (issue 32): everywhere else reads
`django.conf.settings`, so a knob has one name, one default and one parse. Read statically (ast, no imports).

A read of the process environment that is not a setting — building a child process's environment, the
Django-free engine's own knobs — is listed in ALLOWED with the reason; a new one is either a setting (define it
in config/settings.py) or argued for here.
"""
from __future__ import annotations

import ast
from pathlib import Path

from .imports import REPO

# config/ is where settings are read (settings.py; wsgi.py and manage.py only name the settings module).
SCANNED = ("tracker", "apitester")
ENVIRON_NAMES = {"environ", "environb", "getenv", "getenvb"}

ALLOWED = {
    "tracker/accounts/management/commands/createsuperuser.py:Command.handle":
        "Django's own createsuperuser --noinput contract: DJANGO_SUPERUSER_PASSWORD is the command's input, not a setting",
    "tracker/accounts/management/commands/createsuperuser.py:Command._user_for_validation":
        "Django's createsuperuser contract: DJANGO_SUPERUSER_<FIELD> names the user the password is validated against",
    "tracker/services/diagnoses.py:run_engine":
        "child process environment: the diagnosis engine process inherits this one's, unbuffered",
    "tracker/services/paddle_envs.py:compile_bytecode":
        "child process environment: compileall in a release env, without this process's PYTHONPATH",
    "apitester/pool.py:WorkerPool._worker_env":
        "child process environment: a pool worker inherits this one's, with its thread counts and PYTHONPATH",
    "apitester/cli.py:run_main":
        "the thread environment OpenMP and MKL read when paddle and torch load: --threads sets it before they do",
    "apitester/cli.py:diagnosis_main":
        "the same for `diagnose --threads` / `shrink --threads`: set before paddle and torch load",
    "apitester/provenance.py:pin_threads":
        "the thread environment OpenMP and MKL read when they load: pinned with the frameworks' own setters",
    "apitester/provenance.py:read_provenance":
        "the provenance records the OMP/MKL thread environment the frameworks read (what it is, not a knob)",
    "apitester/builds.py:_probe":
        "child process environment: the build probe (an interpreter asked for its Paddle and Torch) inherits this one's, with Paddle's logging quiet",
    "apitester/engine/trial.py:frameworks":
        "process environment for Paddle itself: GLOG_minloglevel quiets its C++ logging before it is imported",
    "apitester/reports/__init__.py:reports_dir":
        "the Django-free engine's knob (no Django settings there): the board's setting PADDLEAPITEST_REPORTS reads "
        "the same variable, and falls back to this function when it is empty (tracker.selectors.reported."
        "reports_root), so the default is defined once",
    "apitester/specs/__init__.py:_load":
        "the Django-free engine's knob: extra spec modules (APITESTER_EXTRA_SPECS) that pool workers, "
        "started by the engine or the board, import like their parent",
}


def environ_reads(path: Path, root: Path = REPO) -> list[tuple[str, int, str]]:
    """("path:qualified function" or "path:<module>", line, code) of every use of os.environ / os.getenv,
    however `os` or the name was imported."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    os_names, environ_names = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            os_names.update(alias.asname or alias.name for alias in node.names if alias.name == "os")
        elif isinstance(node, ast.ImportFrom) and node.module == "os" and not node.level:
            environ_names.update(alias.asname or alias.name for alias in node.names if alias.name in ENVIRON_NAMES)
    relative = path.relative_to(root).as_posix()
    found = []

    def visit(node, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, f"{scope}.{child.name}" if scope else child.name)
                continue
            uses_os = (isinstance(child, ast.Attribute) and child.attr in ENVIRON_NAMES
                       and isinstance(child.value, ast.Name) and child.value.id in os_names)
            imports_name = (isinstance(child, ast.ImportFrom) and child.module == "os"
                            and any(alias.name in ENVIRON_NAMES for alias in child.names))
            uses_name = isinstance(child, ast.Name) and child.id in environ_names
            if uses_os or imports_name or uses_name:
                found.append((f"{relative}:{scope or '<module>'}", child.lineno, ast.unparse(child)))
            visit(child, scope)

    visit(tree, "")
    return found


def _reads_in_tree() -> list[tuple[str, int, str]]:
    return [read for package in SCANNED for path in sorted((REPO / package).rglob("*.py"))
            for read in environ_reads(path)]


READS = _reads_in_tree()


def test_no_module_outside_config_reads_the_environment_for_a_setting():
    unlisted = [read for read in READS if read[0] not in ALLOWED]
    assert unlisted == [], ("define these as settings in config/settings.py and read django.conf.settings "
                            f"(or list a non-setting use in ALLOWED with its reason): {unlisted}")


def test_the_allow_list_has_no_stale_entry():
    stale = sorted(set(ALLOWED) - {where for where, _line, _code in READS})
    assert stale == [], f"no environment read there any more: remove from ALLOWED: {stale}"


def test_every_allowed_read_says_why():
    assert all(len(reason) > 30 for reason in ALLOWED.values())


def test_the_scan_catches_a_planted_read_in_every_form(tmp_path):
    planted = tmp_path / "tracker" / "services" / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(
        "import os\n"
        "import os as system\n"
        "from os import getenv as env_of\n"
        "TOP = os.environ.get('BOARD_KNOB', '1')\n"
        "class Knobs:\n"
        "    def limit(self):\n"
        "        return int(os.environ['BOARD_LIMIT'])\n"
        "def other():\n"
        "    return system.getenv('X'), env_of('Y')\n"
        "def harmless():\n"
        "    return os.path.join('environ', 'getenv')\n", encoding="utf-8")
    found = [(where, line) for where, line, _code in environ_reads(planted, root=tmp_path)]
    assert found == [("tracker/services/planted.py:<module>", 3), ("tracker/services/planted.py:<module>", 4),
                     ("tracker/services/planted.py:Knobs.limit", 7), ("tracker/services/planted.py:other", 9),
                     ("tracker/services/planted.py:other", 9)]
    # And the rule itself refuses it: none of these is in ALLOWED.
    assert not any(where in ALLOWED for where, _line in found)


def test_the_scan_sees_the_reads_it_allows():
    """The scan is not blind by accident: the settings module itself is full of reads, and so is the pool."""
    assert len(environ_reads(REPO / "config" / "settings.py")) > 20
    assert any(where == "apitester/pool.py:WorkerPool._worker_env" for where, _line, _code in READS)
