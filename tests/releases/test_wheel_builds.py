"""Builds as well as releases (issue #46): `paddle_envs add --wheel FILE_OR_URL` reads a Paddle wheel's version,
commit and date without installing it, and a build orders among the releases (apitester.builds.version_key, the
envs a host has, the releases a run may name).

Exercised: reading real zip files built here in tmp_path as a Paddle wheel is laid out (dist-info METADATA,
paddle/version/__init__.py), the download of a wheel URL from a real HTTP server on 127.0.0.1, the refusals of
what is not a Paddle wheel (nothing made under PADDLE_ENVS_DIR), and the order of a build's env among release envs.
Not exercised: installing a real nightly wheel (none is on this disk and the suite has no network); the install path
is the release envs' own (`_install`), which tests/releases/test_envs.py covers."""
import http.server
import json
import threading
import zipfile

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apitester.builds import is_build, version_key
from apitester.wheels import WheelError, build_date, read_wheel
from tracker.services import paddle_envs

from .fake_envs import make_fake_envs

COMMIT = "0123456789abcdef0123456789abcdef01234567"
POST = "3.3.1.post20260403"


def make_wheel(folder, version=POST, *, name="paddlepaddle", full_version=None, commit=COMMIT, version_file=True,
               date=(2026, 4, 3, 12, 0, 0)):
    """A wheel file laid out as Paddle's: its METADATA and paddle/version/__init__.py (nothing to import)."""
    path = folder / f"{name.replace('-', '_')}-{version}-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        dist = f"{name.replace('-', '_')}-{version}.dist-info"
        wheel.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nVersion: 9\n")
        wheel.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\n")
        if version_file:
            text = (f"full_version = '{full_version or version}'\nmajor = '3'\ncommit = '{commit}'\n"
                    "with_mkl = 'ON'\n")
            wheel.writestr(zipfile.ZipInfo("paddle/version/__init__.py", date_time=date), text)
    return path


def test_a_post_build_is_read_from_its_wheel_without_installing_it(tmp_path):
    info = read_wheel(make_wheel(tmp_path))
    assert info == {"distribution": "paddlepaddle", "version": POST, "commit": COMMIT, "date": "2026-04-03",
                    "build": True}
    # a release's wheel is no build; its date is the version file's in the zip
    release = read_wheel(make_wheel(tmp_path, "3.3.1", name="paddlepaddle-gpu", date=(2025, 11, 20, 8, 0, 0)))
    assert (release["distribution"], release["build"], release["date"]) == ("paddlepaddle-gpu", False, "2025-11-20")
    assert build_date("3.4.0.dev20260501") == "2026-05-01" and build_date("3.3.1", (1980, 1, 1, 0, 0, 0)) == ""


def test_builds_order_between_the_releases():
    names = ["3.4.0", POST, "3.3.1", "3.4.0.dev20260501", "3.3.0.post20251201", "3.3.1.post20260101", "3.3.0"]
    assert sorted(names, key=version_key) == ["3.3.0", "3.3.0.post20251201", "3.3.1", "3.3.1.post20260101", POST,
                                              "3.4.0.dev20260501", "3.4.0"]
    assert version_key("3.3.1") == (3, 3, 1) and is_build(POST) and not is_build("3.3.1")


def test_a_build_env_sorts_among_the_release_envs_a_host_has(settings, tmp_path):
    settings.PADDLE_ENVS_DIR = str(make_fake_envs(tmp_path / "envs", ["3.3.1", "3.3.0.post20251201", "3.2.2"]))
    assert [env.version for env in paddle_envs.installed()] == ["3.2.2", "3.3.0.post20251201", "3.3.1"]
    assert paddle_envs.releases().index("3.3.0.post20251201") == 1
    paddle_envs.check_release_name("3.3.0.post20251201")  # a run may name a build as its release
    with pytest.raises(paddle_envs.EnvError, match="not a Paddle release number"):
        paddle_envs.check_release_name("3.3.0.nightly")


@pytest.mark.parametrize("broken, reason", [
    (dict(name="torch"), "a wheel of torch, not of paddlepaddle"),
    (dict(version_file=False), "has no paddle/version/__init__.py"),
    (dict(full_version="3.3.1"), f"METADATA says version {POST} but paddle/version/__init__.py says 3.3.1"),
    (dict(commit="unknown"), "names no commit"),
])
def test_what_is_not_a_paddle_build_is_refused_and_nothing_is_made(settings, tmp_path, broken, reason):
    settings.PADDLE_ENVS_DIR = str(tmp_path / "envs")
    wheel = make_wheel(tmp_path, **broken)
    with pytest.raises(CommandError) as refused:
        call_command("paddle_envs", "add", "--wheel", str(wheel))
    assert str(wheel) in str(refused.value) and reason in str(refused.value)
    assert not (tmp_path / "envs").exists() or not any((tmp_path / "envs").iterdir())


def test_a_file_that_is_no_wheel_is_refused_with_where_and_why(settings, tmp_path):
    settings.PADDLE_ENVS_DIR = str(tmp_path / "envs")
    fake = tmp_path / "paddlepaddle-3.3.1-cp311-cp311-linux_x86_64.whl"
    fake.write_text("not a zip")
    with pytest.raises(CommandError, match="not a readable wheel"):
        call_command("paddle_envs", "add", "--wheel", str(fake))
    with pytest.raises(CommandError, match="no such wheel file"):
        call_command("paddle_envs", "add", "--wheel", str(tmp_path / "missing.whl"))
    with pytest.raises(WheelError, match=r"expected a wheel file \(\*\.whl\)"):
        read_wheel(tmp_path / "paddle.zip")
    with pytest.raises(CommandError, match="not both"):
        call_command("paddle_envs", "add", "3.3.1", "--wheel", str(fake))


def test_a_wheel_url_is_downloaded_once_into_the_envs_folder(settings, tmp_path):
    settings.PADDLE_ENVS_DIR = str(tmp_path / "envs")
    served = tmp_path / "served"
    served.mkdir()
    wheel = make_wheel(served)
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            requests.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{wheel.name}"
        first, again = paddle_envs.fetch_wheel(url), paddle_envs.fetch_wheel(url)
        with pytest.raises(paddle_envs.EnvError, match="could not download the wheel"):
            paddle_envs.fetch_wheel(url.replace(wheel.name, "paddlepaddle-0.0.0-py3-none-any.whl"))
    finally:
        server.shutdown()
    assert first == again == tmp_path / "envs" / ".wheels" / wheel.name and requests.count(f"/{wheel.name}") == 1  # fetched once
    assert read_wheel(first)["commit"] == COMMIT and first.read_bytes() == wheel.read_bytes()
    assert json.dumps(sorted(p.name for p in (tmp_path / "envs" / ".wheels").iterdir())) == json.dumps([wheel.name])


@pytest.mark.django_db
def test_a_fix_found_in_a_build_says_which_build_and_that_no_release_has_it_yet():
    from django.utils import translation

    from tracker.models import TestRun
    from tracker.selectors.releases import FixedIn, describe
    from tracker.vocab import FixedInKind

    build = "3.4.0.dev20260501"
    TestRun.objects.create(scope={}, release=build, paddle_version=build, paddle_commit=COMMIT, state="done")
    answer = FixedIn(kind=FixedInKind.FIXED, release=build, latest=build, passing_latest=2, judged_latest=2,
                     before="3.3.1", failing_before=2, releases=["3.3.1", build])
    text = describe(answer)
    assert text.endswith(f"— build of 2026-05-01, commit {COMMIT[:10]}, not yet released"), text
    assert text.startswith(f"fixed in Paddle {build}")
    released = FixedIn(**{**answer.__dict__, "releases": ["3.3.1", build, "3.4.0"]})
    assert describe(released).endswith(f"— build of 2026-05-01, commit {COMMIT[:10]}")
    plain = FixedIn(**{**answer.__dict__, "release": "3.4.0", "releases": ["3.3.1", "3.4.0"]})
    assert "build of" not in describe(plain)
    with translation.override("zh-hans"):
        assert "尚未发布" in describe(answer)
