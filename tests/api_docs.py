"""docs/api.md read as data: the documented fields of each JSON endpoint, and the field paths of a real answer.

A path names a field from the top: ``a.b`` a key inside an object, ``a[]`` the items of a list, ``a{}`` the values
of an object whose keys are data (release names, statuses, ids: documented once as ``a{}``)."""
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
_HEADING = re.compile(r"^### `GET (/api/v1/[^`]*)`")
_ROW = re.compile(r"^\| `([^`]+)` \|")


def documented_fields(doc: Path = DOC) -> dict[str, dict[str, bool]]:
    """endpoint ("/api/v1/tasks/<number>") -> {path: optional?}, from each endpoint's field table."""
    endpoints: dict[str, dict[str, bool]] = {}
    current = None
    for line in doc.read_text(encoding="utf-8").splitlines():
        if heading := _HEADING.match(line):
            current = endpoints.setdefault(heading.group(1), {})
        elif line.startswith("## "):
            current = None
        elif current is not None and (row := _ROW.match(line)):
            current[row.group(1)] = "(optional)" in line or "(sometimes)" in line
    return endpoints


def field_paths(value, maps=frozenset(), prefix: str = "", objects: set | None = None) -> set[str]:
    """Every field path in a JSON value; an object at a path listed in ``maps`` (without its ``{}``) is a map.
    ``objects`` collects the paths whose value is an object (not null), whose fields are then expected."""
    found: set[str] = set()
    if isinstance(value, dict):
        if objects is not None:
            objects.add(prefix)
        for key, item in value.items():
            path = f"{prefix}{{}}" if prefix in maps else (f"{prefix}.{key}" if prefix else key)
            found.add(path)
            found |= field_paths(item, maps, path, objects)
    elif isinstance(value, list):
        for item in value:
            found.add(f"{prefix}[]")
            found |= field_paths(item, maps, f"{prefix}[]", objects)
    return found
