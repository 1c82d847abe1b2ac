"""What a Paddle wheel file is, read without installing it (issue #46: builds as well as releases).

``read_wheel(path)`` opens the wheel (a zip) and reads its ``*.dist-info/METADATA`` (the distribution's name and
version) and ``paddle/version/__init__.py`` (``full_version``, ``commit``: the file Paddle's own
``paddle.version`` is), and dates the build: the date its version names (``3.3.1.post20260403``: 2026-04-03), else
the date stored for that version file in the zip. Plain Python, no paddle import: a wheel of another Python or
another machine can be read too.
"""
from __future__ import annotations

import ast
import datetime
import re
import zipfile
from pathlib import Path

from .builds import is_build

PADDLE_DISTRIBUTIONS = ("paddlepaddle", "paddlepaddle-gpu")
VERSION_FILE = "paddle/version/__init__.py"
_DATE = re.compile(r"\.(?:post|dev)(\d{8})$")


class WheelError(ValueError):
    """The file is not a Paddle wheel this board can take (said with where and why)."""


def _metadata(archive: zipfile.ZipFile, where: str) -> dict[str, str]:
    names = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
    if len(names) != 1:
        raise WheelError(f"{where}: expected one *.dist-info/METADATA in the wheel, found {len(names)}")
    found: dict[str, str] = {}
    for line in archive.read(names[0]).decode("utf-8", "replace").splitlines():
        if not line.strip():
            break  # the headers end at the first blank line; the description follows
        key, _, value = line.partition(":")
        if key in ("Name", "Version") and key not in found:
            found[key] = value.strip()
    return found


def _version_file(archive: zipfile.ZipFile, where: str) -> tuple[dict[str, str], tuple]:
    """The string constants of paddle/version/__init__.py (full_version, commit, ...) and the file's zip date."""
    try:
        info = archive.getinfo(VERSION_FILE)
    except KeyError:
        raise WheelError(f"{where}: the wheel has no {VERSION_FILE} (not a Paddle build)") from None
    try:
        tree = ast.parse(archive.read(info).decode("utf-8", "replace"))
    except SyntaxError as exc:
        raise WheelError(f"{where}: {VERSION_FILE} does not parse: line {exc.lineno}: {exc.msg}") from None
    constants = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    constants[target.id] = node.value.value
    return constants, info.date_time


def build_date(version: str, zip_date: tuple | None = None) -> str:
    """The build's date as YYYY-MM-DD: the one its version names, else the version file's date in the zip ("")."""
    match = _DATE.search((version or "").split("+")[0])
    if match:
        try:
            return datetime.datetime.strptime(match.group(1), "%Y%m%d").date().isoformat()
        except ValueError:
            pass
    if zip_date and zip_date[0] > 1980:  # 1980-01-01: a zip's "no date" (reproducible builds)
        return datetime.date(*zip_date[:3]).isoformat()
    return ""


def read_wheel(path: str | Path) -> dict:
    """{"distribution", "version", "commit", "date", "build"} of a Paddle wheel; WheelError when it is not one
    (not a zip, no METADATA, another distribution, no version file, versions that disagree)."""
    where = str(path)
    if not str(path).endswith(".whl"):
        raise WheelError(f"{where}: expected a wheel file (*.whl)")
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise WheelError(f"{where}: not a readable wheel: {exc}") from None
    with archive:
        meta = _metadata(archive, where)
        name = meta.get("Name", "").lower().replace("_", "-")
        if name not in PADDLE_DISTRIBUTIONS:
            raise WheelError(f"{where}: a wheel of {meta.get('Name') or 'no named distribution'}, not of "
                             f"{' or '.join(PADDLE_DISTRIBUTIONS)}")
        constants, zip_date = _version_file(archive, where)
    version = meta.get("Version", "")
    full = constants.get("full_version", "")
    if not version or (full and full != version):
        raise WheelError(f"{where}: METADATA says version {version or 'nothing'} but {VERSION_FILE} says "
                         f"{full or 'nothing'}")
    commit = constants.get("commit", "")
    if not re.fullmatch(r"[0-9a-f]{7,40}", commit):
        raise WheelError(f"{where}: {VERSION_FILE} names no commit (found {commit[:60]!r})")
    return {"distribution": name, "version": version, "commit": commit, "date": build_date(version, zip_date),
            "build": is_build(version)}
