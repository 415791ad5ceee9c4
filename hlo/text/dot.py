"""Graphviz (dot) drawings of HLO computations.

`computation_to_dot(comp)` draws one computation: a node per instruction labelled
with its name, opcode and shape, an edge from each operand to each user. A fusion
instruction is drawn as a cluster holding its fused computation's nodes (nested
fusions nest): the fusion's operands feed the cluster's parameter nodes and the
cluster's root feeds the fusion's users. Node ids are generated (n0, n1 ...), so
instruction names never need to be valid dot identifiers; every label is a quoted,
escaped dot string.
"""
from __future__ import annotations

from typing import Optional

from ..diagnostics import Diagnostic, HloError
from ..ir import Computation, Instruction, Module
from ..shapes import format_shape
from ..opcodes import Category, Op, OpInfo, Trait

NODE_STYLE = {
    Op.PARAMETER: 'shape=box, style=filled, fillcolor="#fff3c4"',
    Op.CONSTANT: 'shape=box, style=filled, fillcolor="#eeeeee"',
}
PLAIN_STYLE = "shape=ellipse"
# Heroes, drawn filled, are where the work is: products, reductions, gathers and scatters,
# sorts, linear algebra, calls of other computations or of library code.
HERO_STYLE = 'style=filled, fillcolor="#c8e0ff"'
HERO_CATEGORIES = frozenset({Category.DOT_CONV, Category.REDUCTION, Category.INDEXING, Category.CONTROL,
                             Category.LINALG, Category.CUSTOM})


def is_hero(info: OpInfo) -> bool:
    return info.category in HERO_CATEGORIES and not info.has(Trait.CHEAP)


def node_style(inst: Instruction) -> str:
    style = NODE_STYLE.get(inst.opcode)
    if style is not None:
        return style
    return HERO_STYLE if is_hero(inst.info) else PLAIN_STYLE


def quote(text: str) -> str:
    """A dot double-quoted string: backslashes and quotes escaped, newlines as \\n."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\r", "").replace("\n", "\\n")
    return f'"{escaped}"'


def instruction_label(inst: Instruction) -> str:
    shape = format_shape(inst.shape) if inst.shape is not None else "?"
    opcode = inst.opcode
    if opcode == Op.FUSION:
        opcode += f" ({inst.attrs.get('kind')})"
    elif opcode == Op.PARAMETER:
        opcode += f" {inst.attrs.get('parameter_number')}"
    callees = [c.name for c in inst.called_computations()] if opcode != Op.FUSION else []
    lines = [inst.name, opcode, shape] + ([", ".join(f"%{c}" for c in callees)] if callees else [])
    return "\n".join(lines)


class _DotWriter:
    def __init__(self):
        self.lines: list[str] = []
        self.ids: dict[int, str] = {}
        self.clusters = 0
        self._pending: list[tuple[Instruction, Computation, dict[int, str]]] = []

    def node_id(self, inst: Instruction) -> str:
        if id(inst) not in self.ids:
            self.ids[id(inst)] = f"n{len(self.ids)}"
        return self.ids[id(inst)]

    def draw(self, comp: Computation, indent: str) -> dict[int, str]:
        """Nodes and clusters of `comp`; returns, per instruction, the node that carries its value."""
        value_node: dict[int, str] = {}
        for inst in comp.instructions:
            if inst.opcode == Op.FUSION:
                value_node[id(inst)] = self._cluster(inst, indent)
                continue
            node = self.node_id(inst)
            style = node_style(inst)
            extra = ", peripheries=2" if inst is comp.root else ""
            self.lines.append(f"{indent}{node} [label={quote(instruction_label(inst))}, {style}{extra}];")
            value_node[id(inst)] = node
        for inst in comp.instructions:
            for op in inst.operands:
                if inst.opcode == Op.FUSION:
                    continue  # drawn inside the cluster, into its parameters
                self.lines.append(f"{indent}{value_node[id(op)]} -> {value_node[id(inst)]};")
        self._fusion_inputs(comp, value_node, indent)
        return value_node

    def _cluster(self, fusion: Instruction, indent: str) -> str:
        body: Computation = fusion.attrs["calls"]
        name = f"cluster_{self.clusters}"
        self.clusters += 1
        label = f"{fusion.name}\nfusion ({fusion.attrs.get('kind')})\n{format_shape(fusion.shape)}"
        self.lines.append(f"{indent}subgraph {name} {{")
        self.lines.append(f"{indent}  label={quote(label)};")
        self.lines.append(f'{indent}  style="rounded,filled"; fillcolor="#f4f9f4"; color="#5a8a5a";')
        if fusion.parent is not None and fusion is fusion.parent.root:
            self.lines.append(f"{indent}  penwidth=2;")
        inner = self.draw(body, indent + "  ")
        self.lines.append(f"{indent}}}")
        self._pending.append((fusion, body, inner))
        return inner[id(body.root)]

    def _fusion_inputs(self, comp: Computation, value_node: dict[int, str], indent: str) -> None:
        """Edges from each fusion's operands to its fused parameters (drawn once the operands exist)."""
        remaining = []
        for fusion, body, inner in self._pending:
            if fusion.parent is not comp:
                remaining.append((fusion, body, inner))
                continue
            for param in body.parameters:
                operand = fusion.operands[param.attrs["parameter_number"]]
                self.lines.append(f"{indent}{value_node[id(operand)]} -> {inner[id(param)]} [style=dashed];")
        self._pending = remaining

    def render(self, comp: Computation, title: str) -> str:
        self.lines = [f"digraph {quote(title)} {{",
                      "  rankdir=TB;",
                      f"  label={quote(title)}; labelloc=t;",
                      '  node [fontname="Helvetica", fontsize=10];',
                      '  edge [fontname="Helvetica", fontsize=9];']
        self.draw(comp, "  ")
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"


def computation_to_dot(comp: Computation, title: Optional[str] = None) -> str:
    return _DotWriter().render(comp, title or comp.name)


def module_to_dot(module: Module, computation: Optional[str] = None) -> str:
    """The dot drawing of `computation` (by name; default: the entry computation)."""
    if computation is None:
        comp = module.entry
    else:
        comp = next((c for c in module.computations if c.name == computation), None)
        if comp is None:
            names = ", ".join(c.name for c in module.computations)
            raise HloError([Diagnostic(f"no computation named '{computation}' in module {module.name}; "
                                       f"computations: {names}")])
    if comp is None:
        raise HloError([Diagnostic(f"module {module.name} has no entry computation")])
    return computation_to_dot(comp, f"{module.name}: {comp.name}")
