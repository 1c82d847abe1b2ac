"""The Paddle release and Torch of the main environment (this process's), read from the installed packages, and how an
environment pairing a release with another Torch is named (issue #46)."""
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


TORCH_KEY = "+torch"  # an env key's separator: "3.3.1+torch2.14.1" (no Paddle version holds a "+torch")


def env_key(release: str, torch: str = "") -> str:
    """What names an env and what a worker advertises: the release, and the Torch it pairs with if not the project's."""
    return f"{release}{TORCH_KEY}{torch}" if torch else release


def split_key(key: str) -> tuple[str, str]:
    """env_key's inverse: (release, torch) — torch "" for an env of the project's Torch."""
    release, _, torch = key.partition(TORCH_KEY)
    return release, torch
