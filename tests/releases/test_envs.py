"""manage.py paddle_envs: idempotent add, clear errors, no half-made env; a broken env stores nothing."""
import json
import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from tracker.models import ConfigResult
from tracker.services import paddle_envs
from tracker.services.runs import create_run, execute_run

from ..runner.conftest import make_task
from .conftest import CLIP, OLD_RELEASE

pytestmark = pytest.mark.django_db


def test_add_of_an_installed_release_does_nothing_and_list_shows_disk(old_env, capsys):
    before = os.stat(old_env.path).st_mtime_ns
    call_command("paddle_envs", "add", OLD_RELEASE)
    call_command("paddle_envs", "list")
    out = capsys.readouterr().out
    assert f"Paddle {OLD_RELEASE}: already installed at {old_env.path}" in out
    assert os.stat(old_env.path).st_mtime_ns == before
    line = next(row for row in out.splitlines() if row.startswith(OLD_RELEASE + " "))
    assert "GiB" in line and old_env.paddle_commit[:10] in line
    assert 1 << 30 < old_env.disk_bytes() < 4 << 30


def test_unknown_release_names_what_is_installed_and_offered(old_env, settings, tmp_path):
    with pytest.raises(CommandError) as err:
        call_command("paddle_envs", "add", "2.9.9", "x.y")
    text = str(err.value)
    assert "paddlepaddle 2.9.9 is not offered for this Python" in text and "3.0.0, 3.1.0" in text
    assert "installed here: " in text and OLD_RELEASE in text.split("installed here: ")[1]
    assert "'x.y' is not a Paddle release number" in text
    assert not any("2.9.9" in p.name or "x.y" in p.name for p in paddle_envs.envs_dir().iterdir())


def test_a_failed_install_leaves_nothing_behind(settings, tmp_path, monkeypatch):
    settings.PADDLE_ENVS_DIR = str(tmp_path / "envs")
    # numpy 0.0.1 does not exist: the real uv resolver fails after the venv was made.
    monkeypatch.setattr(paddle_envs, "_pins", lambda torch="": ["numpy==0.0.1"])
    with pytest.raises(paddle_envs.EnvError, match="uv failed"):
        paddle_envs.add("3.0.0", check_index=False)
    assert list((tmp_path / "envs").iterdir()) == []
    assert paddle_envs.installed() == []


def test_a_broken_env_fails_its_run_with_the_error_and_stores_nothing(settings, tmp_path):
    # An env whose interpreter has no paddle (as if its install had been damaged after it was built).
    env = tmp_path / "envs" / "3.1.0"
    (env / "bin").mkdir(parents=True)
    os.symlink(getattr(sys, "_base_executable", sys.executable), env / "bin" / "python")
    (env / paddle_envs.MARKER).write_text(json.dumps({"version": "3.1.0", "paddle_version": "3.1.0"}))
    settings.PADDLE_ENVS_DIR = str(tmp_path / "envs")
    make_task(11, "paddle.clip", [CLIP])
    run = create_run("task", tasks=[11], release="3.1.0")
    execute_run(run.pk, workers=1)
    run.refresh_from_db()
    assert run.state == "failed"
    assert "workers could not start" in run.message and "No module named" in run.message
    assert ConfigResult.objects.count() == 0


def test_a_release_env_is_compiled_to_bytecode_once(old_env, tmp_path):
    """uv installs no bytecode and PYTHONDONTWRITEBYTECODE (set on these hosts) keeps Python from caching any:
    without compile_bytecode every worker start in a release env compiled paddle and torch from source again."""
    assert old_env.bytecode, "scripts/test.sh's paddle_envs add compiles the env (an older env on first add)"
    site = next((tmp for tmp in (os.path.join(old_env.path, "lib", d, "site-packages")
                                 for d in os.listdir(os.path.join(old_env.path, "lib"))) if os.path.isdir(tmp)))
    tag = sys.implementation.cache_tag
    for package in ("paddle", "torch", "numpy"):
        assert os.path.isfile(os.path.join(site, package, "__pycache__", f"__init__.{tag}.pyc")), package
    # an env described before bytecode existed: compiled on ensure_bytecode, its description updated, once
    env_dir = tmp_path / "9.9.9"
    pkg = env_dir / "lib" / "python3.11" / "site-packages" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("VALUE = 1\n")
    (pkg / "py2_only.py").write_text("print 'a Python 2 file some packages ship'\n")
    (env_dir / "bin").mkdir()
    (env_dir / "bin" / "python").symlink_to(sys.executable)
    (env_dir / paddle_envs.MARKER).write_text(json.dumps({"version": "9.9.9"}))
    env = paddle_envs.PaddleEnv(version="9.9.9", path=str(env_dir), python=str(env_dir / "bin" / "python"))
    assert paddle_envs.ensure_bytecode(env) is True
    assert (pkg / "__pycache__" / f"__init__.{tag}.pyc").is_file()
    assert json.loads((env_dir / paddle_envs.MARKER).read_text())["bytecode"] is True
    assert paddle_envs.ensure_bytecode(env) is False


def test_the_one_build_probe_reads_each_interpreters_own_packages(old_env, tmp_path):
    """apitester.builds.probe_build is what a worker cluster (tracker.tasks) and paddle_envs both ask: the main
    interpreter reports the main .venv's packages, an env's interpreter its own (never the main .venv's), and an
    interpreter without paddle is a clear EnvError naming the import that failed."""
    from importlib import metadata

    from apitester.builds import probe_build

    main = probe_build()
    assert main["paddle_version"] == metadata.version("paddlepaddle") and main["cuda"] is False
    assert main["torch_version"] == metadata.version("torch") and main["numpy_version"] == metadata.version("numpy")
    described = {key: getattr(old_env, key) for key in ("paddle_version", "paddle_commit", "torch_version",
                                                        "numpy_version")}
    assert paddle_envs.probe(old_env.python) == described and described["paddle_version"] == OLD_RELEASE
    assert probe_build(old_env.python)["paddle_commit"] != main["paddle_commit"]

    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    cannot = "(?s)the env's python cannot import paddle/torch/numpy: .*No module named 'numpy'"
    with pytest.raises(paddle_envs.EnvError, match=cannot):
        paddle_envs.probe(str(bare / "bin" / "python"), timeout=60)
