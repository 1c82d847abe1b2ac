"""The engine's structure (issue #42), checked statically over apitester/ (ast, no imports).

- no module uses another module's private names (``from .x import _y``, ``x._y``): what one module offers another
  is public, and a private name can change without looking beyond its file;
- engine statuses and devices are built from their enums (``Status.*``, ``Device.*``), never from a string
  literal: a typo is an AttributeError at import, not a new status;
- no verdict message is parsed back (the facts a reader needs are fields of the verdict);
- a reference sits beside its family (specs/<family>.py), not in a second home above the specs.
"""
from __future__ import annotations

import ast
from pathlib import Path

from .imports import REPO, module_name

ENGINE = REPO / "apitester"
STATUS_WORDS = {"pass", "accuracy_error", "dtype_mismatch", "shape_mismatch", "paddle_error", "torch_error",
                "unsupported", "documented_difference", "torch_suspect", "crash", "timeout", "flaky_crash",
                "skipped_too_large"}
DEVICE_WORDS = {"cpu", "gpu"}
# The enums' own definitions, and the argument parsers that turn a command-line word into an enum member.
LITERALS_ALLOWED_IN = {"apitester.vocab", "apitester.engine.device"}


def engine_files() -> list[Path]:
    return sorted(ENGINE.rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_uses(path: Path) -> list[tuple[str, int, str]]:
    """(module, line, what) for each use of another apitester module's private name in ``path``."""
    tree, here = _tree(path), module_name(path)
    modules: dict[str, str] = {}  # local name -> our module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(path, node)
            if not source.startswith("apitester"):
                continue
            for alias in node.names:
                if _private(alias.name) and (ENGINE.parent / (source.replace(".", "/") + ".py")).exists():
                    found.append((here, node.lineno, f"{source}.{alias.name}"))
                modules[alias.asname or alias.name] = f"{source}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("apitester"):
                    modules[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or "apitester"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules
                and _private(node.attr)):
            found.append((here, node.lineno, f"{modules[node.value.id]}.{node.attr}"))
    return found


def test_no_module_uses_another_modules_private_names():
    uses = [use for path in engine_files() for use in private_uses(path)]
    assert uses == []


def test_the_detector_sees_both_forms_of_private_use(tmp_path):
    probe = ENGINE / "_layout_probe_tmp.py"
    probe.write_text("from .engine import execute as ex\nfrom .config import _x\nex._run\n", encoding="utf-8")
    try:
        uses = private_uses(probe)
    finally:
        probe.unlink()
    assert [what for _, _, what in uses] == ["apitester.config._x", "apitester.engine.execute._run"]


def _string_arguments(call: ast.Call) -> list[ast.Constant]:
    values = list(call.args[:1]) + [k.value for k in call.keywords if k.arg in ("status", "device")]
    return [v for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]


def literal_statuses_and_devices(path: Path) -> list[tuple[str, int, str]]:
    """Verdict("…") / KnownFailure("…") built from a status string; "cpu"/"gpu" compared, passed or defaulted."""
    here, found = module_name(path), []
    if here in LITERALS_ALLOWED_IN:
        return found
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", ""))
            if name in ("Verdict", "KnownFailure"):
                found += [(here, c.lineno, c.value) for c in _string_arguments(node) if c.value in STATUS_WORDS]
        if isinstance(node, ast.Constant) and node.value in DEVICE_WORDS:
            found.append((here, node.lineno, node.value))
    return found


def test_statuses_and_devices_come_from_their_enums():
    found = [hit for path in engine_files() for hit in literal_statuses_and_devices(path)]
    assert found == []


# Reading Paddle's own exception text (not a message the engine composed) for a kernel the device lacks.
MESSAGE_READERS_ALLOWED = {("apitester.vocab", "kernel_not_registered")}


def _is_message(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id == "message"
    if isinstance(node, ast.Attribute):
        return node.attr == "message"
    if isinstance(node, ast.Subscript):
        return getattr(node.slice, "value", None) == "message"
    if isinstance(node, ast.BoolOp):  # strict.get("message") or verdict.message
        return any(_is_message(v) for v in node.values)
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get":
        return [getattr(a, "value", None) for a in node.args[:1]] == ["message"]
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "strip":  # message.strip()
        return _is_message(node.func.value)
    return False


def message_parsing(path: Path) -> list[tuple[str, int]]:
    """A regular expression applied to a verdict's message, or a marker constant looked for in it."""
    here, found, tree = module_name(path), [], _tree(path)
    allowed = [range(f.lineno, f.end_lineno + 1) for f in ast.walk(tree)
               if isinstance(f, ast.FunctionDef) and (here, f.name) in MESSAGE_READERS_ALLOWED]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in REGEX_CALLS \
                and any(_is_message(a) for a in node.args):
            found.append((here, node.lineno))
        marker = getattr(node, "left", None)
        marker = getattr(marker, "id", None) or getattr(marker, "attr", "")
        if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In) and marker.isupper()
                and _is_message(node.comparators[0])):
            found.append((here, node.lineno))
    return sorted({hit for hit in found if not any(hit[1] in lines for lines in allowed)})


REGEX_CALLS = ("search", "match", "findall", "fullmatch", "finditer")


def test_no_verdict_message_is_parsed_back():
    assert [hit for path in engine_files() for hit in message_parsing(path)] == []


def test_the_message_detector_sees_a_regex_and_a_marker(tmp_path):
    probe = ENGINE / "_layout_probe_tmp.py"
    probe.write_text("def f(v, strict):\n    A.search(v.message)\n    return MARK in (strict.get('message') or v.message)\n",
                     encoding="utf-8")
    try:
        assert [line for _, line in message_parsing(probe)] == [2, 3]
    finally:
        probe.unlink()


def test_references_sit_beside_their_family():
    # one home: specs/<family>.py defines its references; nothing above the specs holds a family's references,
    # and the helpers both use sit below them (specs/_helpers.py imports no reference module)
    assert not (ENGINE / "references_nn.py").exists()
    helpers = _tree(ENGINE / "specs" / "_helpers.py")
    imported = [_resolve(ENGINE / "specs" / "_helpers.py", n) for n in ast.walk(helpers)
                if isinstance(n, ast.ImportFrom)]
    assert [m for m in imported if m.startswith("apitester") and "references" in m] == []


def test_no_path_of_one_machine_in_the_engine():
    # a workplace folder named by its absolute path only works on the machine it was written on
    found = [(module_name(p), i) for p in engine_files()
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if '"/work/' in line]
    assert found == []


def test_the_reports_are_the_nearest_shared_folder_above_the_checkout(tmp_path, monkeypatch):
    from apitester.reports import reports_dir

    monkeypatch.delenv("PADDLEAPITEST_REPORTS", raising=False)
    checkout = tmp_path / "place" / "worktrees" / "one"
    checkout.mkdir(parents=True)
    assert reports_dir(checkout) == tmp_path / "place" / "worktrees" / "shared" / "paddleapitest"  # none: beside
    (tmp_path / "place" / "shared" / "paddleapitest").mkdir(parents=True)
    assert reports_dir(checkout) == tmp_path / "place" / "shared" / "paddleapitest"
    monkeypatch.setenv("PADDLEAPITEST_REPORTS", str(tmp_path / "elsewhere"))
    assert reports_dir(checkout) == tmp_path / "elsewhere"
