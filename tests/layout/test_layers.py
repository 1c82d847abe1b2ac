"""The layering rules of docs/architecture.md, checked statically over the whole tree (ast, no imports)."""
from .imports import cycles, graph, imports_of, module_name, source_files

MODULES, EDGES = graph()
# Django's AppConfig.ready() is where app start-up wiring belongs (signals, endpoint settings).
LAZY_IMPORT_ALLOWED_IN = {"tracker.apps"}


def _edges_from(prefix: str):
    return [e for e in EDGES if e.importer == prefix or e.importer.startswith(prefix + ".")]


def _targets(prefix: str, into: str):
    return sorted({(e.importer, e.module) for e in _edges_from(prefix)
                   if e.module == into or e.module.startswith(into + ".")})


def test_no_import_cycle_anywhere_in_our_packages():
    # Function-level imports included: a cycle hidden inside a function is still a cycle.
    assert cycles(MODULES, EDGES) == []


def test_no_function_level_import_of_a_tracker_module():
    lazy = sorted({(e.importer, e.module, e.line) for e in _edges_from("tracker")
                   if not e.top and e.importer not in LAZY_IMPORT_ALLOWED_IN})
    assert lazy == []


def test_the_engine_is_django_free():
    offending = []
    for path in source_files():
        name = module_name(path)
        if name == "apitester" or name.startswith("apitester."):
            offending += [(name, i.module) for i in imports_of(path)
                          if i.module.split(".")[0] in ("django", "tracker", "config")]
    assert offending == []


def test_github_parsers_are_django_free():
    parsers = ("tracker.github.comments", "tracker.github.numbers", "tracker.github.pr_titles")
    offending = []
    for path in source_files():
        if module_name(path) in parsers:
            offending += [(module_name(path), i.module) for i in imports_of(path)
                          if i.module.split(".")[0] == "django"
                          or (i.module.startswith("tracker.")
                              and not any(i.module == p or i.module.startswith(p + ".") for p in parsers))]
    assert offending == []


def test_reads_never_import_writes_and_writes_never_import_pages():
    assert _targets("tracker.selectors", "tracker.services") == []
    assert _targets("tracker.services", "tracker.web") == []
    assert _targets("tracker.selectors", "tracker.web") == []
    # Figures are drawn from selector values: no model, service or page in them.
    for layer in ("tracker.models", "tracker.services", "tracker.web"):
        assert _targets("tracker.figures", layer) == []


def test_github_is_the_github_adapter_only():
    """Parsers, the REST client and the webhook's checks: the jobs and services that apply what GitHub says import
    github/, never the other way round; sign-in glue is web (tracker/web/oauth.py, staff_login.py)."""
    for layer in ("tracker.services", "tracker.selectors", "tracker.web", "tracker.tasks"):
        assert _targets("tracker.github", layer) == []


def test_the_checker_sees_what_it_checks():
    """The graph is not empty by accident: the known edges of the layers are in it."""
    assert ("tracker.web.board", "tracker.selectors.board") in {(e.importer, e.module) for e in EDGES}
    assert ("tracker.services.runs.executor", "apitester.pool") in {(e.importer, e.module) for e in EDGES}
    # The github adapter's own edges are seen (so an upward one would be too), and its users' edges into it.
    assert ("tracker.github.webhook", "tracker.github.logins") in {(e.importer, e.module) for e in EDGES}
    assert ("tracker.tasks", "tracker.github.client") in {(e.importer, e.module) for e in EDGES}
    assert len(MODULES) > 80


WRITE_CALLS = {"create", "get_or_create", "update_or_create", "bulk_create", "bulk_update", "save", "delete"}


def _model_writes(path):
    """Calls that write rows: Model.objects.<write>(…), <queryset>.update/delete(…), <row>.save()/.delete()."""
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name, owner = node.func.attr, node.func.value
        chain = ast.unparse(owner)
        if name in WRITE_CALLS and (".objects" in chain or name in {"save", "delete"}):
            found.append((node.lineno, f"{chain}.{name}"))
        elif name == "update" and ".objects" in chain:
            found.append((node.lineno, f"{chain}.{name}"))
    return found


def test_every_write_is_in_a_service():
    # Management commands, migrations and the admin are Django's own writers; tests are not in the tree.
    allowed = ("tracker.services.", "tracker.migrations.", "tracker.management.", "tracker.admin")
    offending = []
    for path in source_files():
        name = module_name(path)
        if name.startswith("tracker") and not name.startswith(allowed):
            offending += [(name, line, call) for line, call in _model_writes(path)]
    assert offending == []


def test_the_write_scan_finds_writes():
    from .imports import REPO

    writes = [write for path in sorted((REPO / "tracker" / "services" / "runs").glob("*.py"))
              for write in _model_writes(path)]
    assert any("ConfigResult.objects" in call and call.endswith(".create") for _, call in writes)
    assert any("TestRun.objects" in call and call.endswith(".update") for _, call in writes)


def test_every_import_of_our_packages_names_a_module_or_a_name_in_one():
    """A moved module leaves no import behind (a stale `from .. import charts` only failed at template load)."""
    import ast

    from .imports import REPO

    def defined_names(module: str) -> set[str] | None:
        base = REPO.joinpath(*module.split("."))
        path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if not path.exists():
            return None
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
        return names

    missing = []
    for path in source_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        name = module_name(path)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                parts = package.split(".")
                module = ".".join(parts[: len(parts) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] not in ("apitester", "tracker", "config"):
                continue
            names = defined_names(module)
            if names is None:
                missing.append((name, node.lineno, module))
                continue
            for alias in node.names:
                sub = REPO.joinpath(*module.split("."), alias.name)
                if alias.name != "*" and alias.name not in names and not sub.with_suffix(".py").exists() \
                        and not sub.is_dir():
                    missing.append((name, node.lineno, f"{module}.{alias.name}"))
    assert missing == []


def http_codes_in(source: str) -> list[tuple[int, str]]:
    """(line, what) of every HTTP answer a module spells: an import of django.http or django.shortcuts, and a
    returned tuple led by a status code (`return 202, {...}`)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[:2] in (["django", "http"],
                                                                                   ["django", "shortcuts"]):
            found.append((node.lineno, f"imports {node.module}"))
        elif (isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and node.value.elts
              and isinstance(node.value.elts[0], ast.Constant) and type(node.value.elts[0].value) is int
              and 100 <= node.value.elts[0].value <= 599):
            found.append((node.lineno, f"returns status {node.value.elts[0].value}"))
    return sorted(found)


def test_services_answer_in_their_own_terms_never_in_http():
    """A service says what became of a request (e.g. services.webhook_deliveries.DeliveryOutcome); the view chooses
    the HTTP status (web/github.py's WEBHOOK_STATUS)."""
    offending = []
    for path in source_files():
        name = module_name(path)
        if name.startswith("tracker.services"):
            offending += [(name, *found) for found in http_codes_in(path.read_text(encoding="utf-8"))]
    assert offending == []


def test_the_http_scan_catches_a_planted_status():
    planted = ("from django.http import JsonResponse\n"
               "def handle(event):\n"
               "    if event == 'ping':\n"
               "        return 200, {'ok': True}\n"
               "    return 'ignored', {}\n")
    assert http_codes_in(planted) == [(1, "imports django.http"), (4, "returns status 200")]
