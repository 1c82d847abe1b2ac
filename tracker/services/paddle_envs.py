"""Per-release Paddle environments: one isolated virtualenv per Paddle release under PADDLE_ENVS_DIR
(default ``var/paddle-envs/<version>/``), holding that ``paddlepaddle`` plus the project's own torch and
numpy, so a run can re-test a task on Paddle 3.0.0 while the main ``.venv`` keeps 3.3.1.

Environments are built with uv (one wheel cache shared by every env, so a second env of the same torch
costs a link, not a download); plain ``venv`` + pip is the fallback when no uv binary is found. The project
itself is not installed into them: workers started with an env's interpreter get the repo root on
PYTHONPATH (apitester needs only numpy, paddle and torch).

An env may also pair a Paddle build with another Torch (issue #46: PaddleAPITest and Paddle's alignment PRs pin
torch 2.12.0, this board judges against its own pin): ``paddle_envs add 3.3.1 --torch 2.14.1`` builds
``<envs>/3.3.1+torch2.14.1/``, and a run asked for that Torch (``retest --torch 2.14.1``) runs there. Such an env
is keyed by ``env_key(release, torch)``; the release axis (matrices, "fixed in") never sees it.

An env is built in a temporary directory next to its final place, probed (its paddle must report the
release asked for), described in ``paddle-env.json`` and only then renamed into place: a failed or
interrupted install leaves no half-made env behind, and an env without its description is not an env.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

from django.conf import settings

from apitester.builds import ProbeError, probe_build, probe_flags, version_key
from apitester.wheels import WheelError, read_wheel

from ..selectors.envs import env_key, main_version

MARKER = "paddle-env.json"
# What PyPI serves for CPython 3.11 (checked 2026-12); used when the index can't be asked.
KNOWN_RELEASES = ("3.0.0", "3.1.0", "3.1.1", "3.2.0", "3.2.1", "3.2.2", "3.3.0", "3.3.1")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
# A release or a build between releases (a post or develop build: apitester.builds.version_key orders them).
_BUILD_NAME = re.compile(r"^\d+\.\d+\.\d+(\.(post|dev)\d+)?$")
_TORCH_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


class EnvError(RuntimeError):
    """A paddle env request that can't be honoured (unknown release, failed install, missing env)."""


@dataclass
class PaddleEnv:
    version: str
    path: str
    python: str
    paddle_version: str = ""
    paddle_commit: str = ""
    torch_version: str = ""
    numpy_version: str = ""
    tool: str = ""
    build_seconds: float = 0.0
    created: str = ""
    bytecode: bool = False  # its packages are compiled (compile_bytecode); False for an env built before that
    main: bool = False
    # An env built from a wheel file (a nightly or post build, issue #46): the build's date and where the wheel came
    # from ("" for a release installed from the index).
    build_date: str = ""
    source: str = ""
    # The Torch the env was asked to pair with ("": the project's own pin, the main env's Torch).
    torch_pin: str = ""

    @property
    def key(self) -> str:
        return env_key(self.version, self.torch_pin)

    def disk_bytes(self) -> int:
        return self.disk_usage()[0]

    def disk_usage(self) -> tuple[int, int]:
        """(bytes of the env's files, of which hard-linked: shared with uv's cache and the other envs)."""
        if self.main:
            return 0, 0
        total = shared = 0
        for root, _dirs, files in os.walk(self.path):
            for name in files:
                try:
                    st = os.lstat(os.path.join(root, name))
                except OSError:
                    continue
                total += st.st_size
                if st.st_nlink > 1:
                    shared += st.st_size
        return total, shared


def envs_dir() -> Path:
    return Path(settings.PADDLE_ENVS_DIR)


def main_env() -> PaddleEnv:
    return PaddleEnv(version=main_version(), path=sys.prefix, python=sys.executable, main=True, tool="main .venv")


def installed() -> list[PaddleEnv]:
    """Envs under PADDLE_ENVS_DIR that finished building (they have their description), oldest release first."""
    found = []
    root = envs_dir()
    if root.is_dir():
        for child in root.iterdir():
            marker = child / MARKER
            if child.name.startswith(".") or not marker.is_file():
                continue
            try:
                data = json.loads(marker.read_text())
            except (OSError, ValueError):
                continue
            data.update(path=str(child), python=str(child / "bin" / "python"))
            found.append(PaddleEnv(**{k: v for k, v in data.items() if k in PaddleEnv.__dataclass_fields__}))
    return sorted(found, key=lambda e: version_key(e.version))


def main_torch() -> str:
    """The main env's Torch (the project's pin), without its local build tag (2.13.0, not 2.13.0+cpu)."""
    return metadata.version("torch").split("+")[0]


def normal_torch(torch: str) -> str:
    """The Torch a run asks for: "" for the project's own (asking for it by number is asking for the main env)."""
    torch = (torch or "").strip()
    if torch and not _TORCH_VERSION.match(torch):
        raise EnvError(f"{torch!r} is not a Torch release number (like 2.12.0)")
    return "" if torch == main_torch() else torch


def served_keys() -> list[str]:
    """Every env key this host can run: its releases, and each release paired with another Torch."""
    return sorted({*releases(), *(env.key for env in installed() if env.torch_pin)})


def releases() -> list[str]:
    """Every release this host can run: the main env's and each installed env's, oldest first."""
    versions = {env.version for env in installed() if not env.torch_pin}
    if main_version():
        versions.add(main_version())
    return sorted(versions, key=version_key)


def interpreter_for(release: str, torch: str = "") -> str:
    """The python executable whose paddle is ``release`` ("" = the main env) beside Torch ``torch`` ("" = the
    project's)."""
    torch = normal_torch(torch)
    if (not release or release == main_version()) and not torch:
        return sys.executable
    release = release or main_version()
    for env in installed():
        if env.version == release and env.torch_pin == torch:
            return env.python
    if torch:
        raise EnvError(f"no environment pairing Paddle {release} with Torch {torch} on this host (installed: "
                       f"{', '.join(served_keys()) or 'none'}) — add one with: python manage.py paddle_envs add "
                       f"{release} --torch {torch}")
    raise EnvError(unknown_release_message(release))


# (interpreter, its Paddle build, flag name) -> the flag's type there, or None when that Paddle does not define it.
# A build's flags do not change while its env stays: asked once per release build and flag in this process.
_DEFINED_FLAGS: dict[tuple[str, str, str], str | None] = {}


def _build_key(release: str) -> str:
    """What identifies the release's build: the env's recorded version and commit (the main env: its version)."""
    if is_main(release):
        return f"main {main_version()}"
    env = next((e for e in installed() if e.version == release and not e.torch_pin), None)
    return f"{env.paddle_version} {env.paddle_commit}" if env else release


def defined_flags(release: str, names: list[str]) -> dict[str, str | None]:
    """Which of these Paddle flags the release's Paddle defines ({name: "bool"/"int"/"float"/"str" or None}), as
    the release's own interpreter answers (apitester.builds.probe_flags: ``paddle.get_flags`` raises for a flag
    it does not define); cached per release build. EnvError: no env for the release on this host, or its Paddle
    does not start."""
    python = interpreter_for(release)
    build = _build_key(release)
    missing = [n for n in names if (python, build, n) not in _DEFINED_FLAGS]
    if missing:
        try:
            found = probe_flags(python, missing)
        except (ProbeError, subprocess.TimeoutExpired, OSError) as exc:
            raise EnvError(f"Paddle {release or main_version()} could not be asked for its flags: {exc}") from exc
        for name in missing:
            _DEFINED_FLAGS[(python, build, name)] = found.get(name)
    return {n: _DEFINED_FLAGS[(python, build, n)] for n in names}


def is_main(release: str) -> bool:
    return not release or release == main_version()


def available_on_pypi(*, timeout: float = 60.0) -> tuple[list[str], str]:
    """Releases of paddlepaddle the package index offers this Python, and where the answer came from."""
    try:
        out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "paddlepaddle"],
                             capture_output=True, text=True, timeout=timeout)
        match = re.search(r"Available versions:\s*(.+)", out.stdout)
        if match:
            found = [v.strip() for v in match.group(1).split(",") if _VERSION.match(v.strip())]
            # The 2.x line predates the task's kernels and doesn't run with numpy 2: offer 3.x only.
            return sorted((v for v in found if version_key(v) >= (3, 0, 0)), key=version_key), "PyPI"
    except (OSError, subprocess.TimeoutExpired):
        pass
    return list(KNOWN_RELEASES), "built-in list (the index could not be asked)"


def unknown_release_message(release: str) -> str:
    have = ", ".join(releases()) or "none"
    return (f"no Paddle environment for release {release!r} on this host (installed: {have}); "
            f"PyPI offers {', '.join(KNOWN_RELEASES)} — add one with: python manage.py paddle_envs add {release}")


def check_release_name(release: str) -> None:
    if not _BUILD_NAME.match(release or ""):
        raise EnvError(f"{release!r} is not a Paddle release number (like 3.0.0) or build (like 3.3.1.post20260403)")


def _uv() -> str | None:
    candidate = Path(sys.executable).parent / "uv"
    if candidate.is_file() and os.access(candidate, os.X_OK):
        return str(candidate)
    return shutil.which("uv")


def _base_python() -> str:
    return getattr(sys, "_base_executable", "") or sys.executable


def _pins(torch: str = "") -> list[str]:
    """The main env's torch and numpy (the project's pins), so only Paddle differs between lanes; ``torch``: another
    Torch for an env that pairs with it (then only Torch and Paddle differ)."""
    return [f"torch=={torch or main_torch()}", f"numpy=={metadata.version('numpy')}"]


def _run(cmd: list[str], log: list[str], timeout: float) -> None:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    log.append("$ " + " ".join(cmd) + "\n" + out.stdout[-2000:] + out.stderr[-4000:])
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-8:]
        raise EnvError(f"{Path(cmd[0]).name} failed (exit {out.returncode}): " + " | ".join(tail))


def _build(version: str, target: Path, *, tool: str, timeout: float, wheel: str = "", torch: str = "") -> None:
    log: list[str] = []
    packages = [wheel or f"paddlepaddle=={version}", *_pins(torch)]
    if tool == "uv":
        uv = _uv()
        _run([uv, "venv", "--quiet", "--relocatable", "--python", _base_python(), str(target)], log, timeout)
        cmd = [uv, "pip", "install", "--quiet", "--python", str(target / "bin" / "python")]
        for link in settings.PIP_FIND_LINKS:
            cmd += ["--find-links", link]
        _run(cmd + packages, log, timeout)
    else:
        _run([_base_python(), "-m", "venv", str(target)], log, timeout)
        cmd = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet"]
        for link in settings.PIP_FIND_LINKS:
            cmd += ["--find-links", link]
        _run(cmd + packages, log, timeout)


def compile_bytecode(env_path: Path, *, timeout: float = 1800.0) -> None:
    """Compile the env's installed packages to bytecode once. uv installs none, and with PYTHONDONTWRITEBYTECODE
    (set on these hosts) nothing is ever cached: every worker start in the env compiled paddle and torch from source
    again (5.4 s to import both, against 2.2 s compiled, measured on 3.2.2). compileall writes the .pyc files
    whatever that variable says; a package file that does not compile (some ship Python 2 test files) is left
    as it is, so its exit status is not the env's."""
    python = env_path / "bin" / "python"
    for site in sorted((env_path / "lib").glob("python*/site-packages")):
        subprocess.run([str(python), "-m", "compileall", "-q", "-j", "0", str(site)], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout, env={**os.environ, "PYTHONPATH": ""})


def ensure_bytecode(env: PaddleEnv) -> bool:
    """Compile an env built before compile_bytecode existed and note it in its description; True when it did."""
    if env.main or env.bytecode:
        return False
    compile_bytecode(Path(env.path))
    marker = Path(env.path) / MARKER
    data = json.loads(marker.read_text())
    data["bytecode"] = True
    marker.write_text(json.dumps(data, indent=2) + "\n")
    env.bytecode = True
    return True


def probe(python: str, *, timeout: float = 300.0) -> dict:
    """The versions an env's description keeps, as the env's own interpreter reports them (apitester.builds)."""
    try:
        found = probe_build(python, timeout=timeout)
    except ProbeError as exc:
        raise EnvError(f"the env's python {exc}") from exc
    return {key: found[key] for key in ("paddle_version", "paddle_commit", "torch_version", "numpy_version")}


def add(version: str, *, tool: str | None = None, timeout: float = 3600.0, check_index: bool = True,
        torch: str = "") -> tuple[PaddleEnv, bool]:
    """Build the env for ``version`` (beside Torch ``torch``, "" = the project's); returns (env, created). Already
    there → (env, False), nothing done."""
    check_release_name(version)
    torch = normal_torch(torch)
    for env in installed():
        if env.version == version and env.torch_pin == torch:
            ensure_bytecode(env)
            return env, False
    if check_index:
        offered, source = available_on_pypi()
        if version not in offered:
            raise EnvError(f"paddlepaddle {version} is not offered for this Python ({source} has: "
                           f"{', '.join(offered)}); installed here: {', '.join(releases()) or 'none'}")
    return _install(version, tool=tool, timeout=timeout, torch=torch)


def _install(version: str, *, tool: str | None, timeout: float, wheel: dict | None = None,
             torch: str = "") -> tuple[PaddleEnv, bool]:
    """Build, probe and describe the env in a temporary directory, then rename it into place (``wheel``: the
    read_wheel answer of the file to install instead of the index's release, with its ``path`` and ``source``)."""
    # Another Torch than the project's is taken with pip by default: pip reads the host's own configuration (the
    # indexes and caps where the other Torch builds are found); uv reads none of it and would download ~4 GB.
    tool = tool or ("uv" if _uv() and not torch else "pip")
    root = envs_dir()
    root.mkdir(parents=True, exist_ok=True)
    final = root / env_key(version, torch)
    if final.exists():  # a directory without its description: a leftover, not an env
        shutil.rmtree(final)
    building = root / f".building-{env_key(version, torch)}-{os.getpid()}"
    shutil.rmtree(building, ignore_errors=True)
    started = time.monotonic()
    try:
        _build(version, building, tool=tool, timeout=timeout, wheel=(wheel or {}).get("path", ""), torch=torch)
        found = probe(str(building / "bin" / "python"))
        _check_probe(found, version, wheel, torch)
        env = PaddleEnv(version=version, path=str(final), python=str(final / "bin" / "python"), tool=tool,
                        build_seconds=round(time.monotonic() - started, 1),
                        created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        build_date=(wheel or {}).get("date", ""), source=(wheel or {}).get("source", ""),
                        torch_pin=torch, **found)
        data = {k: v for k, v in asdict(env).items() if k not in ("path", "python", "main")}
        (building / MARKER).write_text(json.dumps(data, indent=2) + "\n")
        os.rename(building, final)
        ensure_bytecode(env)  # in place (the .pyc files name their sources: the final path, not the building one)
    except BaseException as exc:
        shutil.rmtree(building, ignore_errors=True)
        if isinstance(exc, subprocess.TimeoutExpired):
            raise EnvError(f"installing paddlepaddle {version} took longer than {timeout:.0f} s") from exc
        raise
    return env, True


def _check_probe(found: dict, version: str, wheel: dict | None, torch: str) -> None:
    """The built env holds what was asked: the Paddle release (the wheel's commit) and the Torch it pairs with."""
    if found["paddle_version"] != version or (wheel and found["paddle_commit"] != wheel["commit"]):
        raise EnvError(f"the env's paddle reports {found['paddle_version']} {found['paddle_commit'][:10]}, not "
                       f"{version}{' ' + wheel['commit'][:10] if wheel else ''}")
    if torch and found["torch_version"].split("+")[0] != torch:
        raise EnvError(f"the env's torch reports {found['torch_version']}, not {torch}")


def fetch_wheel(source: str, *, timeout: float = 3600.0) -> Path:
    """A wheel named by a path, or by an http(s) URL downloaded once into PADDLE_ENVS_DIR/.wheels (atomically)."""
    if not re.match(r"^https?://", source):
        path = Path(source)
        if not path.is_file():
            raise EnvError(f"{source}: no such wheel file")
        return path.resolve()
    name = source.rstrip("/").rsplit("/", 1)[-1].split("?")[0]
    if not name.endswith(".whl"):
        raise EnvError(f"{source}: the URL names no wheel file (*.whl)")
    cache = envs_dir() / ".wheels"
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / name
    if not target.is_file():
        partial = cache / f".{name}.{os.getpid()}"
        try:
            with urllib.request.urlopen(source, timeout=timeout) as answer, open(partial, "wb") as out:
                shutil.copyfileobj(answer, out)
            os.rename(partial, target)
        except OSError as exc:
            partial.unlink(missing_ok=True)
            raise EnvError(f"{source}: could not download the wheel: {exc}") from exc
    return target


def add_wheel(source: str, *, tool: str | None = None, timeout: float = 3600.0) -> tuple[PaddleEnv, bool]:
    """An env of the Paddle build a wheel file holds (a nightly or post build such as 3.3.1.post20260403), named by
    its version; its version, commit and date are read from the wheel before anything is installed (WheelError →
    EnvError, nothing made). Already there → (env, False)."""
    path = fetch_wheel(source, timeout=timeout)
    try:
        wheel = read_wheel(path)
    except WheelError as exc:
        raise EnvError(str(exc)) from exc
    version = wheel["version"].split("+")[0]
    check_release_name(version)
    for env in installed():
        if env.version == version and not env.torch_pin:
            return env, False
    return _install(version, tool=tool, timeout=timeout, wheel={**wheel, "path": str(path), "source": source})


def remove(version: str, torch: str = "") -> bool:
    check_release_name(version)
    torch = normal_torch(torch)
    key = env_key(version, torch)
    if version == main_version() and not torch and not (envs_dir() / version).exists():
        raise EnvError(f"Paddle {version} is the main environment (.venv); it is not removed by paddle_envs")
    target = envs_dir() / key
    if not target.exists():
        raise EnvError(f"no env for {key} (installed: {', '.join(e.key for e in installed()) or 'none'})")
    # Rename first so a half-deleted tree is never taken for an env.
    doomed = envs_dir() / f".removing-{key}-{os.getpid()}"
    os.rename(target, doomed)
    shutil.rmtree(doomed, ignore_errors=True)
    return True
