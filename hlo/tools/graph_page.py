"""hlo-opt --emit=html: one self-contained, interactive page of a module's graphs.

The page holds the module as JSON and draws it in the browser with the vendored layout
library dagre (hlo/tools/web/, MIT): no server, no network, one file. What it offers:

* every computation as a graph (a list on the left; the entry first), called
  computations one click away;
* fusions, calls, while loops, conditionals and other callers collapsed to one node,
  expandable in place (the callee's graph drawn inside a frame) and collapsible again;
* search by instruction name, opcode or metadata op_name;
* hover: shape with layout, attributes, metadata op_name and source line, line in the
  HLO file; click: details with the operands (definitions) and users as links that jump
  there;
* large modules: a computation is cut into blocks of consecutive instructions, each laid
  out on its own (values from other blocks enter through small "stub" nodes) only when
  it scrolls into view, and only the blocks in view are in the document.

`window.hloGraph` exposes the page's state and actions for tests (tests/tools/test_graph_page.py).
"""
from __future__ import annotations

import html
import json
from importlib import resources
from typing import Optional

from ..ir import Instruction, Module
from ..literal import format_literal
from ..opcodes import Op
from ..shapes import format_shape
from .diff import attribute_texts


def _web(name: str) -> str:
    return resources.files(__package__).joinpath("web", name).read_text(encoding="utf-8")


def _source_line(inst: Instruction) -> str:
    md = inst.metadata
    if md is None:
        return ""
    path, line = md.get("source_file"), md.get("source_line")
    if not path:
        return ""
    return f"{path}:{line}" if line else str(path)


def _hlo_line(inst: Instruction) -> Optional[int]:
    try:
        return inst.loc.line if inst.loc is not None else None
    except (AttributeError, IndexError, ValueError):
        return None


def graph_data(module: Module, source_name: str = "") -> dict:
    """The page's model: computations and instructions with indices for references."""
    computations = [c for c in module.computations]
    comp_index = {id(c): n for n, c in enumerate(computations)}
    insts: list[Instruction] = [i for c in computations for i in c.instructions]
    inst_index = {id(i): n for n, i in enumerate(insts)}
    callers: dict[int, list[int]] = {}
    rows = []
    for inst in insts:
        called = [comp_index[id(c)] for c in inst.called_computations() if id(c) in comp_index]
        for c in called:
            callers.setdefault(c, []).append(inst_index[id(inst)])
        attrs = attribute_texts(inst, lambda c: f"%{c.name}")
        attrs.pop("literal", None)
        literal = ""
        if inst.opcode == Op.CONSTANT and inst.attrs.get("literal") is not None:
            literal = format_literal(inst.attrs["literal"])
            if len(literal) > 200:
                literal = literal[:200] + " ..."
        md = inst.metadata
        row = {
            "n": inst.name, "o": str(inst.opcode),
            "s": format_shape(inst.shape) if inst.shape is not None else "",
            "g": inst.info.category.value,
            "c": comp_index[id(inst.parent)],
            "a": [inst_index[id(op)] for op in inst.operands if id(op) in inst_index],
        }
        if called:
            row["k"] = called
        text = ", ".join(f"{k}={v}" for k, v in attrs.items() if k != "parameter_number")
        if inst.attrs.get("parameter_number") is not None:
            row["p"] = inst.attrs["parameter_number"]
        if text:
            row["t"] = text
        if literal:
            row["v"] = literal
        if md is not None and md.get("op_name"):
            row["m"] = md.get("op_name")
        if _source_line(inst):
            row["f"] = _source_line(inst)
        line = _hlo_line(inst)
        if line is not None:
            row["l"] = line
        if inst.opcode == Op.FUSION:
            row["x"] = str(inst.attrs.get("kind") or "")
        rows.append(row)
    comps = []
    for n, c in enumerate(computations):
        comps.append({
            "name": c.name, "entry": c is module.entry,
            "i": [inst_index[id(i)] for i in c.instructions],
            "root": inst_index[id(c.root)] if c.root is not None else -1,
            "callers": callers.get(n, []),
        })
    return {"module": module.name, "source": source_name, "computations": comps, "insts": rows,
            "entry": comp_index.get(id(module.entry), 0)}


def _script_json(data: dict) -> str:
    """JSON safe inside a <script> element."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def graph_page(module: Module, source_name: str = "", title: Optional[str] = None) -> str:
    """The complete HTML page for `module`."""
    title = title or f"{module.name} - HLO graph"
    licence = _web("dagre.LICENSE").replace("*/", "* /")
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n",
        f"<title>{html.escape(title)}</title>\n",
        "<meta name=\"generator\" content=\"hlo-toolchain hlo-opt --emit=html\">\n",
        f"<style>\n{_web('graph.css')}\n</style>\n</head>\n<body>\n",
        _BODY,
        f"<script type=\"application/json\" id=\"hlo-data\">{_script_json(graph_data(module, source_name))}</script>\n",
        f"<script>\n/* dagre: https://github.com/dagrejs/dagre, MIT licence:\n{licence}*/\n",
        _web("dagre.min.js"), "\n</script>\n",
        f"<script>\n{_web('graph.js')}\n</script>\n</body></html>\n",
    ])


_BODY = """<div id="app">
<aside id="side">
  <div id="title"></div>
  <input id="search" type="search" placeholder="Search name, opcode, op_name" autocomplete="off" spellcheck="false">
  <div id="results"></div>
  <div id="details"><p class="hint">Hover a node for its details; click it to see its operands and users.</p></div>
  <h3>Computations</h3>
  <ul id="computations"></ul>
</aside>
<main id="main">
  <div id="toolbar"><span id="crumbs"></span><span id="status"></span>
    <button id="zoom-out" title="Zoom out">&minus;</button><button id="zoom-in" title="Zoom in">+</button>
    <button id="expand-all" title="Expand the fusions in view">expand fusions</button>
    <button id="collapse-all" title="Collapse everything">collapse all</button></div>
  <div id="viewport"><div id="canvas"></div></div>
</main>
</div>
<div id="tooltip" hidden></div>
"""
