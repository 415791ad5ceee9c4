"""Printing results for a person: one result per line, large arrays summarised like numpy.

A single array result prints as its HLO literal (`f32[3] {1, 2, 3}`). A tuple result
prints one array leaf per line with its number (the key --output writes it under) and,
for nested tuples, its tuple index: `out1 {1,0}: pred[] true`. An array of more than
SUMMARY_THRESHOLD elements shows the first and last EDGE_ITEMS entries of every
dimension with `...` between them, as numpy does; `--full` prints every element.
"""
from __future__ import annotations

import sys
from typing import TextIO

import click
import numpy as np

from hlo.literal import format_scalar
from hlo.runtime import values_io
from hlo.shapes import Shape, format_shape

SUMMARY_THRESHOLD = 1000   # numpy's default print threshold (elements)
EDGE_ITEMS = 3             # numpy's default edgeitems


def print_value(value, shape: Shape, full: bool, out: TextIO | None = None) -> bool:
    """Print a result; True if some array was summarised."""
    out = out or sys.stdout
    if not shape.is_tuple:
        text, summarised = format_result(value, shape, full)
        out.write(text + "\n")
        return summarised
    leaves = [(index, leaf) for index, leaf in shape.leaves() if not leaf.is_token]
    nested = any(len(index) > 1 for index, _ in leaves)
    summarised = False
    for k, (index, leaf) in enumerate(leaves):
        text, cut = format_result(_at(value, index), leaf, full)
        where = " {" + ",".join(map(str, index)) + "}" if nested else ""
        out.write(f"out{k}{where}: {text}\n")
        summarised |= cut
    return summarised


def print_results(results: list[tuple[str | None, object]], shape: Shape, full: bool) -> None:
    """Print (heading, value) pairs (a heading per device when there are several), then say
    on stderr how to see everything if something was summarised."""
    summarised = False
    for heading, value in results:
        if heading:
            sys.stdout.write(heading + "\n")
        summarised |= print_value(value, shape, full)
    sys.stdout.flush()
    if summarised:
        click.echo(f"(arrays of more than {SUMMARY_THRESHOLD} elements are summarised; "
                   "--full prints every element)", err=True)


def format_result(value, shape: Shape, full: bool) -> tuple[str, bool]:
    """(text of one array or token value, whether it was summarised)."""
    if shape.is_token or full or shape.rank == 0 or np.asarray(value).size <= SUMMARY_THRESHOLD:
        return values_io.format_value(value, shape), False
    array = np.asarray(value)
    body = _summary(array, shape, array.ndim)
    return f"{format_shape(shape.without_layout())} {body}", True


def _at(value, index: tuple[int, ...]):
    for i in index:
        value = value[i]
    return value


def _summary(array: np.ndarray, shape: Shape, rank: int) -> str:
    """The literal's braces, with `...` in place of the middle of every long dimension."""
    if array.ndim == 1:
        items = [format_scalar(array[i], shape.element_type, in_array=True) for i in _shown(len(array))]
        items = _with_ellipsis(items, len(array))
        inner = ", ".join(items)
        return "{" + inner + "}" if rank == 1 or len(array) <= 1 else "{ " + inner + " }"
    parts = _with_ellipsis([_summary(array[i], shape, rank) for i in _shown(len(array))], len(array))
    return "{ " + ", ".join(parts) + " }"


def _shown(length: int) -> list[int]:
    if length <= 2 * EDGE_ITEMS:
        return list(range(length))
    return list(range(EDGE_ITEMS)) + list(range(length - EDGE_ITEMS, length))


def _with_ellipsis(items: list[str], length: int) -> list[str]:
    if length <= 2 * EDGE_ITEMS:
        return items
    return items[:EDGE_ITEMS] + ["..."] + items[EDGE_ITEMS:]
