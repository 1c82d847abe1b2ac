"""Torch's results, computed once per (config, draw, Torch build) and reused by every Paddle release (issue #43).

In a release matrix or a bisection the same config and draw run on up to eight Paddle builds against one Torch: the
inputs are the same (drawn from the config and the draw by the engine's own code), Torch is the same, so Torch's
outputs and gradients are the same bits. This cache keeps them on disk, keyed by everything they depend on:

* the config string, the draw, the comparison layer (the spec's plain or strict Torch side), whether gradients
  are taken, the device;
* Torch's version, its CPU capability (the instruction set its kernels dispatch to) and its thread count, NumPy's
  version (the input generators);
* the engine's fingerprint: a hash of every ``apitester`` source file, so any change to a spec, the inputs or the
  engine starts from an empty cache instead of reading results another engine computed.

Honesty: every ``verify_every``-th hit of a process (the first hit included) is recomputed and compared bit for bit
with the entry; a difference (``mismatch``) drops the entry and the verdict uses the fresh result. An entry that
cannot be read back whole (a truncated file, a checksum that does not match, a malformed header: ``corrupt``) is
deleted and recomputed. Writes are atomic (a temporary file renamed into place), so workers of several runs can
share one directory.

Bounded: an entry Torch computed faster than it would be read back is not kept (``worth_keeping``), nor one larger
than an eighth of ``max_bytes``; when the directory holds more than ``max_bytes`` the entries read least recently
go first (a hit refreshes its entry's time).

Django-free; the tracker turns it on for a release-matrix lane (``TORCH_CACHE_DIR``) and
``benchmarks/release_matrix.py`` measures what it saves.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..vocab import CacheEvent

FORMAT = 2  # of an entry file; another format is another key

# Reading an entry back costs about a millisecond plus its bytes at ~3 GB/s (this machine: 16 MB in 5 ms, 0.03 ms for
# a few KB); writing one ~4x that. An entry is kept only where Torch took longer than reading it back twice would:
# most small elementwise configs are cheaper to recompute than to read, and their entries would only fill the disk.
KEEP_FLOOR_SECONDS = 0.001
READ_BYTES_PER_SECOND = 1.5e9


def worth_keeping(entry: "Entry") -> bool:
    return entry.seconds >= KEEP_FLOOR_SECONDS + entry.nbytes() / READ_BYTES_PER_SECOND


@dataclass
class Entry:
    """Torch's side of one comparison: its outputs (arrays, with the dtype name each had, or a non-tensor's value),
    which outputs carry gradients, the number of differentiable inputs and their labels, or the error it raised;
    and the gradients already taken, per (output indices, output-gradient seed, draw format)."""

    arrays: list[np.ndarray | None]
    dtypes: list[str | None]
    tensors: list[bool]
    differentiable: list[bool]
    leaves: list[str] = field(default_factory=list)
    leaf_shapes: list[list[int]] = field(default_factory=list)
    leaf_dtypes: list[str] = field(default_factory=list)
    error: str | None = None
    grads: dict[str, dict] = field(default_factory=dict)  # backward key -> {"arrays", "dtypes", "error"}
    seconds: float = 0.0  # what Torch took to compute it all (forward and the gradients held)

    def nbytes(self) -> int:
        total = sum(a.nbytes for a in self.arrays if a is not None)
        for grad in self.grads.values():
            total += sum(a.nbytes for a in grad["arrays"] if a is not None)
        return total


@lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """A hash of every source file of the engine (apitester/**/*.py), computed once per process."""
    root = Path(__file__).resolve().parents[1]  # apitester/, this file being apitester/engine/torch_cache.py
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class TorchCache:
    """One cache directory as seen by one process (``counts``: what happened since ``take_counts`` last read them)."""

    def __init__(self, root: str | os.PathLike, max_bytes: int = 2 << 30, verify_every: int = 16):
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.verify_every = max(1, verify_every)
        self.hits = 0
        self.counts: dict[str, int] = {}
        self._size: int | None = None  # bytes in the directory as this process last saw them
        self._writes = 0

    # ---------------------------------------------------------------- keys

    @staticmethod
    def key(parts: dict) -> str:
        text = json.dumps({**parts, "format": FORMAT, "engine": engine_fingerprint()}, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.entry"

    def count(self, event: CacheEvent) -> None:
        self.counts[str(event)] = self.counts.get(str(event), 0) + 1

    def take_counts(self) -> dict[str, int]:
        counts, self.counts = self.counts, {}
        return counts

    def should_verify(self) -> bool:
        """Whether this hit is one of the sample recomputed (the first hit, then every verify_every-th)."""
        verify = self.hits % self.verify_every == 0
        self.hits += 1
        return verify

    # ---------------------------------------------------------------- read

    def get(self, key: str) -> Entry | None:
        path = self._path(key)
        try:
            raw = path.read_bytes()
        except OSError:
            self.count(CacheEvent.MISS)
            return None
        try:
            entry = _decode(raw)
        except Exception:  # truncated, flipped bits, another writer's garbage: never trusted, never fatal
            self.count(CacheEvent.CORRUPT)
            self.drop(key)
            return None
        try:
            os.utime(path)  # read recently: evicted last
        except OSError:
            pass
        self.count(CacheEvent.HIT)
        return entry

    def drop(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except OSError:
            pass

    # ---------------------------------------------------------------- write

    def put(self, key: str, entry: Entry) -> None:
        if entry.nbytes() > self.max_bytes // 8 or not worth_keeping(entry):
            return  # one config's outputs would crowd out everything else: recomputed each time instead
        try:
            data = _encode(entry)
        except (TypeError, ValueError):  # an output without bytes of its own (an object array): not kept
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            return  # a full or read-only disk costs the time saved, never the verdict
        self.count(CacheEvent.STORED)
        self._writes += 1
        if self._size is None or self._writes % 200 == 0:
            self._size = self.size()
        else:
            self._size += len(data)
        if self._size > self.max_bytes:
            self._evict()

    def size(self) -> int:
        return sum(p.stat().st_size for p in self._entries())

    def _entries(self) -> list[Path]:
        try:
            return [p for p in self.root.glob("*/*.entry")]
        except OSError:
            return []

    def _evict(self) -> None:
        """Least recently read first, down to 90 % of the bound."""
        entries = []
        for path in self._entries():
            try:
                stat = path.stat()
            except OSError:
                continue
            entries.append((stat.st_mtime, stat.st_size, path))
        entries.sort()
        total = sum(size for _, size, _ in entries)
        for _, size, path in entries:
            if total <= self.max_bytes * 0.9:
                break
            try:
                path.unlink()
                total -= size
            except OSError:
                pass
        self._size = total


# ---------------------------------------------------------------- the entry file: a checked header, then raw arrays
#
# MAGIC, the header's length (8 bytes, little-endian) and CRC-32 (4), the header (JSON: the entry's fields and, per
# array, its dtype, shape, offset, length and CRC-32), then the arrays' bytes. Reading it back is one read and a view
# per array (np.frombuffer): an npz's zip parsing cost more than the Torch call it replaced for small configs.

MAGIC = b"APTCACHE"


def _encode(entry: Entry) -> bytes:
    named: list[tuple[str, np.ndarray]] = [(f"o{i}", np.asarray(a)) for i, a in enumerate(entry.arrays)
                                            if a is not None]
    grads = {}
    for slot, (gkey, grad) in enumerate(entry.grads.items()):
        named += [(f"g{slot}_{i}", np.asarray(a)) for i, a in enumerate(grad["arrays"]) if a is not None]
        grads[gkey] = {"slot": slot, "present": [a is not None for a in grad["arrays"]], "dtypes": grad["dtypes"],
                       "error": grad.get("error")}
    layout, chunks, offset = {}, [], 0
    for name, array in named:
        if array.dtype.hasobject:
            raise TypeError(f"{name}: an object array has no bytes of its own")
        data = np.ascontiguousarray(array).tobytes()
        layout[name] = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset, "nbytes": len(data),
                        "crc": zlib.crc32(data)}
        chunks.append(data)
        offset += len(data)
    header = json.dumps({"present": [a is not None for a in entry.arrays], "dtypes": entry.dtypes,
                         "tensors": entry.tensors, "differentiable": entry.differentiable, "leaves": entry.leaves,
                         "leaf_shapes": entry.leaf_shapes, "leaf_dtypes": entry.leaf_dtypes, "error": entry.error,
                         "grads": grads, "arrays": layout, "seconds": entry.seconds}).encode()
    return b"".join([MAGIC, len(header).to_bytes(8, "little"), zlib.crc32(header).to_bytes(4, "little"), header,
                     *chunks])


def _decode(raw: bytes) -> Entry:
    if raw[:8] != MAGIC:
        raise ValueError("not a Torch result cache entry")
    size = int.from_bytes(raw[8:16], "little")
    text = raw[20:20 + size]
    if len(text) != size or zlib.crc32(text) != int.from_bytes(raw[16:20], "little"):
        raise ValueError("the entry's header does not match its checksum")
    header = json.loads(text.decode())
    body = memoryview(raw)[20 + size:]
    arrays = {}
    for name, spec in header["arrays"].items():
        start, nbytes = spec["offset"], spec["nbytes"]
        data = body[start:start + nbytes]
        if len(data) != nbytes or zlib.crc32(data) != spec["crc"]:
            raise ValueError(f"entry array {name} does not match its checksum")
        arrays[name] = np.frombuffer(data, dtype=np.dtype(spec["dtype"])).reshape(spec["shape"])
    outs = [arrays[f"o{i}"] if present else None for i, present in enumerate(header["present"])]
    grads = {}
    for gkey, grad in header["grads"].items():
        grads[gkey] = {"arrays": [arrays[f"g{grad['slot']}_{i}"] if present else None
                                  for i, present in enumerate(grad["present"])],
                       "dtypes": grad["dtypes"], "error": grad.get("error")}
    return Entry(arrays=outs, dtypes=header["dtypes"], tensors=header["tensors"],
                 differentiable=header["differentiable"], leaves=header["leaves"], leaf_shapes=header["leaf_shapes"],
                 leaf_dtypes=header["leaf_dtypes"], error=header["error"], grads=grads,
                 seconds=float(header.get("seconds") or 0.0))


# ---------------------------------------------------------------- the process's cache (a worker's)

_ACTIVE: TorchCache | None = None


def use(root: str | os.PathLike | None, max_bytes: int = 2 << 30, verify_every: int = 16) -> TorchCache | None:
    """Turn the process's cache on (a directory) or off (None); the same directory keeps its counters."""
    global _ACTIVE
    if not root:
        _ACTIVE = None
    elif _ACTIVE is None or _ACTIVE.root != Path(root) or _ACTIVE.max_bytes != max_bytes:
        _ACTIVE = TorchCache(root, max_bytes=max_bytes, verify_every=verify_every)
    return _ACTIVE


def active() -> TorchCache | None:
    return _ACTIVE


__all__ = ["CacheEvent", "Entry", "TorchCache", "active", "engine_fingerprint", "use"]
