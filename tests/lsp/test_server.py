"""hlo-lsp driven as an editor drives it: a subprocess speaking JSON-RPC over stdio.

One server serves the whole module; every test opens its own document (its own
URI), so the tests do not depend on each other.
"""
from __future__ import annotations

import itertools
import os
import shutil
import sys
import time

import pytest

from hlo import format_module, parse_module
from hlo.lsp.client import LspClient, LspError

# Two computations that both define %x (the parser renames the second one; the
# editor must not), and a reduction calling %add.
MODULE = """\
// Sums, with two computations that both name an instruction %x.
HloModule lsp_test, entry_computation_layout={(f32[4]{0})->f32[]}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

ENTRY %main (x: f32[4]) -> f32[] {
  %x = f32[4]{0} parameter(0)
  %zero = f32[] constant(0)
  %total = f32[] reduce(%x, %zero), dimensions={0}, to_apply=%add
  ROOT %twice = f32[] multiply(%total, %total)
}
"""

# Every attribute that names a computation: to_apply (call, and sort's comparator), calls
# (fusion), branch_computations (conditional), condition and body (while); %double is called
# from two computations.
CALLS = """\
HloModule calls, entry_computation_layout={(f32[4]{0}, s32[])->f32[4]{0}}

%double (d: f32[4]) -> f32[4] {
  %d = f32[4]{0} parameter(0)
  ROOT %dd = f32[4]{0} add(%d, %d)
}

%negate_it (n: f32[4]) -> f32[4] {
  %n = f32[4]{0} parameter(0)
  ROOT %nn = f32[4]{0} negate(%n)
}

%less (a: f32[], b: f32[]) -> pred[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %lt = pred[] compare(%a, %b), direction=LT
}

%fused (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %e = f32[4]{0} exponential(%p)
}

%cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %ten = s32[] constant(10)
  ROOT %c = pred[] compare(%i, %ten), direction=LT
}

%body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %v = f32[4]{0} get-tuple-element(%s), index=1
  %one = s32[] constant(1)
  %i1 = s32[] add(%i, %one)
  %v1 = f32[4]{0} call(%v), to_apply=%double
  ROOT %t = (s32[], f32[4]{0}) tuple(%i1, %v1)
}

ENTRY %main (x: f32[4], k: s32[]) -> f32[4] {
  %x = f32[4]{0} parameter(0)
  %k = s32[] parameter(1)
  %sorted = f32[4]{0} sort(%x), dimensions={0}, to_apply=%less
  %ex = f32[4]{0} fusion(%sorted), kind=kLoop, calls=%fused
  %picked = f32[4]{0} conditional(%k, %ex, %ex), branch_computations={%double, %negate_it}
  %zero = s32[] constant(0)
  %init = (s32[], f32[4]{0}) tuple(%zero, %picked)
  %loop = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[4]{0} get-tuple-element(%loop), index=1
}
"""
# (the attribute as written, the computation it names) for every call site in CALLS
CALL_SITES = [("to_apply=%double", "double"), ("to_apply=%less", "less"), ("calls=%fused", "fused"),
              ("branch_computations={%double", "double"), (", %negate_it", "negate_it"),
              ("condition=%cond", "cond"), ("body=%body", "body")]

_uris = (f"file:///lsp_test/doc{i}.hlo" for i in itertools.count())


def _command() -> list[str]:
    found = shutil.which("hlo-lsp")
    return [found] if found else [sys.executable, "-m", "hlo.lsp.server"]


@pytest.fixture(scope="module")
def server():
    with LspClient(_command()) as client:
        client.initialize()
        yield client


def position(text: str, needle: str, delta: int = 0) -> dict:
    """LSP position of text.index(needle) + delta."""
    offset = text.index(needle) + delta
    return {"line": text.count("\n", 0, offset), "character": offset - (text.rfind("\n", 0, offset) + 1)}


def open_doc(server: LspClient, text: str) -> tuple[str, list[dict]]:
    """Open text under a fresh URI; (uri, its first diagnostics)."""
    uri = next(_uris)
    server.open(uri, text)
    params = server.wait_notification("textDocument/publishDiagnostics", lambda p: p["uri"] == uri)
    return uri, params["diagnostics"]


def request(server: LspClient, method: str, uri: str, **params):
    return server.request(method, {"textDocument": {"uri": uri}, **params})


def apply_edits(text: str, edits: list[dict]) -> str:
    """The text after applying LSP TextEdits (all positions refer to the original text)."""
    lines = text.split("\n")
    starts = list(itertools.accumulate([0] + [len(line) + 1 for line in lines]))

    def offset(pos):
        return starts[pos["line"]] + pos["character"]
    for edit in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        a, b = offset(edit["range"]["start"]), offset(edit["range"]["end"])
        text = text[:a] + edit["newText"] + text[b:]
    return text


def covered_text(text: str, rng: dict) -> str:
    lines = text.split("\n")
    start, end = rng["start"], rng["end"]
    assert start["line"] == end["line"]
    return lines[start["line"]][start["character"]:end["character"]]


# --------------------------------------------------------------------------- diagnostics


def test_clean_file_has_no_diagnostics(server):
    _, diagnostics = open_doc(server, MODULE)
    assert diagnostics == []


def test_diagnostics_have_exact_ranges_and_related_information(server):
    text = MODULE.replace("%twice = f32[] multiply(%total, %total)", "%twice = f32[] multiply(%total, %x)")
    _, diagnostics = open_doc(server, text)
    assert len(diagnostics) == 1
    d = diagnostics[0]
    assert d["severity"] == 1
    assert "multiply" in d["message"] and "f32[4]" in d["message"]
    # The range covers exactly the offending operand, and the note points at its definition.
    assert d["range"]["start"] == position(text, "%x)")
    assert covered_text(text, d["range"]) == "%x"
    related = d["relatedInformation"][0]
    assert covered_text(text, related["location"]["range"]) == "%x"
    assert related["location"]["range"]["start"] == position(text, "%x = f32[4]")


def test_diagnostics_follow_changes(server):
    uri, diagnostics = open_doc(server, MODULE)
    assert diagnostics == []
    start = position(MODULE, "%zero = f32[] constant(0)", len("%zero = "))
    end = dict(start, character=start["character"] + len("f32[]"))
    mark = len(server.notifications)
    server.change(uri, 2, [{"range": {"start": start, "end": end}, "text": "s32[]"}])
    params = server.wait_notification("textDocument/publishDiagnostics",
                                      lambda p: p["uri"] == uri and p["version"] == 2 and p["diagnostics"],
                                      after=mark)
    messages = " ".join(d["message"] for d in params["diagnostics"])
    assert "reduce" in messages
    server.change(uri, 3, [{"range": {"start": start, "end": end}, "text": "f32[]"}])
    params = server.wait_notification("textDocument/publishDiagnostics",
                                      lambda p: p["uri"] == uri and p["version"] == 3, after=mark)
    assert params["diagnostics"] == []


DEBOUNCE_SECONDS = 1.5


def test_a_burst_of_changes_is_diagnosed_once_after_the_quiet_period():
    """Three keystrokes within the quiet period: one diagnosis, of the last text, on the exact token."""
    env = dict(os.environ, HLO_LSP_DEBOUNCE=str(DEBOUNCE_SECONDS))
    with LspClient(_command(), env=env) as slow:
        slow.initialize()
        uri, diagnostics = open_doc(slow, MODULE)   # didOpen is diagnosed at once
        assert diagnostics == []
        start = position(MODULE, "%zero = f32[] constant(0)", len("%zero = "))
        end = dict(start, character=start["character"] + 1)
        mark = len(slow.notifications)
        for version, letter in [(2, "s"), (3, "u"), (4, "s")]:   # f32 -> s32 -> u32 -> s32
            slow.change(uri, version, [{"range": {"start": start, "end": end}, "text": letter}])
        sent = time.perf_counter()
        params = slow.wait_notification("textDocument/publishDiagnostics",
                                        lambda p: p["uri"] == uri and p["version"] == 4, after=mark)
        # nothing before the quiet period; nothing at all for the intermediate versions
        published = [n for n in slow.notifications[mark:] if n["method"] == "textDocument/publishDiagnostics"]
        assert published[0]["received_at"] - sent >= DEBOUNCE_SECONDS * 0.9
        assert {n["params"]["version"] for n in published} == {4}
        text = MODULE.replace("%zero = f32[]", "%zero = s32[]")
        [d] = params["diagnostics"]
        assert "init value 0 of 'reduce' is s32[]" in d["message"]
        assert d["range"]["start"] == position(text, "%zero), dim") and covered_text(text, d["range"]) == "%zero"


def test_syntax_error_does_not_blank_the_rest_of_the_file(server):
    broken = MODULE.replace("%y = f32[] parameter(1)", "%y = f32[] parameter(1")      # a syntax error
    broken = broken.replace("%zero = f32[] constant(0)", "%zero = s32[] constant(0)")  # a checker error
    uri, diagnostics = open_doc(server, broken)
    lines = sorted(d["range"]["start"]["line"] for d in diagnostics)
    assert lines == [position(broken, "%y = f32[]")["line"], position(broken, "%total =")["line"]], diagnostics
    # Hover and definition still work elsewhere in the file.
    hover = request(server, "textDocument/hover", uri, position=position(broken, "%total, %total", 2))
    assert "f32[]" in hover["contents"]["value"]
    target = request(server, "textDocument/definition", uri, position=position(broken, "to_apply=%add", 10))
    assert target["range"]["start"] == position(broken, "add (x:")


def test_syntax_error_recovers_at_the_next_instruction_of_the_same_computation(server):
    text = CALLS.replace("fusion(%sorted), kind=kLoop", "fusion(%sorted kind=kLoop")                 # syntax
    text = text.replace("%zero = s32[] constant(0)", "%zero = f32[] constant(0)")                    # 3 lines on
    text = text.replace("ROOT %dd = f32[4]{0} add(%d, %d)", "ROOT %dd = f32[4]{0} add(%d, %d, %d)")  # elsewhere
    uri, diagnostics = open_doc(server, text)
    found = sorted((d["range"]["start"]["line"], covered_text(text, d["range"])) for d in diagnostics)
    assert found == [(position(text, "%d, %d, %d)")["line"], "%d"), (position(text, "%ex = ")["line"], "kind"),
                     (position(text, "%init = ")["line"], "%init")], diagnostics
    # every instruction of ENTRY is still in the outline, and names after the error still resolve
    symbols = request(server, "textDocument/documentSymbol", uri)
    assert [c["name"] for c in symbols[-1]["children"]] == [
        "x", "k", "sorted", "ex", "picked", "zero", "init", "loop", "out"]
    hover = request(server, "textDocument/hover", uri, position=position(text, "while(%init)", 8))
    assert "%init: (s32[], f32[4]{0})" in hover["contents"]["value"]


# --------------------------------------------------------------------------- hover


def test_hover(server):
    uri, _ = open_doc(server, MODULE)
    on_definition = request(server, "textDocument/hover", uri, position=position(MODULE, "%total = ", 2))
    value = on_definition["contents"]["value"]
    assert "%total = f32[] reduce(%x, %zero)" in value
    assert "Reduce dimensions with a computation" in value   # the opcode's description
    assert "dimensions={0}" in value and "to_apply=%add" in value
    on_operand = request(server, "textDocument/hover", uri, position=position(MODULE, "%x, %zero)", 1))
    value = on_operand["contents"]["value"]
    assert "%x: f32[4]{0}" in value and "line 11" in value
    assert covered_text(MODULE, on_operand["range"]) == "x"
    on_computation = request(server, "textDocument/hover", uri, position=position(MODULE, "to_apply=%add", 11))
    assert "%add (x: f32[], y: f32[]) -> f32[]" in on_computation["contents"]["value"]
    on_opcode = request(server, "textDocument/hover", uri, position=position(MODULE, "multiply(", 2))
    assert "**multiply**" in on_opcode["contents"]["value"]


# --------------------------------------------------------------------------- navigation


def test_definition(server):
    uri, _ = open_doc(server, MODULE)
    target = request(server, "textDocument/definition", uri, position=position(MODULE, "%zero), dim", 2))
    assert target["uri"] == uri
    assert target["range"]["start"] == position(MODULE, "zero = f32[]")
    # %x inside %add is that computation's %x, not ENTRY's
    inner = request(server, "textDocument/definition", uri, position=position(MODULE, "add(%x, %y)", 5))
    assert inner["range"]["start"] == position(MODULE, "x = f32[] parameter(0)")
    computation = request(server, "textDocument/definition", uri, position=position(MODULE, "to_apply=%add", 10))
    assert computation["range"]["start"] == position(MODULE, "add (x:")


def test_references(server):
    uri, _ = open_doc(server, MODULE)
    found = request(server, "textDocument/references", uri, position=position(MODULE, "%total = ", 1),
                    context={"includeDeclaration": True})
    starts = sorted((r["range"]["start"]["line"], r["range"]["start"]["character"]) for r in found)
    assert starts == sorted((p["line"], p["character"]) for p in (
        position(MODULE, "total = "), position(MODULE, "total, %total"), position(MODULE, "total)")))
    without = request(server, "textDocument/references", uri, position=position(MODULE, "%total = ", 1),
                      context={"includeDeclaration": False})
    assert len(without) == 2
    comp = request(server, "textDocument/references", uri, position=position(MODULE, "%add (", 1),
                   context={"includeDeclaration": True})
    assert sorted(r["range"]["start"]["line"] for r in comp) == [3, 12]


@pytest.mark.parametrize("attribute,computation", CALL_SITES)
def test_definition_and_references_through_computation_attributes(server, attribute, computation):
    uri, diagnostics = open_doc(server, CALLS)
    assert diagnostics == []
    header = position(CALLS, f"%{computation} (", 1)
    at_use = position(CALLS, attribute, len(attribute) - 1)   # on the name's last character
    target = request(server, "textDocument/definition", uri, position=at_use)
    assert target["range"]["start"] == header and covered_text(CALLS, target["range"]) == computation
    found = request(server, "textDocument/references", uri, position=header, context={"includeDeclaration": True})
    uses = [(p["line"], p["character"]) for p in (position(CALLS, a, len(a) - len(c)) for a, c in CALL_SITES
                                                    if c == computation)]
    assert sorted((r["range"]["start"]["line"], r["range"]["start"]["character"]) for r in found) == sorted(
        [(header["line"], header["character"])] + uses)
    assert all(covered_text(CALLS, r["range"]) == computation for r in found)


def test_rename_across_computations(server):
    uri, _ = open_doc(server, MODULE)
    # A computation: its header and the to_apply= in ENTRY change.
    edit = request(server, "textDocument/rename", uri, position=position(MODULE, "%add (", 2), newName="sum_two")
    renamed = apply_edits(MODULE, edit["changes"][uri])
    assert "%sum_two (x: f32[]" in renamed and "to_apply=%sum_two" in renamed and "%add" not in renamed
    # ENTRY's %x: its definition, its use and the ENTRY signature; %add's %x stays.
    edit = request(server, "textDocument/rename", uri, position=position(MODULE, "%x = f32[4]", 1), newName="%input")
    renamed = apply_edits(MODULE, edit["changes"][uri])
    assert "ENTRY %main (input: f32[4])" in renamed and "%input = f32[4]{0} parameter(0)" in renamed
    assert "reduce(%input, %zero)" in renamed
    assert "%add (x: f32[], y: f32[])" in renamed and "add(%x, %y)" in renamed
    # the same module: only the name the parser had to make unique (x.1) is now the user's
    assert format_module(parse_module(renamed)) == format_module(parse_module(MODULE)).replace("x.1", "input")


def test_rename_of_a_computation_called_from_two_computations(server):
    uri, _ = open_doc(server, CALLS)
    # from a use: the call in %body and the conditional's branch in ENTRY
    edit = request(server, "textDocument/rename", uri, position=position(CALLS, "branch_computations={%double", 23),
                   newName="twice")
    renamed = apply_edits(CALLS, edit["changes"][uri])
    assert "%twice (d: f32[4])" in renamed and "to_apply=%twice" in renamed
    assert "branch_computations={%twice, %negate_it}" in renamed and "double" not in renamed
    assert format_module(parse_module(renamed)) == format_module(parse_module(CALLS)).replace("double", "twice")
    # the loop's computations: condition= and body= follow
    edit = request(server, "textDocument/rename", uri, position=position(CALLS, "%body (", 1), newName="step")
    renamed = apply_edits(CALLS, edit["changes"][uri])
    assert "%step (s: (s32[], f32[4]))" in renamed and "condition=%cond, body=%step" in renamed
    with pytest.raises(LspError):
        request(server, "textDocument/rename", uri, position=position(CALLS, "%body (", 1), newName="cond")


def test_rename_refuses_a_clash_and_prepares_the_range(server):
    uri, _ = open_doc(server, MODULE)
    prepared = request(server, "textDocument/prepareRename", uri, position=position(MODULE, "%zero = ", 3))
    assert prepared["placeholder"] == "zero"
    assert covered_text(MODULE, prepared["range"]) == "zero"
    with pytest.raises(LspError, match="already has an instruction named 'total'"):
        request(server, "textDocument/rename", uri, position=position(MODULE, "%zero = ", 3), newName="total")
    with pytest.raises(LspError, match="not a valid HLO name"):
        request(server, "textDocument/rename", uri, position=position(MODULE, "%zero = ", 3), newName="9lives")


# --------------------------------------------------------------------------- completion


def _labels(server, text: str, needle: str, delta: int) -> list[str]:
    uri, _ = open_doc(server, text)
    result = request(server, "textDocument/completion", uri, position=position(text, needle, delta))
    return [item["label"] for item in result["items"]]


def test_completion_of_opcodes_after_the_shape(server):
    text = MODULE.replace("ROOT %twice = f32[] multiply(", "ROOT %twice = f32[] mul")
    labels = _labels(server, text, "%twice = f32[] mul", len("%twice = f32[] mul"))
    assert labels == ["multiply"]


def test_completion_of_attribute_names_for_the_opcode(server):
    text = MODULE.replace("dimensions={0}, to_apply=%add", "dimensions={0}, ")
    labels = _labels(server, text, "dimensions={0}, ", len("dimensions={0}, "))
    assert "to_apply" in labels and "metadata" in labels
    assert "dimensions" not in labels           # already given
    assert "lhs_contracting_dims" not in labels  # not an attribute of reduce


def test_completion_of_computation_names(server):
    text = MODULE.replace("to_apply=%add", "to_apply=%")
    labels = _labels(server, text, "to_apply=%", len("to_apply=%"))
    assert labels == ["%add", "%main"]


@pytest.mark.parametrize("written,typed", [
    ("calls=%fused", "calls=%"), ("condition=%cond", "condition=%"), ("body=%body", "body=%"),
    ("branch_computations={%double, %negate_it}", "branch_computations={%"),
    ("branch_computations={%double, %negate_it}", "branch_computations={%double, %"),
    ("to_apply=%less", "to_apply=%le")])
def test_completion_of_computation_names_in_every_computation_attribute(server, written, typed):
    text = CALLS.replace(written, typed)
    labels = _labels(server, text, typed, len(typed))
    names = ["%double", "%negate_it", "%less", "%fused", "%cond", "%body", "%main"]
    assert labels == (["%less"] if typed.endswith("%le") else names)


def test_completion_of_names_in_scope(server):
    text = MODULE.replace("multiply(%total, %total)", "multiply(%total, %")
    labels = _labels(server, text, "multiply(%total, %", len("multiply(%total, %"))
    assert labels == ["%total", "%zero", "%x"]   # this computation's, nearest first


def test_completion_of_primitive_types(server):
    text = MODULE.replace("%zero = f32[] constant(0)", "%zero = bf")
    labels = _labels(server, text, "%zero = bf", len("%zero = bf"))
    assert labels == ["bf16"]


# --------------------------------------------------------------------------- outline


def test_document_symbols(server):
    uri, _ = open_doc(server, MODULE)
    symbols = request(server, "textDocument/documentSymbol", uri)
    assert [s["name"] for s in symbols] == ["add", "main"]
    main = symbols[1]
    assert main["detail"].startswith("ENTRY %main (x: f32[4]) -> f32[]")
    assert [c["name"] for c in main["children"]] == ["x", "zero", "total", "twice"]
    assert main["children"][2]["detail"] == "f32[] reduce"
    assert main["range"]["start"]["line"] == 9 and main["range"]["end"]["line"] == 14


def test_folding_ranges(server):
    text = "/* A block comment\n   over two lines */\n" + MODULE
    uri, _ = open_doc(server, text)
    folds = request(server, "textDocument/foldingRange", uri)
    regions = sorted((f["startLine"], f["endLine"]) for f in folds if f["kind"] == "region")
    comments = [(f["startLine"], f["endLine"]) for f in folds if f["kind"] == "comment"]
    assert regions == [(5, 9), (11, 16)]
    assert comments == [(0, 1)]


# --------------------------------------------------------------------------- formatting


def test_formatting_keeps_comments(server):
    text = MODULE.replace("  %zero = f32[] constant(0)",
                          "  // the initial value\n  %zero = f32[]   constant(0)  // zero")
    uri, _ = open_doc(server, text)
    edits = request(server, "textDocument/formatting", uri, options={"tabSize": 2, "insertSpaces": True})
    formatted = apply_edits(text, edits)
    assert "  // the initial value\n  %zero = f32[] constant(0)  // zero\n" in formatted
    assert "// Sums, with two computations" in formatted
    assert format_module(parse_module(formatted)) == format_module(parse_module(text))


def test_formatting_refuses_to_drop_a_comment(server):
    text = MODULE.replace("reduce(%x, %zero)", "reduce(%x, /* init */ %zero)")
    uri, _ = open_doc(server, text)
    mark = len(server.notifications)
    edits = request(server, "textDocument/formatting", uri, options={"tabSize": 2, "insertSpaces": True})
    assert edits == []
    message = server.wait_notification("window/showMessage", after=mark)
    assert "/* init */" in message["message"] and "line 13" in message["message"]


# --------------------------------------------------------------------------- signature help


def test_signature_help(server):
    text = MODULE.replace("multiply(%total, %total)", "select(%total, ")
    uri, _ = open_doc(server, text)
    help_ = request(server, "textDocument/signatureHelp", uri, position=position(text, "select(%total, ", 15))
    signature = help_["signatures"][0]
    assert signature["label"].startswith("select(pred: pred[d]")
    assert help_["activeParameter"] == 1
    start, end = signature["parameters"][1]["label"]
    assert signature["label"][start:end].startswith("on_true")
    assert "3 operands" in signature["documentation"]


def test_positions_are_utf16_code_units_with_crlf_line_ends(server):
    text = MODULE.replace("%zero = f32[] constant(0)", '%zero = f32[] constant(0), metadata={op_name="😀é"}')
    text = text.replace("multiply(%total, %total)", "multiply(%total, %x)").replace("\n", "\r\n")
    uri, diagnostics = open_doc(server, text)
    line = text.split("\r\n")[13]
    assert diagnostics[0]["range"]["start"] == {"line": 13, "character": line.index("%x)")}
    text2 = text.replace('op_name="😀é"}', 'op_name="😀é"}, foo=1')
    uri, diagnostics = open_doc(server, text2)
    line = text2.split("\r\n")[11]
    foo = line.index("foo") + 1   # the emoji is two UTF-16 code units
    assert diagnostics[0]["range"] == {"start": {"line": 11, "character": foo},
                                       "end": {"line": 11, "character": foo + 3}}
