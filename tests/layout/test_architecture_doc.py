"""docs/architecture.md is true of the tree (issue 42): its module list ("Every module") names every module under
apitester/ and tracker/ and nothing else; every file, folder and dotted name it names exists; its seam table lists
exactly the engine modules the tracker imports. Read statically (the doc as text, the code with ast)."""
from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

from .imports import REPO, imports_of

DOC = REPO / "docs" / "architecture.md"
LISTED = ("apitester", "tracker")  # the packages whose modules the doc lists, one row each
TOP_DIRS = {p.name for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")}
# Short forms the doc uses inside tracker/ ("services/queue.py", "selectors.runs.task_runs_panel").
SHORT_PACKAGES = ("services", "selectors", "web", "github", "figures", "templatetags", "tasks")
CODE = re.compile(r"`([^`\n]+)`")


def section(text: str, heading: str) -> str:
    """The body of the `## heading` section (up to the next level-2 heading)."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end != -1 else len(text)]


def table_first_cells(text: str) -> list[str]:
    """The backticked first cell of every table row (`| \\`name\\` | … |`)."""
    return re.findall(r"^\| `([^`]+)` \|", text, flags=re.M)


def modules_in_tree(root: Path = REPO) -> set[str]:
    """Every .py file under the listed packages but the generated migrations and empty package markers."""
    return {p.relative_to(root).as_posix() for package in LISTED for p in (root / package).rglob("*.py")
            if "migrations" not in p.parts and not (p.name == "__init__.py" and not p.read_text(encoding="utf-8").strip())}


def test_the_module_list_names_every_module_of_the_tree_and_nothing_else():
    listed = table_first_cells(section(DOC.read_text(encoding="utf-8"), "Every module"))
    assert len(listed) == len(set(listed)), "a module listed twice"
    tree = modules_in_tree()
    assert sorted(tree - set(listed)) == [], "modules the doc does not list: add a row to docs/architecture.md"
    assert sorted(set(listed) - tree) == [], "rows of modules that are not in the tree (moved or removed?)"


def test_the_tree_scan_skips_only_markers_and_migrations(tmp_path):
    for name, text in {"tracker/__init__.py": "", "tracker/x.py": "X = 1\n", "tracker/migrations/0001_a.py": "A = 1\n",
                       "apitester/core/__init__.py": "from .trial import prepare\n", "apitester/core/trial.py": ""}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert modules_in_tree(tmp_path) == {"tracker/x.py", "apitester/core/__init__.py", "apitester/core/trial.py"}


# --- every name the doc mentions exists -----------------------------------------------------------

@lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _names(body) -> set[str]:
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            names |= _names(node.body) | _names(getattr(node, "orelse", []))
    return names


def dotted_problem(name: str, root: Path = REPO) -> str | None:
    """Why `name` (`package.module[.attribute[.member]]`) names nothing in the tree, or None when it does."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        base = root.joinpath(*parts[:cut])
        path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if path.is_file() or base.is_dir():
            break
    else:
        return f"no module {parts[0]}"
    rest = parts[cut:]
    if not rest:
        return None
    if not path.is_file():
        return f"{'.'.join(parts[:cut])} is a folder without {rest[0]}"
    body = _tree(path).body
    if rest[0] not in _names(body):
        return f"{'.'.join(parts[:cut])} defines no {rest[0]}"
    classes = {node.name: node for node in body if isinstance(node, ast.ClassDef)}
    if len(rest) > 1 and rest[0] in classes and rest[1] not in _names(classes[rest[0]].body):
        return f"class {rest[0]} has no {rest[1]}"
    return None


def path_problem(token: str, root: Path = REPO) -> str | None:
    """Why a path the doc names does not exist (a repository path, or a .py file given inside tracker/)."""
    first = token.split("/")[0]
    if "/" not in token:  # a bare file name (`tasks.py`, `test_x.py`): a file of that name in our code or tests
        return None if any(True for folder in LISTED + ("config", "tests") for _ in (root / folder).rglob(token)) \
            else "no module of that name"
    if first in TOP_DIRS:
        return None if (root / token).exists() else "no such file or folder"
    candidates = [root / "tracker" / token, root / "tracker" / "services" / token, root / "apitester" / token]
    return None if any(c.exists() for c in candidates) else "no such module in tracker/ or apitester/"


def mentioned(text: str) -> tuple[set[str], set[str]]:
    """(paths, dotted names) written in backticks: a code span holding one path or one dotted name of ours."""
    paths, dotted = set(), set()
    for span in CODE.findall(text):
        token = re.sub(r"\(.*\)$", "", span.strip())  # `start_run(...)`: the name
        if re.fullmatch(r"[\w.-]+(/[\w.-]*)*", token) and (token.endswith(".py") or token.split("/")[0] in TOP_DIRS
                                                             and "/" in token):
            paths.add(token)
        elif re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", token):
            first = token.split(".")[0]
            if first in LISTED + ("config",):
                dotted.add(token)
            elif first in SHORT_PACKAGES:
                dotted.add(f"tracker.{token}")
    return paths, dotted


def test_every_path_the_doc_names_exists():
    paths, _dotted = mentioned(DOC.read_text(encoding="utf-8"))
    missing = {token: why for token in sorted(paths) if (why := path_problem(token))}
    assert missing == {}


def test_every_dotted_name_the_doc_names_exists():
    _paths, dotted = mentioned(DOC.read_text(encoding="utf-8"))
    assert len(dotted) > 40  # the doc names the code it describes
    missing = {name: why for name in sorted(dotted) if (why := dotted_problem(name))}
    assert missing == {}


def test_the_name_checks_catch_what_does_not_exist():
    paths, dotted = mentioned("`tracker/services/queue.py`, `services/runs/store.py`, `tracker/nowhere.py`, "
                              "`services.runs.start_run`, `apitester.pool.WorkerPool.map_configs`, "
                              "`tracker.selectors.claims.task_claim_state(task, user)`, `apitester.nothing`, "
                              "`services.claims.no_such_function`, `config.token_urls.check_api_url`")
    assert {p: path_problem(p) for p in sorted(paths)} == {
        "services/runs/store.py": None, "tracker/nowhere.py": "no such file or folder",
        "tracker/services/queue.py": None}
    assert {d: dotted_problem(d) for d in sorted(dotted)} == {
        "apitester.nothing": "apitester defines no nothing",
        "apitester.pool.WorkerPool.map_configs": "class WorkerPool has no map_configs",
        "config.token_urls.check_api_url": None,
        "tracker.selectors.claims.task_claim_state": None,
        "tracker.services.claims.no_such_function": "tracker.services.claims defines no no_such_function",
        "tracker.services.runs.start_run": None,
    }


# --- the seam ---------------------------------------------------------------------------------------

def engine_modules_the_tracker_imports() -> set[str]:
    """Every engine module a tracker module imports (`from apitester.x import name` counts as apitester.x)."""
    def is_module(dotted: str) -> bool:
        base = REPO.joinpath(*dotted.split("."))
        return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()

    return {imp.module for path in sorted((REPO / "tracker").rglob("*.py")) if "migrations" not in path.parts
            for imp in imports_of(path) if imp.module.startswith("apitester.") and is_module(imp.module)}


def test_the_seam_table_lists_exactly_the_engine_modules_the_tracker_imports():
    listed = set(table_first_cells(section(DOC.read_text(encoding="utf-8"),
                                           "The seam: what the tracker imports from the engine")))
    imported = engine_modules_the_tracker_imports()
    assert "apitester.pool" in imported  # the scan sees the seam
    assert sorted(imported - listed) == [], "engine modules the tracker imports that the seam table does not list"
    assert sorted(listed - imported) == [], "seam table rows no tracker module imports"
