"""Command line: ``python -m apitester``.

Flag-compatible with PaddleAPITest's engine.py for running configs::

    python -m apitester --accuracy=True --api_config='paddle.clip(Tensor([3],"float32"), min=0, )'
    python -m apitester --accuracy=True --api_config_file=configs.txt --test_cpu=True --json
    python -m apitester --api_config='paddle.logit(x=Tensor([4],"float32"), )' --draw edge:0@2
    python -m apitester --api_config='...' --paddle_flags=FLAGS_use_accuracy_compatible_kernel=1

``--threads N`` pins Paddle and Torch to N threads (default 1); each ``--json`` verdict carries ``provenance``
(builds, threads, CPU capability, host: apitester.provenance).

``--paddle_flags`` (or ``--paddle-flags``) sets Paddle flags (``NAME=VALUE`` items, comma- or space-separated:
apitester.paddle_flags) with ``paddle.set_flags`` before the first config runs; a malformed string or a flag this
Paddle does not define exits 2 before anything runs.

A verdict is the worst over the config's input draws (typical, edge, extra seeds for small inputs);
``--draw KIND:SEED@FORMAT`` replays the one draw a verdict reports (its ``draw``; without ``@FORMAT`` draw format 1,
as every draw written before formats existed: apitester.inputs.DRAW_FORMATS).
``--inputs FILE.npz`` judges (or, with ``diagnose``, diagnoses) one config on the arrays in the file instead of drawn
ones: arrays named as the API's parameters, as the repro script's ``ARGS`` names them (``param.N`` for the N-th tensor
of a list); a missing or extra name, or a shape or dtype other than the config's, exits 2 naming the array. The
verdict's draw then reads ``given`` (apitester.inputs.GIVEN).

and three subcommands::

    python -m apitester parse FILE...            # syntax check only
    python -m apitester coverage PATH... [--sample N] [--workers N] [--only-apis FILE_OR_LIST]
    python -m apitester adaptations [--markdown]  # every spec's declared adaptations
    python -m apitester shrink CONFIG [--draw KIND:SEED@FORMAT] [--max-trials N] [--max-seconds S] [--json] [--script FILE]
    python -m apitester diagnose CONFIG [--draw KIND:SEED@FORMAT] [--max-trials N] [--max-seconds S] [--json] [--threads N]

``shrink`` prints the smallest config with the same failure and its repro script; ``diagnose`` the
verdict, the float64 oracle's readings, the shrink and the repro (docs/diagnosis.md).

Exit status: 0 when everything passes (or parses), 1 otherwise, 2 for usage errors.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter

from .inputs import Draw
from .vocab import Device, Status


def _draw(text: str) -> Draw:
    try:
        return Draw.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _threads(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of threads of at least 1, got {text!r}")
    return value


def _bool(text: str) -> bool:
    value = str(text).strip().lower()
    if value in ("true", "1", "yes", "y", "on"):
        return True
    if value in ("false", "0", "no", "n", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected True or False, got {text!r}")


# engine.py flags that select test modes this engine does not have; accepted so that
# contributors' command lines keep working, and reported as ignored.
_IGNORED_ENGINE_FLAGS = (
    "paddle_only", "paddle_cinn", "paddle_gpu_performance", "torch_gpu_performance",
    "paddle_torch_gpu_performance", "test_amp", "test_tol", "log_dir", "gpu_ids",
    "required_memory", "test_backward", "num_gpus", "num_workers_per_gpu", "exit_on_error", "test_cinn",
)


def _run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m apitester",
        description="Run PaddleAPITest configs on Paddle and Torch and compare (accuracy mode).",
    )
    p.add_argument("--accuracy", type=_bool, default=True, help="accuracy mode (the only mode; default True)")
    p.add_argument("--api_config", action="append", default=[], help="one config string (repeatable)")
    p.add_argument("--api_config_file", action="append", default=[], help="a file with one config per line")
    p.add_argument("--test_cpu", type=_bool, default=None, help="run on the CPU (default when Paddle has no CUDA)")
    p.add_argument("--device", choices=tuple(Device), type=Device, default=None, help="device lane (overrides --test_cpu)")
    p.add_argument("--atol", type=float, default=1e-2)
    p.add_argument("--rtol", type=float, default=1e-2)
    p.add_argument("--seed", "--random_seed", dest="seed", type=int, default=0,
                   help="input seed (inputs are deterministic per config+seed); --random_seed is engine.py's name")
    p.add_argument("--bitwise_alignment", type=_bool, default=False,
                   help="judge exactly (atol = rtol = 0, the spec's tolerances set aside), as engine.py's flag does; "
                        "every verdict records exact / max_ulp / rule either way")
    p.add_argument("--draw", type=_draw, default=None, metavar="KIND:SEED@FORMAT",
                   help="replay one input draw (typical:N@F or edge:N@F, as a verdict's `draw` reports; no @F: "
                        "format 1) "
                        "instead of judging the whole draw plan")
    p.add_argument("--inputs", default=None, metavar="FILE.npz",
                   help="judge one config on these arrays (named as the API's parameters; param.N for a list's "
                        "N-th tensor) instead of drawn inputs; its draw reads `given`")
    p.add_argument("--readings", action="store_true",
                   help="for a config that is not exact, also read run-to-run stability (the inexact draw run again) "
                        "and who is closer to a float64 oracle; off by default: a verdict then costs what it did "
                        "before the readings (exact / max_ulp are always read)")
    p.add_argument("--json", action="store_true", help="print one JSON verdict per line")
    p.add_argument("--paddle_flags", "--paddle-flags", default="", metavar="FLAGS_NAME=VALUE[,...]",
                   help="Paddle flags to run with, e.g. FLAGS_use_accuracy_compatible_kernel=1 (checked against this "
                        "Paddle, then set with paddle.set_flags)")
    p.add_argument("--threads", type=_threads, default=1, metavar="N",
                   help="pin Paddle and Torch to N threads (default 1: the exact rule is judged single-threaded, as "
                        "Paddle's alignment work judges it); every JSON verdict records them in `provenance`")
    for flag in _IGNORED_ENGINE_FLAGS:
        p.add_argument(f"--{flag}", default=None, help=argparse.SUPPRESS)
    return p


def _device(args) -> str:
    if args.device:
        return args.device
    if args.test_cpu is False:
        return Device.GPU
    return Device.CPU


def _read_configs(paths: list[str]) -> list[str]:
    configs: list[str] = []
    for name in paths:
        with open(name, encoding="utf-8") as fh:
            configs.extend(line.strip() for line in fh if line.strip())
    return configs


def _set_paddle_flags(text: str) -> tuple[dict, dict]:
    """--paddle_flags: parsed (FlagError when malformed, before Paddle is imported), checked against this Paddle and
    set with paddle.set_flags; returns (the flags asked for, the values paddle.get_flags then reads)."""
    from .paddle_flags import apply_flags, format_flags, parse_flags

    flags = parse_flags(text)
    if not flags:
        return {}, {}
    from .engine.execute import frameworks

    effective = apply_flags(frameworks()[0], flags)
    print(f"Paddle flags: {format_flags(flags)}", file=sys.stderr)
    return flags, effective


def given_draw(path: str, configs: list[str], draw: Draw | None) -> Draw:
    """--inputs: the given draw of one config's arrays, checked against the config before anything runs
    (GivenInputsError naming the array and why; a config that does not prepare is left to its verdict)."""
    from .inputs import GivenInputsError, load_given_inputs
    from .engine.trial import NotRunnable, prepare

    if len(configs) != 1:
        raise GivenInputsError(f"--inputs gives the arrays of one config, {len(configs)} were given")
    if draw is not None:
        raise GivenInputsError("--inputs and --draw both say which inputs to judge: give one")
    given = load_given_inputs(path)
    try:
        trial = prepare(configs[0])
    except NotRunnable:
        return given
    trial.inputs_of(given)  # raises when the arrays do not fit the config
    return given


def _take_inputs(args, configs: list[str]) -> bool:
    """--inputs FILE.npz into ``args.draw`` (the given draw); False, the reason printed, when they cannot be."""
    from .inputs import GivenInputsError

    if args.inputs is None:
        return True
    try:
        args.draw = given_draw(args.inputs, configs, args.draw)
    except GivenInputsError as exc:
        print(f"error: --inputs {exc}", file=sys.stderr)
        return False
    return True


def run_main(argv: list[str]) -> int:
    parser = _run_parser()
    args = parser.parse_args(argv)
    ignored = [f for f in _IGNORED_ENGINE_FLAGS if getattr(args, f) is not None]
    if ignored:
        print(f"note: ignoring engine.py flags not used by apitester: {', '.join(ignored)}", file=sys.stderr)
    if not args.accuracy:
        print("error: only --accuracy=True is supported", file=sys.stderr)
        return 2
    try:
        configs = list(args.api_config) + _read_configs(args.api_config_file)
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not configs:
        parser.print_usage(sys.stderr)
        print("error: give --api_config or --api_config_file", file=sys.stderr)
        return 2

    from .paddle_flags import FlagError
    from .provenance import pin_threads, provenance, thread_env

    os.environ.update(thread_env(args.threads))  # before paddle and torch load OpenMP / MKL
    try:
        flags, effective = _set_paddle_flags(args.paddle_flags)
    except FlagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from .readings import run_with_readings

    if not _take_inputs(args, list(dict.fromkeys(configs))):
        return 2
    pin_threads(args.threads)
    prov = provenance()
    device = _device(args)
    counts: Counter[str] = Counter()
    strict_counts: Counter[str] = Counter()
    seen: set[str] = set()
    for config in configs:
        if config in seen:  # a file may repeat a config; run it once
            continue
        seen.add(config)
        verdict = run_with_readings(config, readings=args.readings, device=device, atol=args.atol, rtol=args.rtol,
                                    seed=args.seed, draw=args.draw, bitwise=args.bitwise_alignment)
        counts[verdict.status] += 1
        strict_counts[verdict.strict_status] += 1
        if args.json:
            print(json.dumps({**verdict.to_dict(), **({"paddle_flags": effective} if flags else {}),
                              **({"inputs": args.inputs} if args.inputs else {}), "provenance": prov}), flush=True)
        else:
            print(verdict.human(), flush=True)
    if not args.json:
        summary = " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        print(f"{sum(counts.values())} configs: {summary}")
        if strict_counts != counts:  # some spec adapts: say what the plain Torch call gave
            strict = " ".join(f"{k}={v}" for k, v in sorted(strict_counts.items()))
            print(f"strict layer (plain Torch call): {strict}")
    return 0 if set(counts) == {Status.PASS} else 1


def parse_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m apitester parse", description="Syntax-check config files.")
    p.add_argument("files", nargs="+")
    args = p.parse_args(argv)
    # A report names what it found (a character of the line): never a traceback for a terminal that can't show it.
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")

    from .config import ConfigSyntaxError, parse_config

    ok = total = 0
    for name in args.files:
        try:
            # Bytes that are not UTF-8 come through as lone surrogates: that line is reported, not the file.
            fh = open(name, encoding="utf-8", errors="surrogateescape")
        except OSError as exc:
            print(f"{name}: cannot read: {exc.strerror}")
            total += 1
            continue
        with fh:
            for lineno, raw in enumerate(fh, 1):
                line = raw.strip()
                if not line:
                    continue
                total += 1
                undecodable = _first_undecodable(raw)
                if undecodable is not None:
                    col, byte = undecodable
                    print(f"{name}:{lineno}:{col}: expected UTF-8 text, found the byte {byte:#04x}")
                    continue
                try:
                    parse_config(line)
                except ConfigSyntaxError as exc:
                    # the column is in the line as written (leading whitespace included)
                    col = exc.column + (len(raw) - len(raw.lstrip()))
                    print(f"{name}:{lineno}:{col}: expected {exc.expected}, found {exc.found}")
                    continue
                ok += 1
    print(f"parsed {ok}/{total}")
    return 0 if ok == total else 1


_UNDECODABLE = re.compile("[\udc80-\udcff]")  # what errors="surrogateescape" makes of a non-UTF-8 byte


def _first_undecodable(text: str) -> tuple[int, int] | None:
    """(1-based column, byte) of the first byte that was not UTF-8, or None."""
    match = _UNDECODABLE.search(text)
    return None if match is None else (match.start() + 1, ord(match.group()) - 0xDC00)


def _diagnosis_parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m apitester {command}",
                                description="Shrink a failing config and diagnose it (docs/diagnosis.md).")
    p.add_argument("config", help="one config string")
    p.add_argument("--draw", type=_draw, default=None, metavar="KIND:SEED@FORMAT",
                   help="the draw to keep failing (default: the draw the config's verdict reports)")
    p.add_argument("--inputs", default=None, metavar="FILE.npz",
                   help="diagnose the config on these arrays (named as the API's parameters) instead of drawn inputs")
    p.add_argument("--max-trials", type=int, default=200)
    p.add_argument("--max-seconds", type=float, default=120.0)
    p.add_argument("--json", action="store_true", help="print the diagnosis as one JSON object")
    p.add_argument("--threads", type=_threads, default=1, metavar="N",
                   help="pin Paddle and Torch to N threads (default 1, as a verdict is judged: a reduction's result "
                        "can move with the thread count, and the diagnosis must read the result the verdict saw)")
    if command == "shrink":
        p.add_argument("--script", default=None, help="also write the repro script to this file")
    return p


def diagnosis_main(command: str, argv: list[str]) -> int:
    """``shrink`` and ``diagnose``: exit 1 when a failure was diagnosed, 0 when there is none, 2 on usage."""
    args = _diagnosis_parser(command).parse_args(argv)
    from .provenance import pin_threads, provenance, thread_env

    os.environ.update(thread_env(args.threads))  # before paddle and torch load OpenMP / MKL
    from .diagnosis.diagnose import diagnose_config, render_text
    if not _take_inputs(args, [args.config]):
        return 2
    from .config import ConfigSyntaxError, parse_config
    try:
        parse_config(args.config)
        pin_threads(args.threads)
    except ConfigSyntaxError:
        pass  # diagnose_config refuses it with its reason, before paddle or torch are loaded

    diagnosis = diagnose_config(args.config, draw=args.draw, max_trials=args.max_trials,
                                max_seconds=args.max_seconds)
    if args.inputs is not None:
        _name_given_inputs(diagnosis, args.inputs, args.draw)
    diagnosis["provenance"] = provenance()  # the builds and the threads it was read under (as a verdict's)
    if command == "shrink" and args.script and diagnosis.get("diagnosed"):
        with open(args.script, "w", encoding="utf-8") as fh:
            fh.write(diagnosis["repro"]["script"])
    if args.json:
        print(json.dumps(diagnosis))
    elif command == "shrink" and diagnosis.get("diagnosed"):
        shrunk = diagnosis["shrink"]
        print(f"{shrunk['elements_before']} -> {shrunk['elements_after']} input elements in {shrunk['trials']} "
              f"trials, {shrunk['seconds']:.2f} s ({shrunk['stopped']}); failure {json.dumps(shrunk['failure'])}")
        print(shrunk["config"])
        print(f"re-run: {diagnosis['repro']['command']}")
        print(diagnosis["repro"]["script"])
    else:
        if args.inputs is not None:
            print(f"inputs given: {args.inputs} (draw {args.draw})")
        print(render_text(diagnosis))
    return 1 if diagnosis.get("diagnosed") else 0


def _name_given_inputs(diagnosis: dict, path: str, given: Draw) -> None:
    """A given draw replays only in this process: the repro command re-runs the file instead (where the shrink kept
    the given arrays whole), and the diagnosis says which file it read (``inputs``)."""
    diagnosis["inputs"] = path
    repro = diagnosis.get("repro") or {}
    if repro.get("command", "").endswith(f" --draw {given}"):
        repro["command"] = repro["command"][: -len(f" --draw {given}")] + f" --inputs {path}"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "parse":
        return parse_main(argv[1:])
    if argv and argv[0] == "adaptations":
        from .adaptations import adaptations_main

        return adaptations_main(argv[1:])
    if argv and argv[0] in ("shrink", "diagnose"):
        return diagnosis_main(argv[0], argv[1:])
    if argv and argv[0] == "coverage":
        from .coverage import coverage_main

        return coverage_main(argv[1:])
    return run_main(argv)

