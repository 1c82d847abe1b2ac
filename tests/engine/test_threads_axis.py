"""Threads and CPU as axes of a verdict (issue #46): every verdict carries its provenance, ``--threads N`` pins both
frameworks, and a thread-sensitive kernel (tests/fake_specs/threads.py: a float32 sum in one chunk per thread) is
exact at one thread and not at two — through the real CLI (a subprocess importing real paddle and torch) and the
engine in this process."""
import json

import pytest

from apitester import provenance
from apitester.engine.execute import run_config
from tests.engine_helpers.cli import run

THREADED = 'apitester_test.threaded_sum(Tensor([4096],"float32"), )'
SPECS = {"APITESTER_EXTRA_SPECS": "tests.fake_specs.threads"}


def test_cli_pins_both_frameworks_and_every_json_verdict_says_so():
    proc = run("--json", "--threads", "2", f"--api_config={THREADED}", extra_env=SPECS)
    verdict = json.loads(proc.stdout.splitlines()[-1])
    prov = verdict["provenance"]
    assert set(provenance.FIELDS) <= set(prov), prov
    assert prov["threads"]["torch"] == 2 and prov["threads"]["paddle"] == 2
    assert prov["threads"]["omp_env"] == "2" and prov["threads"]["mkl_env"] == "2"
    assert prov["paddle_version"] and len(prov["paddle_commit"]) == 40 and prov["torch_version"].startswith("2.")
    assert prov["cpu_capability"]["torch"] in ("DEFAULT", "AVX2", "AVX512", "ZVECTOR", "NO AVX")
    assert prov["cpu_capability"]["paddle"] in ("DEFAULT", "AVX", "AVX2", "AVX512") and prov["host"]
    # two threads sum in two chunks: float32 rounding moves the result off Torch's one-chunk order
    assert (verdict["status"], verdict["rule"]) == ("pass", "within_tolerance") and verdict["max_ulp"] > 0


@pytest.mark.parametrize("bad", ["0", "-1", "two"])
def test_cli_refuses_a_thread_count_that_is_not_a_whole_number_from_one(bad):
    proc = run("--json", f"--threads={bad}", f"--api_config={THREADED}", extra_env=SPECS)
    assert proc.returncode == 2 and "--threads" in proc.stderr and repr(bad) in proc.stderr and not proc.stdout


@pytest.fixture
def restore_threads():
    import torch

    before = torch.get_num_threads()
    yield
    provenance.pin_threads(before)


def test_one_thread_is_exact_and_the_provenance_is_read_again_after_a_pin(restore_threads):
    import tests.fake_specs.threads  # noqa: F401  (registers apitester_test.threaded_sum)

    provenance.pin_threads(1)
    one = provenance.provenance()
    assert one is provenance.provenance()  # read once, then the same dict every verdict
    assert provenance.thread_count(one) == 1 and one["threads"]["paddle"] == 1
    verdict = run_config(THREADED, device="cpu").to_dict()
    assert (verdict["status"], verdict["rule"], verdict["max_ulp"]) == ("pass", "exact", 0)
    provenance.pin_threads(2)
    two = provenance.provenance()
    assert provenance.thread_count(two) == 2 and provenance.fingerprint(two) != provenance.fingerprint(one)
    assert run_config(THREADED, device="cpu").to_dict()["rule"] == "within_tolerance"
    with pytest.raises(ValueError, match="at least 1"):
        provenance.pin_threads(0)


def test_cpu_flags_and_model_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
                       "flags\t\t: fpu sse avx avx2 fma avx512f avx512bw\n\nprocessor\t: 1\nmodel name\t: other\n")
    assert provenance.cpu_info(str(cpuinfo)) == {"cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
                                                 "cpu_flags": ["avx512f", "avx512bw", "avx2", "avx", "fma"]}
    assert provenance.cpu_info(str(tmp_path / "missing")) == {"cpu_model": "", "cpu_flags": []}


def test_thread_count_of_a_provenance_a_worker_may_send():
    assert provenance.thread_count({"threads": {"torch": 4, "paddle": 4}}) == 4
    assert provenance.thread_count({"threads": {"torch": None, "paddle": 3}}) == 3
    assert provenance.thread_count({"threads": {"torch": True}}) is None
    assert provenance.thread_count({"threads": "8"}) is None and provenance.thread_count(None) is None
