"""hlo-diff --html: the two modules side by side, one table per computation.

Rows are aligned by the structural matching of hlo.tools.diff: a matched pair shares a
row (yellow when changed, with the differences under it), a removed instruction has an
empty right half, an added one an empty left half. Computations without differences are
folded (a <details> element). One self-contained file: no scripts, no network.
"""
from __future__ import annotations

import html

from .diff import ADDED, CHANGED, MATCHED, REMOVED, UNCHANGED, ModuleDiff, instruction_text

_STYLE = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 1em 2em; color: #222; }
h1 { font-size: 18px; } h2 { font-size: 15px; margin: 0; display: inline; }
summary { cursor: pointer; padding: 4px 0; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; margin: 6px 0 18px; }
td { font: 12px/1.35 ui-monospace, Menlo, Consolas, monospace; vertical-align: top; padding: 1px 6px;
     white-space: pre-wrap; word-break: break-all; border-bottom: 1px solid #f0f0f0; }
td.mark { width: 1.2em; text-align: center; color: #888; }
tr.removed td.a { background: #ffe3e3; } tr.added td.b { background: #e1f7e1; }
tr.changed td.a, tr.changed td.b { background: #fff4cc; }
tr.unchanged td { color: #777; }
tr.detail td { color: #8a6d00; font-size: 11px; border-bottom: none; }
.counts { color: #555; margin-left: 1em; }
.added-c { color: #1a7f1a; } .removed-c { color: #b22; } .changed-c { color: #8a6d00; }
.equal { color: #1a7f1a; font-weight: bold; }
"""


def _cell(inst, side: str) -> str:
    return f'<td class="{side}">{html.escape(instruction_text(inst)) if inst is not None else ""}</td>'


def _counts(comp) -> str:
    if comp.status != MATCHED:
        return f'<span class="counts {comp.status}-c">{comp.status}, {len(comp.rows)} instructions</span>'
    parts = [f'<span class="{s}-c">{comp.count(s)} {s}</span>' for s in (CHANGED, ADDED, REMOVED)]
    return f'<span class="counts">{comp.count(UNCHANGED)} unchanged, {", ".join(parts)}</span>'


def format_html(diff: ModuleDiff, name_a: str = "a", name_b: str = "b") -> str:
    """The side-by-side page of `diff`."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>hlo-diff {html.escape(name_a)} {html.escape(name_b)}</title>",
           f"<style>{_STYLE}</style></head><body>",
           f"<h1>hlo-diff: {html.escape(name_a)} &rarr; {html.escape(name_b)}</h1>"]
    t = diff.totals()
    if diff.equal:
        out.append(f'<p class="equal">The modules are equal ({t[UNCHANGED]} instructions matched, '
                   f'{t["renamed"]} renamed).</p>')
    else:
        out.append(f"<p>{t[CHANGED]} changed, {t[ADDED]} added, {t[REMOVED]} removed, {t[UNCHANGED]} unchanged "
                   f"instructions ({t['renamed']} renamed) in {len(diff.changed_computations())} of "
                   f"{len(diff.computations)} computations.</p>")
    if diff.header:
        out.append("<ul>" + "".join(f"<li>{html.escape(str(c))}</li>" for c in diff.header) + "</ul>")
    for comp in diff.computations:
        opened = "" if comp.equal else " open"
        out.append(f'<details{opened} class="computation"><summary><h2>computation '
                   f"{html.escape(comp.title)}</h2>{_counts(comp)}</summary>")
        out.append('<table><colgroup><col style="width:1.2em"><col><col style="width:1.2em"><col></colgroup>')
        for row in comp.rows:
            mark_a = "-" if row.status == REMOVED else ("~" if row.status == CHANGED else "")
            mark_b = "+" if row.status == ADDED else ("~" if row.status == CHANGED else "")
            out.append(f'<tr class="{row.status}"><td class="mark">{mark_a}</td>{_cell(row.a, "a")}'
                       f'<td class="mark">{mark_b}</td>{_cell(row.b, "b")}</tr>')
            for change in row.changes:
                out.append(f'<tr class="detail"><td></td><td colspan="3">{html.escape(str(change))}</td></tr>')
        out.append("</table></details>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
