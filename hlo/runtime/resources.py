"""Memory limits: an allocation whose size follows from a module is checked before it is made.

A module can ask for more memory than the machine has with a few characters
(`s32[100000000000] iota()`, a parameter of a million cubed elements); making the array
would fail deep inside numpy, or worse succeed on an overcommitting system and get the
process killed when the pages are touched. The interpreter, the compiled backend and the
tools' random inputs call `check_allocation` first, which refuses at the instruction's
location, as a user error, what exceeds the limit: the one set with `set_memory_limit`
(the tools' `--max-memory`), else the memory available when the check runs.
"""
from __future__ import annotations

import os
import re
import resource
import time
from typing import Optional

from ..diagnostics import SourceLoc, error

_limit: Optional[int] = None
AVAILABLE_TTL_SECONDS = 0.1
_available_cache: tuple[float, int] = (float("-inf"), 0)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def set_memory_limit(nbytes: Optional[int]) -> None:
    """Refuse allocations larger than `nbytes` (None: the memory available at each check)."""
    global _limit
    _limit = None if nbytes is None else max(0, int(nbytes))


def memory_limit() -> int:
    """Bytes one allocation may take now."""
    return _limit if _limit is not None else _recent_available_memory()


def available_memory() -> int:
    """The memory the process could still get: the system's available memory, within the
    address-space and data-size limits set on the process."""
    available = _meminfo_available()
    for which in (resource.RLIMIT_AS, resource.RLIMIT_DATA):
        soft, _ = resource.getrlimit(which)
        if soft != resource.RLIM_INFINITY:
            available = min(available, soft)
    return available


def _recent_available_memory() -> int:
    """available_memory() as found at most AVAILABLE_TTL_SECONDS ago: a loop that makes a large
    result per iteration (an all-reduce of 1 MB over MPI takes about 0.3 ms) need not read
    /proc/meminfo (about 50 us) each time."""
    global _available_cache
    now = time.monotonic()
    found_at, value = _available_cache
    if now - found_at > AVAILABLE_TTL_SECONDS:
        value = available_memory()
        _available_cache = (now, value)
    return value


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62  # no way to tell: let numpy decide


class AllocationRefused(MemoryError):
    """An allocation over the limit, refused before it was made (the interpreter reports it at the
    instruction whose kernel asked for it)."""


def check_allocation(nbytes: int, what: str, loc: Optional[SourceLoc] = None) -> None:
    """Refuse `what` if it would take more than the memory limit: an HloError at `loc`, or,
    without a location, AllocationRefused for the caller to place."""
    limit = memory_limit()
    if nbytes > limit:
        source = "--max-memory" if _limit is not None else "the memory available (--max-memory sets a limit)"
        message = f"{what} needs {format_bytes(nbytes)}, more than the {format_bytes(limit)} allowed by {source}"
        if loc is None:
            raise AllocationRefused(message)
        raise error(message, loc)


def parse_memory_size(text: str) -> int:
    """`512M`, `4G`, `1.5G`, `1000000` (bytes); ValueError if it is none of these."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.I)
    if not m:
        raise ValueError(f"expected a size such as 512M or 4G, got {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def format_bytes(n: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


__all__ = ["AllocationRefused", "available_memory", "check_allocation", "format_bytes", "memory_limit", "parse_memory_size",
           "set_memory_limit"]
