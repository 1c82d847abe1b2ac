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


def test_the_diagnosis_reads_at_the_threads_its_verdict_was_judged_at():
    """A reduction's result moves with the thread count (Torch's bfloat16 sum of one report config: −512 at 2 threads,
    −600 at 1): the diagnosis process is pinned to the run's threads, and its JSON says what it ran under."""
    from tracker.models import TestRun

    config = 'paddle.add(Tensor([3],"float32"), Tensor([3],"float32"), )'
    for threads, expected in ((None, "1"), (2, "2")):
        result = ConfigResult(failing_config=FailingConfig(config=config), run=TestRun(pk=1, threads=threads))
        command = diagnose_command(result)
        assert command[command.index("--threads") + 1] == expected
    answer = run_engine(ConfigResult(failing_config=FailingConfig(config=config), run=TestRun(pk=1, threads=2)))
    prov = answer["provenance"]["threads"]
    assert (prov["torch"], prov["paddle"]) == (2, 2), answer["provenance"]
