"""The Paddle release of the main environment (this process's), read from the installed package."""
from __future__ import annotations

from functools import lru_cache
from importlib import metadata


@lru_cache(maxsize=1)
def main_version() -> str:
    """The Paddle release installed in the main environment (this process's)."""
    for distribution in ("paddlepaddle", "paddlepaddle-gpu"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return ""


def torch_version() -> str:
    """The Torch release installed in the main environment (the reference every verdict compares with)."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return ""
