"""A verdict is the worst over deterministic input draws (apitester.inputs.draw_plan): typical,
edge, extra seeds for small inputs.  Real paddle and torch (CPU); the failing draw is recorded and
replays exactly (``run_config(..., draw=...)``, ``python -m apitester --draw``)."""

import json
import math
import zlib

import numpy as np
import pytest

import tests.fake_specs.engine  # noqa: F401  (registers the apitester_test.* specs)
from apitester import inputs as inp
from apitester.config import TensorSpec, parse_config
from apitester.engine.execute import run_config
from apitester.engine.trial import bind as _bind, plain_arguments as _plain, signature as _signature
from apitester.specs import engine_specs, get_spec
from tests.engine_helpers.report_configs import configs
from tests.engine_helpers.cli import FAKE_SPECS, run as run_cli

LOGIT = 'paddle.logit(x=Tensor([4],"float32"), )'
CUMPROD = 'paddle.cumprod(x=Tensor([3, 4],"int32"), dim=0, )'
# Paddle's logit against a reference whose gradient differs from it only outside (0, 1)
LOGIT_CONSTRUCT = 'apitester_test.logit_finite_gradient_outside(x=Tensor([4],"float32"), )'


def _bound(config: str) -> tuple[dict, object]:
    """The parsed, bound arguments of a config as execute binds them, and its spec."""
    call = parse_config(config)
    spec = get_spec(call.api)
    bound = _bind(_signature(spec, call.api), call)
    return {k: _plain(v) for k, v in bound.arguments.items()}, spec


def _options(spec) -> inp.EdgeOptions:
    return inp.EdgeOptions(nan_inf=spec.nan_inf, overflow=spec.overflow, magnitudes=spec.magnitudes,
                           extra=dict(spec.edges))


def _arrays(materialised) -> list[np.ndarray]:
    out = []
    inp.walk(materialised, lambda item, _path: out.append(item.array) if isinstance(item, inp.InputTensor) else None,
             into=(list, tuple, dict))
    return out


# ---------------------------------------------------------------- the plan and the typical draw


def test_the_plan_is_typical_then_edge_then_extra_seeds_for_small_inputs_only():
    small = inp.draw_plan(inp.SMALL_INPUT_ELEMENTS, seed=0)
    assert [str(d) for d in small] == ["typical:0@2", "edge:0@2", "typical:1@2", "typical:2@2"]
    assert [str(d) for d in inp.draw_plan(inp.SMALL_INPUT_ELEMENTS + 1, seed=5)] == ["typical:5@2", "edge:5@2"]
    assert [str(d) for d in inp.draw_plan(inp.EDGE_INPUT_ELEMENTS + 1, seed=0)] == ["typical:0@2"]
    assert inp.Draw.parse("edge:3@2") == inp.Draw("edge", 3) and inp.Draw.parse({"kind": "typical", "seed": 1}).seed == 1
    for bad in ("edgy:0", "edge:x", "typical:1.5", "edge:0@9", "edge:0@x"):
        with pytest.raises(ValueError, match="KIND:SEED"):
            inp.Draw.parse(bad)


@pytest.mark.parametrize("config", [
    LOGIT, CUMPROD,
    'paddle.nn.functional.binary_cross_entropy(Tensor([4, 3],"float32"), Tensor([4, 3],"float32"), '
    'weight=Tensor([4, 3],"float32"), )',
    'paddle.concat(list[Tensor([2, 3],"float16"),Tensor([2, 3],"bfloat16"),], 0, )',
    'paddle.put_along_axis(Tensor([4, 5],"float64"), Tensor([4, 2],"int64"), Tensor([4, 2],"float64"), 1, )',
])
def test_the_typical_draw_is_the_single_draw_inputs_always_were(config):
    """The first draw of every plan is inputs.materialise(seed 0), the function every verdict drew
    its inputs with before draws existed: existing verdicts do not shift."""
    bound, spec = _bound(config)
    before = _arrays(inp.materialise(bound, spec.domains, 0))
    typical, placed = inp.materialise_draw(bound, spec.domains, inp.Draw("typical", 0), _options(spec))
    assert placed == 0
    after = _arrays(typical)
    assert len(before) == len(after) and before
    for a, b in zip(before, after):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    # the edge draw is that draw with some elements replaced (none where the domain is a precondition)
    edge, placed = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), _options(spec))
    changed = sum(int(np.count_nonzero((a != e) & ~(np.isnan(e) if e.dtype.kind == "f" else False)))
                  + int(np.count_nonzero(np.isnan(e) if e.dtype.kind == "f" else 0))
                  for a, e in zip(after, _arrays(edge)))
    assert 0 < changed <= placed


# ---------------------------------------------------------------- edge values reach the failure


def test_logit_edge_draw_reaches_outside_the_unit_interval_where_the_typical_draw_does_not():
    bound, spec = _bound(LOGIT)
    typical = inp.materialise_draw(bound, spec.domains, inp.Draw("typical", 0), _options(spec))[0]["x"].array
    assert ((typical > 0) & (typical < 1)).all()  # the miss the issue reports: four draws inside (0, 1)
    edge = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), _options(spec))[0]["x"].array
    assert sorted(edge.tolist()) == [-0.5, 0.0, 1.0, 1.5]  # the spec's edges: both bounds, both sides outside
    # NaN/inf only where the spec says the API defines them: a plain spec's edge draw has none
    bigger = inp.materialise_draw({"x": TensorSpec((64,), "float32")}, {}, inp.Draw("edge", 0))[0]["x"].array
    assert np.isfinite(bigger).all() and {0.0, 1.0, -1.0} <= set(bigger.tolist())
    logit64 = inp.materialise_draw({"x": TensorSpec((64,), "float32")}, spec.domains, inp.Draw("edge", 0),
                                   _options(spec))[0]["x"].array
    assert np.isnan(logit64).sum() == 1 and np.isposinf(logit64).sum() == 1 and np.isneginf(logit64).sum() == 1


def test_a_failure_only_in_the_edge_draw_is_the_verdict_with_its_draw():
    """Real paddle.logit against a reference that differs from it only outside (0, 1): the typical
    draw passes, the edge draw fails, and the verdict says which draw (no further draw runs)."""
    verdict = run_config(LOGIT_CONSTRUCT)
    assert (verdict.status, verdict.direction) == ("accuracy_error", "backward"), verdict.message
    assert verdict.draw == {"kind": "edge", "seed": 0, "format": 2}
    assert verdict.draws == ["typical:0@2", "edge:0@2"]  # stopped at the first failing draw
    assert verdict.to_dict()["draw"] == {"kind": "edge", "seed": 0, "format": 2}  # the JSON seam: a plain dict
    typical = run_config(LOGIT_CONSTRUCT, draw="typical:0")
    assert typical.status == "pass" and typical.draws == ["typical:0"], typical.message
    replay = run_config(LOGIT_CONSTRUCT, draw=verdict.draw)
    assert (replay.status, replay.direction, replay.mismatched, replay.output) == \
        (verdict.status, verdict.direction, verdict.mismatched, verdict.output)
    assert replay.message == verdict.message


def test_a_later_draw_without_a_verdict_changes_nothing_and_says_so():
    """The reference raises for the edge values (torch_error): no verdict for that draw, so the
    typical draw's pass stands, and the message names the draw that was not judged."""
    config = 'apitester_test.logit_reference_rejects_outside(x=Tensor([4],"float32"), )'
    verdict = run_config(config)
    assert verdict.status == "pass" and verdict.draw == {"kind": "typical", "seed": 0, "format": 2}, verdict.message
    assert "draw edge:0@2 not judged (torch_error" in verdict.message
    assert run_config(config, draw="edge:0@2").status == "torch_error"


def test_the_cli_replays_the_reported_draw_and_refuses_a_malformed_one():
    env = {"APITESTER_EXTRA_SPECS": FAKE_SPECS}
    full = run_cli(f"--api_config={LOGIT_CONSTRUCT}", "--json", extra_env=env)
    verdict = json.loads(full.stdout)
    assert full.returncode == 1 and verdict["draw"] == {"kind": "edge", "seed": 0, "format": 2}, full.stderr
    draw = f"{verdict['draw']['kind']}:{verdict['draw']['seed']}@{verdict['draw']['format']}"
    replay = json.loads(run_cli(f"--api_config={LOGIT_CONSTRUCT}", f"--draw={draw}", "--json", extra_env=env).stdout)
    for key in ("status", "direction", "mismatched", "max_abs", "output", "message", "draw"):
        assert replay[key] == verdict[key], key
    assert replay["draws"] == [draw]
    human = run_cli(f"--api_config={LOGIT_CONSTRUCT}", extra_env=env)
    assert "(replay: --draw edge:0@2)" in human.stdout
    bad = run_cli(f"--api_config={LOGIT_CONSTRUCT}", "--draw=sideways:1")
    assert bad.returncode == 2 and "KIND:SEED" in bad.stderr and not bad.stdout


def test_cumprod_int32_overflow_is_found_by_the_edge_draw():
    """The board's cumprod task is int32 overflow (Paddle keeps int32, Torch promotes to int64).
    Typical ints in [-10, 10) never overflow; the edge draw has int32's extremes, and the strict
    layer (the plain torch.cumprod) then differs in value as well as dtype.  Casting Torch's result
    back to int32 wraps exactly as Paddle does, which is why that cast is a declared adaptation."""
    [config] = [c for c in configs("paddle.cumprod", '"int32"') if c == CUMPROD]
    bound, spec = _bound(config)
    edge = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), _options(spec))[0]["x"].array
    exact = np.cumprod(edge.astype(np.int64), axis=0)
    assert (np.abs(exact) > np.iinfo(np.int32).max).any()  # the edge draw overflows int32
    typical = run_config(config, draw="typical:0")
    assert typical.strict["status"] == "dtype_mismatch" and typical.strict["message"].endswith("values agree")
    verdict = run_config(config)
    assert verdict.status == "documented_difference", verdict.message  # was `pass`: the cast hid the dtype
    assert verdict.draw == {"kind": "edge", "seed": 0, "format": 2}  # the draw with the most values off the plain call
    assert verdict.strict["status"] == "dtype_mismatch" and "values also differ" in verdict.strict["message"]
    assert verdict.mismatched == int(np.count_nonzero(exact != exact.astype(np.int32)))
    assert verdict.adapted["status"] == "pass"  # int64 products wrapped to int32 equal Paddle's
    assert [a["kind"] for a in verdict.adaptations] == ["documented_semantics"]


# ---------------------------------------------------------------- preconditions


def test_precondition_domains_get_no_edge_values():
    spd = inp.spd()
    bound = {"x": TensorSpec((2, 5, 5), "float64"), "y": TensorSpec((6,), "int64"), "z": TensorSpec((9,), "float32")}
    domains = {"x": spd, "y": inp.indices(of="z", axis=None), "z": inp.unique()}
    typical = inp.materialise_draw(bound, domains, inp.Draw("typical", 0))[0]
    edge, placed = inp.materialise_draw(bound, domains, inp.Draw("edge", 0), inp.EdgeOptions(nan_inf=True, overflow=True))
    assert placed == 0
    for key in bound:
        assert edge[key].array.tobytes() == typical[key].array.tobytes(), key
    m = edge["x"].array
    assert np.allclose(m, np.swapaxes(m, -1, -2)) and np.linalg.eigvalsh(m).min() > 0
    # a real spec's precondition: cholesky_solve's y stays a Cholesky factor in its edge draw
    config = 'paddle.linalg.cholesky_solve(Tensor([3, 3],"float64"), Tensor([3, 3],"float64"), )'
    bound, spec = _bound(config)
    typical = inp.materialise_draw(bound, spec.domains, inp.Draw("typical", 0), _options(spec))[0]
    edge = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), _options(spec))[0]
    assert edge["y"].array.tobytes() == typical["y"].array.tobytes()
    assert edge["x"].array.tobytes() != typical["x"].array.tobytes()  # the right-hand side takes edges


def test_every_registered_domain_declares_its_edges_or_why_it_has_none():
    specs = engine_specs()  # not the test-only specs
    assert len(specs) > 100
    for api, spec in sorted(specs.items()):
        for param, domain in spec.domains.items():
            edges, reason = getattr(domain, "edges", None), getattr(domain, "precondition", "")
            assert edges is not None or reason, f"{api}: domain of {param!r} declares neither edges nor a precondition"


def test_a_random_api_keeps_one_draw():
    verdict = run_config('apitester_test.rand(x=Tensor([4],"float32"), )')
    assert verdict.statistical and verdict.draws == ["typical:0@2"]


# ---------------------------------------------------------------- what a draw costs


def _shortest_config_per_api() -> list[str]:
    from tests.engine_helpers.report_configs import _lines
    shortest: dict[str, str] = {}
    for line in _lines("cpu"):
        api = line.split("(", 1)[0]
        if get_spec(api) is not None and (api not in shortest or len(line) < len(shortest[api])):
            shortest[api] = line
    return sorted(shortest.values())


def test_whether_an_edge_draw_places_anything_is_known_before_drawing():
    """edge_draw_places (read off the tensor specs) says what materialising the edge draw would count, on the
    shortest CPU-report config of every API with a spec and on preconditions: an edge draw is skipped unseen
    only where it would have been the typical draw again."""
    configs_seen = places = 0
    for config in _shortest_config_per_api():
        try:
            bound, spec = _bound(config)
        except Exception:
            continue  # a config the engine cannot bind is unsupported before any draw
        options = _options(spec)
        try:
            _, placed = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), options)
        except Exception:
            continue  # a domain that refuses these inputs: the typical draw says so first
        assert inp.edge_draw_places(bound, spec.domains, options) == (placed > 0), config
        configs_seen += 1
        places += placed > 0
    assert configs_seen > 50 and 0 < places < configs_seen  # topk's distinct values place none
    spd_only = {"x": TensorSpec((2, 5, 5), "float64"), "z": TensorSpec((9,), "float32")}
    assert not inp.edge_draw_places(spd_only, {"x": inp.spd(), "z": inp.unique()}, inp.EdgeOptions(nan_inf=True))
    assert inp.edge_draw_places(spd_only, {"x": inp.spd()}, inp.EdgeOptions())
    assert not inp.edge_draw_places({"z": TensorSpec((0,), "float32")}, {}, inp.EdgeOptions())


def test_an_output_gradient_is_drawn_once_per_seed_within_a_config(monkeypatch):
    """The typical and the edge draw share seed 0 and so their output gradient: drawn once, handed to both
    frameworks (neither writes to it), so the edge draw's backward sees the same values the replayed edge draw does."""
    from apitester.engine import execute
    config = 'paddle.maximum(Tensor([50, 1],"float32"), Tensor([1, 100],"float32"), )'
    calls = []
    real = inp.uniform_array

    def counting(rng, lo, hi, shape, dtype, *, fmt):
        calls.append(tuple(shape))
        return real(rng, lo, hi, shape, dtype, fmt=fmt)

    monkeypatch.setattr(inp, "uniform_array", counting)
    verdict = run_config(config)
    assert verdict.status == "pass" and verdict.draws == ["typical:0@2", "edge:0@2", "typical:1@2", "typical:2@2"]
    assert calls.count((50, 100)) == 3  # seeds 0, 1, 2: the edge draw reused seed 0's gradient
    assert not [name for name in vars(execute) if "GRAD" in name.upper()]  # no gradient state outlives a trial
    replayed = run_config(config, draw="edge:0@2")
    assert replayed.status == "pass" and replayed.draws == ["edge:0@2"]


def test_an_edge_draw_from_the_typical_draws_values_is_the_edge_draw():
    """The edge draw takes the typical draw's domain values instead of drawing them again: byte for byte the
    edge draw drawn on its own, on the shortest CPU-report config of every API, and a domain that reads another
    param's arrays (ties_with: those carry edges in the edge draw) draws its values again."""
    compared = reused = 0
    for config in _shortest_config_per_api():
        try:
            bound, spec = _bound(config)
            options = _options(spec)
            alone, placed = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), options)
        except Exception:
            continue
        typical: dict = {}
        inp.materialise_draw(bound, spec.domains, inp.Draw("typical", 0), options, typical)
        reused += bool(typical)
        cached, placed_cached = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), options, typical)
        assert placed_cached == placed, config
        pairs = list(zip(_arrays(alone), _arrays(cached)))
        assert pairs and all(a.dtype == b.dtype and a.tobytes() == b.tobytes() for a, b in pairs), config
        compared += 1
    assert compared > 50 and reused > 50
    bound = {"x": TensorSpec((40,), "float32"), "y": TensorSpec((40,), "float32")}
    domains = {"y": inp.ties_with("x", fraction=0.5)}
    typical: dict = {}
    inp.materialise_draw(bound, domains, inp.Draw("typical", 0), inp.EdgeOptions(), typical)
    assert [key[2] for key in typical] == ["x"]  # y read x's array: not kept
    cached = inp.materialise_draw(bound, domains, inp.Draw("edge", 0), inp.EdgeOptions(), typical)[0]
    alone = inp.materialise_draw(bound, domains, inp.Draw("edge", 0), inp.EdgeOptions())[0]
    assert cached["y"].array.tobytes() == alone["y"].array.tobytes()


def test_an_input_written_in_place_by_the_typical_draw_leaves_the_edge_draw_as_drawn_alone():
    """The typical draw's input tensors are the domains' own arrays where nothing else holds them (no copy), but
    never the values kept for the edge draw: an API that writes its input in place (Torch shares the arrays it
    is given) cannot change what the edge draw is built from."""
    config = 'paddle.logit(x=Tensor([64, 8],"float32"), )'
    bound, spec = _bound(config)
    options = _options(spec)
    typical: dict = {}
    drawn, _ = inp.materialise_draw(bound, spec.domains, inp.Draw("typical", 0), options, typical)
    assert typical and all(not np.shares_memory(a, kept) for a in _arrays(drawn) for kept in typical.values())
    for a in _arrays(drawn):
        a[...] = 7.0  # an in-place API
    cached, _ = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), options, typical)
    alone, _ = inp.materialise_draw(bound, spec.domains, inp.Draw("edge", 0), options)
    assert [a.tobytes() for a in _arrays(cached)] == [a.tobytes() for a in _arrays(alone)]
    # without a cache the domain's new array is the input itself, and it is writable and C-contiguous
    fresh = _arrays(inp.materialise(bound, spec.domains, 0))[0]
    assert fresh.flags.owndata and fresh.flags.writeable and fresh.flags.c_contiguous


def test_distinct_values_are_permuted_after_the_cast_in_the_same_order():
    """unique() permutes the values in the tensor's own dtype: the same order as permuting the float64 grid and
    casting after (the shuffle's draws depend on the length only), value for value."""
    for dtype, shape, lo, hi in (("float32", (300, 7), -1.0, 1.0), ("float16", (1500,), -1.0, 1.0),
                                 ("float64", (5, 5), 0.0, 3.0), ("int32", (40, 3), 0, 0), ("uint8", (200,), 0, 0),
                                 ("bool", (2,), 0, 0), ("float32", (), -1.0, 1.0)):
        n = int(np.prod(shape))
        ctx = inp.DomainContext(shape, dtype, np.random.default_rng([3, 1, 0]), {}, {})
        values = inp.unique(lo, hi)(ctx)
        rng = np.random.default_rng([3, 1, 0])
        if dtype in ("int32", "uint8", "bool"):
            base = np.arange(n) - (0 if dtype.startswith("u") else n // 2)
            before = rng.permutation(base).reshape(shape).astype(dtype)
        else:
            before = rng.permutation(np.linspace(lo, hi, n, endpoint=False)).reshape(shape).astype(dtype)
        assert values.dtype == before.dtype and values.shape == before.shape
        assert values.tobytes() == before.tobytes(), dtype


# ---------------------------------------------------------------- draw formats


def test_a_draw_without_a_format_is_format_1_and_every_draw_round_trips_through_its_text_and_dict():
    """Everything stored or pasted before formats existed ("edge:0", {"kind", "seed"}) is format 1, so its replay
    draws the values it had; a draw made now is the current format and says so."""
    assert inp.DRAW_FORMAT == 2 and inp.Draw("edge", 0).format == 2
    assert inp.Draw.parse("edge:0").format == 1 and inp.Draw.parse({"kind": "edge", "seed": 0}).format == 1
    for draw in (inp.Draw("edge", 3, 1), inp.Draw("typical", 0, 2), inp.Draw("typical", 7)):
        assert inp.Draw.parse(str(draw)) == draw and inp.Draw.parse(draw.to_dict()) == draw
    assert str(inp.Draw("edge", 0, 1)) == "edge:0" and str(inp.Draw("edge", 0, 2)) == "edge:0@2"


def test_format_1_replays_the_old_values_and_format_2_draws_big_float32_float16_bfloat16_tensors_from_words():
    """Small tensors, float64 and integers are the same in both formats; a big float32/float16/bfloat16 tensor
    differs, with format 2's values on a 2**-22 grid over [-1, 1) and uniform in it."""
    big = inp.DRAW_CHUNK * 2 + 5
    bound = {"a": TensorSpec((big,), "float32"), "b": TensorSpec((big,), "float16"), "c": TensorSpec((big,), "bfloat16"),
             "d": TensorSpec((big,), "float64"), "e": TensorSpec((300,), "float32"), "f": TensorSpec((big,), "int32")}
    old = {k: v.array for k, v in inp.materialise_draw(bound, {}, inp.Draw("typical", 0, 1))[0].items()}
    new = {k: v.array for k, v in inp.materialise_draw(bound, {}, inp.Draw("typical", 0, 2))[0].items()}
    for name in "def":
        assert np.array_equal(old[name], new[name]), name
    for name in "abc":
        assert not np.array_equal(old[name], new[name]) and new[name].dtype == old[name].dtype, name
        assert -1.0 <= new[name].min() and new[name].max() <= 1.0, name
    # format 1 is numpy's uniform cast, value for value (what every stored draw drew)
    want = np.random.default_rng([0, zlib.crc32(b"a"), 0]).uniform(-1.0, 1.0, big).astype(np.float32)
    assert np.array_equal(old["a"], want)
    a = new["a"].astype(np.float64)
    steps = (a + 1.0) * 2**22
    assert np.array_equal(steps, np.round(steps))  # the grid of 23 mantissa bits
    assert abs(a.mean()) < 0.01 and abs(a.std() - 1 / np.sqrt(3)) < 0.01
    counts, _ = np.histogram(a, bins=16, range=(-1, 1))
    assert counts.min() > 0.9 * big / 16 and counts.max() < 1.1 * big / 16


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_format_2_values_do_not_depend_on_the_chunking(dtype, monkeypatch):
    shape = (3, inp.DRAW_CHUNK + 11)  # odd total: the last word's high half unused
    whole = inp.uniform_array(np.random.default_rng([9, 1]), -0.5, 2.0, shape, np.dtype(dtype), fmt=2)
    monkeypatch.setattr(inp, "DRAW_CHUNK", 1000)
    chunked = inp.uniform_array(np.random.default_rng([9, 1]), -0.5, 2.0, shape, np.dtype(dtype), fmt=2)
    assert np.array_equal(whole, chunked) and whole.shape == shape and whole.dtype == np.dtype(dtype)
    assert whole.min() >= -0.5 and whole.max() <= 2.0



def _float32_patterns() -> np.ndarray:
    """float32 bit patterns: every 257th of all 2**32 (every low-bit residue, so every rounding case), and every
    pattern around float16's largest finite value and its smallest subnormal (where rounding overflows or
    underflows)."""
    stride = np.arange(0, 2**32, 257, dtype=np.uint64).astype(np.uint32)
    dense = [np.arange(np.float32(lo).view(np.uint32), np.float32(hi).view(np.uint32), dtype=np.uint32)
             for lo, hi in ((65000.0, 66000.0), (2.0**-26, 2.0**-23))]
    positive = np.concatenate([stride, *dense, *(d | np.uint32(0x80000000) for d in dense)])
    return positive.view(np.float32)


def test_the_float16_rounder_gives_numpys_bits():
    values = _float32_patterns()
    want = values.astype(np.float16)
    got = np.empty(values.shape, np.float16)
    inp.float16_rounder()(values, got)
    nan = np.isnan(values)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))
    assert inp.float16_rounder() is not inp._numpy_float16  # torch's cast is the one tested, not numpy's with itself


def test_a_format_2_float16_draw_is_the_float32_draw_rounded():
    shape = (2, inp.DRAW_CHUNK + 5)
    f32 = inp.uniform_array(np.random.default_rng([3, 3]), -3.0, 70000.0, shape, np.dtype("float32"), fmt=2)
    f16 = inp.uniform_array(np.random.default_rng([3, 3]), -3.0, 70000.0, shape, np.dtype("float16"), fmt=2)
    assert np.array_equal(f16.view(np.uint16), f32.astype(np.float16).view(np.uint16))
    assert np.isinf(f16).any()  # values above 65504 round to inf, as numpy rounds them


# ---------------------------------------------------------------- values reused across configs


def _counting_domain(calls: list, reads: str = ""):
    def domain(ctx):
        calls.append(ctx.shape)
        if reads == "args":
            ctx.args.get("k")
        if reads == "arrays":
            ctx.arrays.get("y")
        return ctx.rng.permutation(np.arange(math.prod(ctx.shape), dtype=np.float32)).reshape(ctx.shape)
    return domain


def test_values_that_depend_on_the_tensor_alone_are_drawn_twice_then_reused_unchanged_and_never_shared():
    """The third config with the same tensor takes the values kept from the second (the first is not kept: a
    one-off tensor pays no copy); each config gets its own copy, so an API writing into its input changes nothing
    later; a domain that reads another argument or another param's array is drawn every time."""
    inp.clear_reused_values()
    calls: list = []
    domain = _counting_domain(calls)
    bound = {"x": TensorSpec((300, 7), "float32"), "k": 3}
    drawn = [inp.materialise(bound, {"x": domain})["x"].array for _ in range(4)]
    assert len(calls) == 2  # the first two drew, the last two reused the second's values
    assert all(np.array_equal(drawn[0], d) for d in drawn[1:])
    assert len({id(d) for d in drawn}) == 4 and not any(np.shares_memory(a, b) for a in drawn for b in drawn if a is not b)
    drawn[2][...] = -1.0  # an in-place API
    assert np.array_equal(inp.materialise(bound, {"x": domain})["x"].array, drawn[0])
    assert len(calls) == 2
    other_seed = inp.materialise(bound, {"x": domain}, seed=1)["x"].array
    assert len(calls) == 3 and not np.array_equal(other_seed, drawn[0])
    for reads in ("args", "arrays"):
        calls.clear()
        reading = _counting_domain(calls, reads)
        both = {"x": TensorSpec((300, 7), "float32"), "y": TensorSpec((3,), "float32"), "k": 3}
        for _ in range(4):
            inp.materialise(both, {"x": reading})
        assert len(calls) == 4, reads
    inp.clear_reused_values()


def test_reused_values_stay_within_their_byte_budget(monkeypatch):
    inp.clear_reused_values()
    monkeypatch.setattr(inp, "REUSED_VALUES_BYTES", 3 * 4000 * 4)  # three float32 [4000] arrays
    for repeat in range(2):
        for n in range(5):
            inp.materialise({f"x{n}": TensorSpec((4000,), "float32")})
    assert len(inp._REUSED) == 3 and sum(v.nbytes for v in inp._REUSED.values()) <= inp.REUSED_VALUES_BYTES
    assert [key[3] for key in inp._REUSED] == ["x2", "x3", "x4"]  # least recently used first out
    too_big = TensorSpec((8000,), "float32")  # more than half the budget: never kept
    for _ in range(3):
        inp.materialise({"big": too_big})
    assert all(key[3] != "big" for key in inp._REUSED)
    inp.clear_reused_values()


def test_a_topk_config_run_again_in_one_process_gives_the_same_verdict():
    inp.clear_reused_values()
    config = 'paddle.Tensor.topk(Tensor([80000],"float32"), 100, )'
    verdicts = [run_config(config).to_dict() for _ in range(3)]
    keys = ("status", "direction", "max_abs", "mismatched", "draws", "message")
    assert all({k: v[k] for k in keys} == {k: verdicts[0][k] for k in keys} for v in verdicts[1:])
    assert verdicts[0]["status"] == "pass", verdicts[0]["message"]
    assert any(key[3] == "x" and key[5] == (80000,) for key in inp._REUSED)  # kept after the second run
    inp.clear_reused_values()
