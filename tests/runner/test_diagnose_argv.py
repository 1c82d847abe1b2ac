"""Issue 45 item 6: the diagnosis subprocess gets `--` before the config, so a config that starts with `--` is read
as the config (and refused by the config grammar), never as an option of `python -m apitester diagnose`. Runs the
real engine process (about 2 s: it stops at the config's syntax, before paddle or torch are imported)."""
from tracker.models import ConfigResult, FailingConfig
from tracker.services.diagnoses import diagnose_command, run_engine

OPTION_LIKE = ["--max-trials=1", "--json", "--draw", "-h"]


def _result(config: str, draw: str = "") -> ConfigResult:
    return ConfigResult(failing_config=FailingConfig(config=config), draw=draw)


def test_the_config_follows_a_double_dash():
    for config in OPTION_LIKE:
        command = diagnose_command(_result(config, draw="edge:3@p"))
        assert command[-2:] == ["--", config] and command.count("--") == 1


def test_an_option_like_config_reaches_the_engine_as_a_config():
    answer = run_engine(_result("--max-seconds=0.001"))
    assert answer["config"] == "--max-seconds=0.001" and answer["diagnosed"] is False
    assert "config syntax error" in answer["reason"]
