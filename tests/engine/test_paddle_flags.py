"""Paddle flags in the engine (apitester/paddle_flags.py, issue 35 item 5): the grammar, the check against the flags a
real Paddle defines, the worker pool setting them in its workers' environment, and ``python -m apitester
--paddle_flags``.

What FLAGS_use_accuracy_compatible_kernel changes on this CPU build (paddle 3.3.1), checked by hand: in
paddle.nn.functional.conv2d_transpose a depthwise call (groups == in_channels, one filter per group) goes to the
kernel ``depthwise_conv2d_transpose`` with the flag off and to ``conv2d_transpose`` with it on. For float32 and
float64 the two CPU kernels give the same bits, outputs and both gradients alike (a sweep of strides, paddings,
dilations, output paddings, kernel sizes 1-11, 2-64 channels, NCHW and NHWC found no difference); what the flag
changes observably is the float16 config's error: neither kernel has a float16 CPU kernel, and Paddle's message
names the one it dispatched to. Both are tested here for real.
"""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from apitester.builds import probe_flags
from apitester.paddle_flags import FlagError, check_flags, format_flags, matches, parse_flags
from apitester.pool import TimeBudget, WorkerPool

REPO = Path(__file__).resolve().parents[2]
FLAG = "FLAGS_use_accuracy_compatible_kernel"
# Depthwise conv2d_transpose (groups == in_channels == 4, weight [4, 1, 3, 3]).
DEPTHWISE_F16 = 'paddle.nn.functional.conv2d_transpose(Tensor([2, 4, 5, 5],"float16"), Tensor([4, 1, 3, 3],"float16"), stride=2, groups=4, )'
DEPTHWISE_F32 = 'paddle.nn.functional.conv2d_transpose(Tensor([2, 4, 5, 5],"float32"), Tensor([4, 1, 3, 3],"float32"), stride=2, groups=4, )'
OFF_KERNEL = "of kernel `depthwise_conv2d_transpose` is not registered"
ON_KERNEL = "of kernel `conv2d_transpose` is not registered"


def test_a_flag_string_is_parsed_into_sorted_name_value_pairs():
    assert parse_flags("") == parse_flags(None) == parse_flags("  , ") == {}
    assert parse_flags(f"{FLAG}=1") == {FLAG: "1"}
    assert parse_flags(f" FLAGS_b=0,{FLAG}=true  FLAGS_c=1.5 ") == {FLAG: "true", "FLAGS_b": "0", "FLAGS_c": "1.5"}
    assert format_flags(parse_flags(f"{FLAG}=1,FLAGS_b=0")) == f"FLAGS_b=0 {FLAG}=1"


@pytest.mark.parametrize("text, said", [
    (FLAG, "write NAME=VALUE"),                               # no value at all
    (f"{FLAG}=", f"Paddle flag {FLAG} has no value"),
    ("=1", "malformed Paddle flag name ''"),
    ("use_accuracy_compatible_kernel=1", "a name is FLAGS_ followed by"),  # without the FLAGS_ prefix
    (f"{FLAG}=1=2", "write NAME=VALUE"),
    (f"{FLAG}=1;FLAGS_b=0", "write NAME=VALUE"),
    (f"{FLAG}=1;true", "malformed value '1;true'"),
    (f"{FLAG}=1,{FLAG}=0", f"Paddle flag {FLAG} is given twice"),
    ("FLAGS_x=$(rm -rf /)", "malformed value"),
    ("FLAGS_-x=1", "malformed Paddle flag name 'FLAGS_-x'"),
])
def test_a_malformed_flag_string_is_refused_with_a_message_naming_the_item(text, said):
    with pytest.raises(FlagError) as caught:
        parse_flags(text)
    assert said in str(caught.value)


def test_values_are_checked_against_the_flags_type_and_bools_spelled_1_or_0():
    defined = {FLAG: "bool", "FLAGS_n": "int", "FLAGS_f": "float", "FLAGS_s": "str"}
    assert check_flags({FLAG: "true", "FLAGS_n": "3", "FLAGS_f": "0.5", "FLAGS_s": "auto"}, defined,
                       release="3.3.1") == {FLAG: "1", "FLAGS_n": "3", "FLAGS_f": "0.5", "FLAGS_s": "auto"}
    # Paddle itself reads FLAGS_...=abc as the default, silently: refused here.
    with pytest.raises(FlagError, match="is a boolean: give 1 or 0"):
        check_flags({FLAG: "abc"}, defined, release="3.3.1")
    with pytest.raises(FlagError, match="FLAGS_n is an integer"):
        check_flags({"FLAGS_n": "1.5"}, defined, release="3.3.1")
    with pytest.raises(FlagError, match=f"Paddle 3.0.0 does not define {FLAG}"):
        check_flags({FLAG: "1"}, {FLAG: None}, release="3.0.0")
    assert matches({FLAG: "1"}, {FLAG: True}) and not matches({FLAG: "1"}, {FLAG: False})
    assert not matches({FLAG: "1"}, {FLAG: None}) and not matches({FLAG: "1"}, {})


def test_the_main_envs_paddle_is_asked_which_flags_it_defines():
    found = probe_flags(sys.executable, [FLAG, "FLAGS_call_stack_level", "FLAGS_no_such_flag_here"])
    assert found == {FLAG: "bool", "FLAGS_call_stack_level": "int", "FLAGS_no_such_flag_here": None}


def _run(pool, *configs):
    return {r.key: r for r in pool.run(list(enumerate(configs)))}


FAST = dict(time_budget=TimeBudget(base=60.0, per_million_elements=5.0), threads_per_worker=1)


def test_the_flag_reaches_the_pool_worker_and_switches_the_depthwise_kernel():
    """On: the worker's Paddle reads the flag from its environment (paddle.get_flags says True, reported with every
    verdict's build) and conv2d_transpose dispatches to conv2d_transpose; off (a pool without flags): to
    depthwise_conv2d_transpose. The float32 depthwise config gives the same numbers either way on this build."""
    with WorkerPool(1, paddle_flags={FLAG: "1"}, **FAST) as on:
        info = on.wait_ready()
        assert info["paddle_flags"] == {FLAG: True}
        results_on = _run(on, DEPTHWISE_F16, DEPTHWISE_F32)
    with WorkerPool(1, **FAST) as off:
        assert "paddle_flags" not in off.wait_ready()
        results_off = _run(off, DEPTHWISE_F16, DEPTHWISE_F32)
    assert results_on[0].build["paddle_flags"] == {FLAG: True} and "paddle_flags" not in results_off[0].build
    assert results_on[0].status == results_off[0].status == "paddle_error"
    assert ON_KERNEL in results_on[0].verdict["message"] and OFF_KERNEL not in results_on[0].verdict["message"]
    assert OFF_KERNEL in results_off[0].verdict["message"]
    assert results_on[1].status == results_off[1].status == "pass"
    for key in ("max_abs", "max_rel", "total"):
        assert results_on[1].verdict[key] == results_off[1].verdict[key]


def _cli(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "apitester", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout)


def test_the_engine_cli_sets_the_flag_with_set_flags_and_refuses_bad_ones():
    out = _cli(f"--api_config={DEPTHWISE_F16}", "--json", f"--paddle_flags={FLAG}=1")
    verdict = json.loads(out.stdout.strip().splitlines()[-1])
    assert verdict["paddle_flags"] == {FLAG: True} and ON_KERNEL in verdict["message"]
    assert f"Paddle flags: {FLAG}=1" in out.stderr

    malformed = _cli(f"--api_config={DEPTHWISE_F32}", f"--paddle-flags={FLAG}")
    assert malformed.returncode == 2 and "write NAME=VALUE" in malformed.stderr and not malformed.stdout
    unknown = _cli(f"--api_config={DEPTHWISE_F32}", "--paddle-flags=FLAGS_no_such_flag_here=1")
    assert unknown.returncode == 2 and "does not define FLAGS_no_such_flag_here" in unknown.stderr
    assert not unknown.stdout  # nothing ran
