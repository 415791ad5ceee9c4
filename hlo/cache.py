"""Where the toolchain keeps what it can rebuild: $XDG_CACHE_HOME/hlo-toolchain.

The compiled backend keeps object files there and the parser its LALR tables, so
that a second run of a tool skips work the first one did.
"""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "hlo-toolchain"
