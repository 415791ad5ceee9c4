"""Collectives and bytes moved per device, read from HLO text (ours or XLA's dumps).

`collective_stats(text)` counts all-reduce, all-gather, reduce-scatter, all-to-all and
collective-permute (and their -start forms) and estimates the bytes each device sends, with
the usual ring figures for a group of g devices and a result of B bytes:

  all-reduce       2 (g-1)/g B        all-gather   (g-1)/g B       reduce-scatter  (g-1) B
  all-to-all       (g-1)/g B          collective-permute  B (when some pair moves data)

It reads text, not a Module, so that XLA's own partitioned dumps (whose mesh-form
replica groups `mesh['x'=2,'y'=4] {'y'}` the parser does not take) are measured by the
same rules as the partitioner's output.
"""
from __future__ import annotations

import math
import re
from collections import Counter

from ..opcodes import Op
from ..shapes import primitive_type

_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?P<shape>\(.*?\)|[a-z0-9]+\[[^\]]*\](?:\{[^}]*\})?)\s+"
                   r"(?P<op>all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
                   r"(?P<start>-start)?\(")
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([\d,]*)\]")


def _bytes(shape_text: str) -> int:
    total = 0
    for et, dims in _ARRAY.findall(shape_text):
        try:
            t = primitive_type(et)
        except (KeyError, ValueError):
            continue
        n = math.prod(int(d) for d in dims.split(",") if d) if dims else 1
        total += n * max(1, t.bits // 8)
    return total


def group_size(line: str) -> int:
    m = re.search(r"replica_groups=mesh\[([^\]]*)\](?:,\s*device_ids=\([^)]*\))?\s*\{([^}]*)\}", line)
    if m:
        axes = dict((k, int(v)) for k, v in re.findall(r"'([^']+)'\s*=\s*(\d+)", m.group(1)))
        chosen = re.findall(r"'([^']+)'", m.group(2))
        return math.prod(axes[a] for a in chosen) if chosen else 1
    m = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", line)
    if m:
        return int(m.group(2))
    m = re.search(r"replica_groups=\{\{([\d,\s]*)\}", line)
    if m:
        return len([x for x in m.group(1).split(",") if x.strip()])
    return 0   # {} : every device; the caller supplies the count


def collective_stats(text: str, num_devices: int = 1) -> dict:
    """{'counts': {kind: n}, 'bytes_per_device': total, 'by_kind': {kind: bytes}}."""
    counts: Counter = Counter()
    by_kind: Counter = Counter()
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        op = Op(m.group("op"))
        shape = m.group("shape")
        if m.group("start") and shape.startswith("("):
            # async start: (operand, result[, ...]) - the result is the second element
            parts = re.findall(r"[a-z][a-z0-9]*\[[\d,]*\]", shape)
            shape = parts[1] if len(parts) > 1 else shape
        b = _bytes(shape)
        g = group_size(line) or num_devices
        if op == Op.ALL_REDUCE:
            moved = 2 * (g - 1) / g * b
        elif op == Op.ALL_GATHER:
            moved = (g - 1) / g * b
        elif op == Op.REDUCE_SCATTER:
            moved = (g - 1) * b
        elif op == Op.ALL_TO_ALL:
            moved = (g - 1) / g * b
        else:
            pairs = re.findall(r"\{(\d+),(\d+)\}", line.split("source_target_pairs=", 1)[-1])
            moved = b if any(a != c for a, c in pairs) else 0
        counts[str(op)] += 1
        by_kind[str(op)] += moved
    return {"counts": dict(counts), "bytes_per_device": float(sum(by_kind.values())), "by_kind": dict(by_kind)}


def format_stats(stats: dict) -> str:
    """Lines for `hlo-opt --stats`: one per collective kind, then the total bytes per device."""
    lines = [f"{kind}: {stats['counts'][kind]} ({stats['by_kind'][kind]:.0f} bytes per device)"
             for kind in sorted(stats["counts"])]
    lines.append(f"bytes moved per device: {stats['bytes_per_device']:.0f}")
    return "\n".join(lines)
