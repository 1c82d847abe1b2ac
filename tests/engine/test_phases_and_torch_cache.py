"""Where a verdict's time goes (apitester.engine.phases) and the Torch result cache (apitester.engine.torch_cache), issue #43:
each phase holds its own exclusive seconds; a cached Torch result gives the same verdict bit for bit, is reused
for the same config and draw, is not reused for another Torch build, thread count or draw, is re-checked on a
sample of hits, and a corrupted entry is recomputed, never trusted."""
import json
import os

import numpy as np
import pytest

import tests.fake_specs.engine  # noqa: F401  (apitester_test.slow_sides)
from apitester.engine import torch_cache
from apitester.engine import execute as ex
from apitester.engine import trial
from apitester.engine.execute import run_config
from apitester.engine.phases import Phase, PhaseClock

INTERPOLATE = 'paddle.nn.functional.interpolate(Tensor([1, 2, 16, 16],"float16"), list[64,64,], mode="bilinear", ' \
              'align_corners=False, )'
SUM = 'paddle.sum(Tensor([40, 128],"float16"), )'  # a 0-d output: the entry keeps its shape
EIGH = 'paddle.linalg.eigh(Tensor([4, 4],"float64"), )'  # two outputs, gradients of both
FAILING = 'paddle.Tensor.__mul__(Tensor([8, 8],"float16"), 1000000.0, )'  # fails forward on 3.3.1


def _verdict_fields(verdict) -> dict:
    data = verdict.to_dict()
    for timing in ("seconds", "framework_seconds", "phases", "torch_cache"):
        data.pop(timing)
    return data


@pytest.fixture
def cache(tmp_path, monkeypatch):
    # every entry kept, however cheap Torch was (these configs take Torch well under a millisecond)
    monkeypatch.setattr(torch_cache, "KEEP_FLOOR_SECONDS", 0.0)
    monkeypatch.setattr(torch_cache, "READ_BYTES_PER_SECOND", float("inf"))
    made = torch_cache.use(tmp_path / "torch-cache", verify_every=1000)
    yield made
    torch_cache.use(None)


def test_each_phase_holds_its_own_seconds_and_framework_seconds_are_the_calls():
    # slow_sides: 0.2 s in the Paddle call, 0.1 s in the Torch call and 0.3 s drawing the input, per draw
    v = run_config('apitester_test.slow_sides(Tensor([4],"float32"), )')
    draws = len(v.draws)
    assert 0.2 * draws <= v.phases["paddle"] < 0.2 * draws + 0.1 * draws
    assert 0.1 * draws <= v.phases["torch"] < 0.1 * draws + 0.1 * draws
    assert v.phases["draws"] >= 0.3 * draws
    assert v.framework_seconds == pytest.approx(v.phases["paddle"] + v.phases["torch"], abs=1e-3)
    assert sum(v.phases.values()) == pytest.approx(v.seconds, abs=2e-3)


def test_a_nested_span_is_not_counted_twice_and_an_absorbing_span_takes_everything_inside():
    clock = PhaseClock()
    with clock.span(Phase.COMPARE):
        with clock.span(Phase.EXACT):
            sum(range(200_000))
    assert clock.seconds[Phase.EXACT] > 0 and clock.seconds[Phase.COMPARE] < clock.seconds[Phase.EXACT] * 5
    with clock.span(Phase.READINGS, absorb=True):
        clock.call(Phase.PADDLE, sum, range(200_000))
    assert Phase.PADDLE not in clock.seconds and clock.seconds[Phase.READINGS] > 0


@pytest.mark.parametrize("config", [INTERPOLATE, SUM, EIGH, FAILING])
def test_a_cached_torch_result_gives_the_same_verdict_and_is_reused(cache, config):
    torch_cache.use(None)
    plain = run_config(config)
    assert plain.torch_cache == {}
    cache = torch_cache.use(cache.root, verify_every=1000)
    first = run_config(config)
    assert first.torch_cache.get("miss", 0) >= 1 and first.torch_cache.get("stored", 0) >= 1
    cache.hits = 1  # past the first hit's check: a plain read
    second = run_config(config)
    assert second.torch_cache.get("hit", 0) == first.torch_cache["miss"] and "miss" not in second.torch_cache
    assert _verdict_fields(first) == _verdict_fields(second) == _verdict_fields(plain)
    assert second.phases.get("torch", 0.0) < first.phases["torch"] or first.phases["torch"] < 1e-3


def test_the_first_hit_is_recomputed_and_checked(cache):
    run_config(EIGH)
    checked = run_config(EIGH)
    assert checked.torch_cache.get("verified", 0) == 1 and "mismatch" not in checked.torch_cache


def test_another_torch_thread_count_or_draw_is_another_entry(cache):
    import torch

    run_config(SUM)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(threads + 1)
        other = run_config(SUM)
    finally:
        torch.set_num_threads(threads)
    assert "hit" not in other.torch_cache and other.torch_cache.get("miss", 0) >= 1
    replay = run_config(SUM, draw="typical:7")
    assert "hit" not in replay.torch_cache


def test_another_torch_version_is_another_entry(cache, monkeypatch):
    _, torch = ex.frameworks()
    run_config(SUM)
    monkeypatch.setattr(torch, "__version__", "2.12.0+cpu")
    assert "hit" not in run_config(SUM).torch_cache


def test_a_corrupted_entry_is_recomputed_never_trusted(cache):
    clean = run_config(EIGH)
    entries = sorted(cache.root.glob("*/*.entry"))
    assert entries
    for path in entries:  # a flipped byte inside the values of every entry, and one truncated
        data = bytearray(path.read_bytes())
        values = max((a for a in torch_cache._decode(bytes(data)).arrays if a is not None), key=lambda a: a.nbytes)
        at = bytes(data).find(values.tobytes())
        assert at > 0
        data[at + values.nbytes // 2] ^= 0x01
        path.write_bytes(bytes(data))
    entries[0].write_bytes(entries[0].read_bytes()[:40])
    header = bytearray(entries[1].read_bytes())  # and a changed byte inside another's header
    header[30] ^= 0x01
    entries[1].write_bytes(bytes(header))
    cache.hits = 1
    again = run_config(EIGH)
    assert again.torch_cache.get("corrupt", 0) == len(entries) and "hit" not in again.torch_cache
    assert _verdict_fields(again) == _verdict_fields(clean)
    assert all(p.exists() for p in entries)  # rewritten whole
    cache.hits = 1
    assert run_config(EIGH).torch_cache.get("hit", 0) == len(entries)


def test_a_mismatching_entry_is_dropped_and_the_fresh_result_used(cache):
    clean = run_config(SUM)
    for path in cache.root.glob("*/*.entry"):
        entry = torch_cache._decode(path.read_bytes())
        entry.arrays = [np.asarray(a, dtype=a.dtype) + np.asarray(1, dtype=a.dtype) for a in entry.arrays]
        path.write_bytes(torch_cache._encode(entry))  # a well-formed entry with other bits
    cache.verify_every = 1  # every hit is checked (a sample of hits would let an unchecked draw read the bad entry)
    checked = run_config(SUM)
    assert checked.torch_cache.get("mismatch", 0) >= 1
    assert _verdict_fields(checked) == _verdict_fields(clean)


def test_the_cache_stays_within_its_bound(tmp_path):
    cache = torch_cache.TorchCache(tmp_path, max_bytes=64 << 10)
    for i in range(40):
        entry = torch_cache.Entry(arrays=[np.full(1024, i, dtype=np.float32)], dtypes=["float32"], tensors=[True],
                                  differentiable=[False], seconds=1.0)
        cache.put(cache.key({"i": i}), entry)
        os.utime(cache._path(cache.key({"i": i})), (i, i))  # written one after another
    assert cache.size() <= 64 << 10
    assert cache.get(cache.key({"i": 39})) is not None  # the newest kept, the oldest gone
    assert cache.get(cache.key({"i": 0})) is None
    big = torch_cache.Entry(arrays=[np.zeros(1 << 16, dtype=np.float32)], dtypes=["float32"], tensors=[True],
                            differentiable=[False], seconds=1.0)
    cache.put("ab" + "0" * 62, big)  # over an eighth of the bound: not kept
    assert cache.get("ab" + "0" * 62) is None


def test_an_entry_cheaper_to_recompute_than_to_read_is_not_kept(tmp_path, monkeypatch):
    # The floor is raised far above any Torch time here: with the real 1 ms floor this test failed in CI whenever
    # the machine was loaded (Torch's first backward of the process took 4.5 ms) -- the rule is asserted below.
    monkeypatch.setattr(torch_cache, "KEEP_FLOOR_SECONDS", 60.0)
    cache = torch_cache.use(tmp_path / "cheap", verify_every=1000)
    try:
        verdict = run_config(SUM)
    finally:
        torch_cache.use(None)
    assert verdict.torch_cache.get("miss", 0) >= 1 and "stored" not in verdict.torch_cache
    assert list(cache.root.glob("*/*.entry")) == []
    monkeypatch.setattr(torch_cache, "KEEP_FLOOR_SECONDS", 0.001)
    slow = torch_cache.Entry(arrays=[np.zeros(10, dtype=np.float32)], dtypes=["float32"], tensors=[True],
                             differentiable=[False], seconds=0.5)
    assert torch_cache.worth_keeping(slow) and not torch_cache.worth_keeping(
        torch_cache.Entry(arrays=[np.zeros(1 << 22, dtype=np.float32)], dtypes=["float32"], tensors=[True],
                          differentiable=[False], seconds=0.002))


def test_random_apis_and_in_place_apis_are_never_cached(cache):
    verdict = run_config('paddle.Tensor.fill_diagonal_(Tensor([4, 4],"float32"), 1.0, )')
    assert verdict.torch_cache == {}
    assert list(cache.root.glob("*/*.entry")) == []


def test_an_entry_key_names_what_the_result_depends_on():
    key = json.loads(json.dumps(trial.cache_parts(trial.prepare(SUM))))
    assert set(key) == {"config", "draw", "layer", "grad", "device", "torch", "threads", "cpu_capability", "numpy"}
