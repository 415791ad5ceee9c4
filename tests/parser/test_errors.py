"""Parse errors: exact messages, positions and carets; several errors per file.

Every error is an HloError whose diagnostics render as
`file:line:col: error: message`, the source line and a caret. Syntax errors are
recovered from line by line so that one file reports all of its errors without
a cascade of follow-up errors.
"""
from __future__ import annotations

import pytest

from hlo.diagnostics import HloError
from hlo.text.parser import parse_module


def errors(text: str):
    with pytest.raises(HloError) as info:
        parse_module(text, "t.hlo")
    return info.value


def located(err: HloError):
    """[(line, column, message)] of the error's diagnostics."""
    return [(d.loc.line, d.loc.column, d.message) for d in err.diagnostics]


def entry(body: str) -> str:
    return "HloModule m\n\nENTRY %e {\n" + body + "\n}\n"


# --------------------------------------------------------------------------- rendering

def test_rendering_with_source_line_and_caret():
    err = errors(entry("  %a = f32[] parameter(0)\n  ROOT %b = f32[] add(%a %a)"))
    assert err.render() == (
        "t.hlo:5:26: error: unexpected '%a'; expected ')' or ','\n"
        "    ROOT %b = f32[] add(%a %a)\n"
        "                           ^")


def test_rendering_of_a_note():
    err = errors(entry("  %a = f32[] parameter(0)\n  %b = f32[] add(%a, %c)\n  %c = f32[] negate(%a)"))
    assert err.render() == (
        "t.hlo:5:22: error: '%c' is used before it is defined\n"
        "    %b = f32[] add(%a, %c)\n"
        "                       ^\n"
        "t.hlo:6:3: note: defined here\n"
        "    %c = f32[] negate(%a)\n"
        "    ^")


def test_caret_under_tabs():
    err = errors("HloModule m\nENTRY e {\n\tx = f32[] parameter(0)\n\tROOT y = f32[] negate(x x)\n}\n")
    lines = err.render().splitlines()
    assert lines[0] == "t.hlo:4:26: error: unexpected 'x'; expected '(', ')' or ','"
    assert lines[2] == "  \t" + " " * 24 + "^"


# --------------------------------------------------------------------------- lexical errors

def test_unexpected_character():
    err = errors(entry("  %a = f32[] parameter(0)\n  $$$ junk\n  ROOT %b = f32[] negate(%a)"))
    assert located(err) == [(5, 3, "unexpected character '$'")]


def test_nul_byte():
    err = errors(entry("  ROOT %a = f32[] parameter(0)\x00"))
    assert located(err) == [(4, 31, "unexpected NUL byte")]


def test_lone_slash():
    err = errors(entry("  ROOT %a = f32[] parameter(0) / 2"))
    assert located(err) == [(4, 32, "unexpected '/' (comments are /* ... */ or // ...)")]


def test_unterminated_comment_points_at_its_start():
    err = errors(entry("  %a = f32[] parameter(0) /* oops\n  ROOT %b = f32[] negate(%a)"))
    assert located(err) == [(4, 27, "unterminated /* comment")]


def test_unterminated_string_gets_a_note():
    err = errors(entry('  %a = f32[] parameter(0), metadata={op_name="abc}\n'
                       '  ROOT %b = f32[] negate(%a), backend_config="x'))
    (diag,) = err.diagnostics
    assert diag.message == "unexpected end of input: a '}' is missing"
    assert (diag.notes[0].loc.line, diag.notes[0].loc.column) == (4, 46)
    assert diag.notes[0].message == "this string runs over several lines; is a closing '\"' missing?"


# --------------------------------------------------------------------------- syntax errors and recovery

def test_several_syntax_errors_are_all_reported_once():
    err = errors(entry("  %x = f32[] parameter(0)\n"
                       "  %a = f32[] negate(%x\n"
                       "  %b = f32[] = negate(%x)\n"
                       "  %c = f32[ negate(%x)\n"
                       "  ROOT %r = f32[] negate(%x)"))
    assert located(err) == [
        (5, 23, "expected ')' or ',' before '%b'"),
        (6, 14, "unexpected '='"),
        (7, 13, "unexpected 'negate'; expected '<=', '?', ']' or an integer"),
    ]


def test_missing_close_paren_blames_the_line_that_lacks_it():
    err = errors(entry("  %x = f32[] parameter(0)\n  %a = f32[] negate(%x\n  ROOT %r = f32[] negate(%x)"))
    assert located(err) == [(5, 23, "expected ')' or ',' before 'ROOT'")]


def test_multi_line_instruction_missing_paren_is_one_error():
    err = errors("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n  ROOT r = f32[]\n    add(x,\n        x\n}\n")
    assert located(err) == [(6, 10, "expected '(', ')' or ',' before '}'")]


def test_missing_close_brace_between_computations_is_one_error():
    text = """HloModule m

%c (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  ROOT %n = f32[] negate(%p)

ENTRY %e (x: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  ROOT %r = f32[] call(%x), to_apply=%c
}
"""
    err = errors(text)
    assert located(err) == [(5, 28, "missing '}' before computation 'e': the previous computation is not closed")]


def test_missing_close_brace_short_form():
    err = errors("HloModule m\nc {\n  p = f32[] parameter(0)\n  ROOT n = f32[] negate(p)\n"
                 "ENTRY e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] call(x), to_apply=c\n}\n")
    assert located(err) == [(4, 26, "missing '}' before computation 'e': the previous computation is not closed")]


def test_missing_close_brace_at_end_of_file():
    err = errors("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] negate(x)\n")
    assert located(err) == [(4, 26, "unexpected end of input: a '}' is missing")]


def test_missing_close_brace_then_later_error_is_still_found():
    err = errors("HloModule m\nc {\n  p = f32[] parameter(0)\n"
                 "ENTRY e {\n  x = f32[] parameter(0)\n  ROOT r = f32[] negate(x x)\n}\n")
    assert located(err) == [
        (3, 24, "missing '}' before computation 'e': the previous computation is not closed"),
        (6, 27, "unexpected 'x'; expected '(', ')' or ','"),
    ]


def test_broken_header_is_one_error():
    err = errors("HloModule m, is_scheduled=true entry_computation_layout={(f32[])->f32[]}\n\n"
                 "ENTRY %e (x: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n  ROOT %r = f32[] negate(%x)\n}\n")
    assert located(err) == [(1, 32, "expected ',' before 'entry_computation_layout='")]


def test_broken_header_attribute_list_is_one_error():
    err = errors("HloModule m,, foo\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n")
    assert located(err) == [(1, 13, "unexpected ','; expected an attribute 'name='")]


def test_broken_computation_signature_keeps_its_body():
    err = errors("HloModule m\n\nENTRY %e (x: f32[] -> f32[] {\n  %x = f32[] parameter(0)\n"
                 "  ROOT %r = f32[] negate(%x y)\n}\n")
    assert located(err) == [(3, 20, "unexpected '->'"),
                            (5, 29, "unexpected 'y'; expected ')' or ','")]


def test_glued_equal_is_explained():
    err = errors("HloModule m\nENTRY e {\n  x=f32[] parameter(0)\n}\n")
    assert located(err) == [(3, 3, "unexpected 'x='; expected '}', ROOT, a %name or a name (an instruction is "
                                   "written 'x = shape opcode(...)' with spaces around '=')")]


def test_missing_comma_before_attribute():
    err = errors(entry("  %a = f32[2] parameter(0)\n  ROOT %b = f32[2] copy(%a) metadata={op_name=\"x\"}"))
    assert located(err) == [(5, 29, "expected ',' before 'metadata='")]


def test_percent_name_in_signature():
    err = errors("HloModule m\n%c (%p: f32[]) -> f32[] {\n  %p = f32[] parameter(0)\n}\nENTRY e {\n"
                 "  ROOT x = f32[] parameter(0)\n}\n")
    assert located(err) == [(2, 5, "unexpected '%p'; expected ')' or a parameter 'name:'")]


def test_empty_input_and_header_only():
    assert located(errors("  \n")) == [(1, 1, "empty input: expected an HloModule")]
    assert located(errors("HloModule m\n")) == [
        (1, 11, "unexpected end of input; expected ',', ENTRY, a %name, a name or a stack frame table")]


def test_error_count_is_bounded():
    body = "\n".join(f"  %a{i} = f32[] negate(%x %x)" for i in range(80))
    err = errors(entry("  %x = f32[] parameter(0)\n" + body))
    assert len(err.diagnostics) == 50


# --------------------------------------------------------------------------- shapes and layouts

def test_layout_rank_mismatch():
    err = errors(entry("  ROOT %x = f32[2,3]{0} parameter(0)"))
    assert located(err) == [(4, 13, "layout {0} has 1 entries for a shape of rank 2")]


def test_layout_not_a_permutation():
    err = errors(entry("  ROOT %x = f32[2,3]{1,1} parameter(0)"))
    assert located(err) == [(4, 13, "layout {1,1} does not list each dimension once for a shape of rank 2")]


def test_unknown_layout_attribute():
    err = errors(entry("  ROOT %x = f32[2,3]{1,0:Q(3)} parameter(0)"))
    assert located(err) == [(4, 26, "unknown layout attribute 'Q'; expected T, L, E, S, SC, P, M, D, # or *")]


def test_layout_attribute_needs_an_integer():
    err = errors(entry("  ROOT %x = f32[2,3]{1,0:S(1,2)} parameter(0)"))
    assert located(err) == [(4, 26, "layout attribute S(...) takes one integer, e.g. S(1)")]


def test_negative_dimension():
    err = errors(entry("  ROOT %x = f32[-2] parameter(0)"))
    assert located(err) == [(4, 17, "dimension sizes cannot be negative, got -2")]


def test_token_with_dimensions():
    err = errors(entry("  ROOT %x = token[2] parameter(0)"))
    assert located(err) == [(4, 13, "token shapes have no dimensions: write token[]")]


# --------------------------------------------------------------------------- names

def test_undefined_operand_with_suggestion():
    err = errors(entry("  %input = f32[] parameter(0)\n  ROOT %b = f32[] negate(%inptu)"))
    assert located(err) == [(5, 26, "use of undefined instruction '%inptu'; did you mean '%input'?")]


def test_undefined_operand_without_suggestion():
    err = errors(entry("  %a = f32[] parameter(0)\n  ROOT %b = f32[] negate(%zzz)"))
    assert located(err) == [(5, 26, "use of undefined instruction '%zzz'")]


def test_operand_from_another_computation_is_undefined():
    text = ("HloModule m\n%c (p: f32[]) -> f32[] {\n  ROOT %p = f32[] parameter(0)\n}\n"
            "ENTRY %e {\n  %a = f32[] parameter(0)\n  ROOT %r = f32[] negate(%p)\n}\n")
    assert located(errors(text)) == [(7, 26, "use of undefined instruction '%p'")]


def test_used_before_defined_has_a_note():
    err = errors(entry("  %a = f32[] parameter(0)\n  %b = f32[] add(%a, %c)\n  %c = f32[] negate(%a)"))
    (diag,) = err.diagnostics
    assert (diag.loc.line, diag.loc.column, diag.message) == (5, 22, "'%c' is used before it is defined")
    assert [(n.loc.line, n.loc.column, n.message) for n in diag.notes] == [(6, 3, "defined here")]


def test_duplicate_instruction_name():
    err = errors(entry("  %a = f32[] parameter(0)\n  %a = f32[] negate(%a)"))
    (diag,) = err.diagnostics
    assert (diag.loc.line, diag.loc.column, diag.message) == (
        5, 3, "instruction name '%a' is already defined in computation 'e'")
    assert [(n.loc.line, n.loc.column, n.message) for n in diag.notes] == [(4, 3, "previous definition is here")]


def test_duplicate_computation_name():
    text = ("HloModule m\nc {\n  ROOT p = f32[] parameter(0)\n}\nc {\n  ROOT q = f32[] parameter(0)\n}\n"
            "ENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n")
    (diag,) = errors(text).diagnostics
    assert (diag.loc.line, diag.message) == (5, "computation 'c' is defined twice")
    assert diag.notes[0].loc.line == 2


def test_undefined_computation():
    err = errors(entry("  %a = f32[] parameter(0)\n  ROOT %c = f32[] call(%a), to_apply=%nothere"))
    assert located(err) == [(5, 29, "attribute 'to_apply': computation 'nothere' is not defined "
                                    "(computations must be defined before use)")]


def test_computation_used_before_defined():
    text = ("HloModule m\nENTRY e {\n  a = f32[] parameter(0)\n  ROOT c = f32[] call(a), to_apply=later\n}\n"
            "later {\n  ROOT p = f32[] parameter(0)\n}\n")
    assert located(errors(text))[0][2].startswith("attribute 'to_apply': computation 'later' is not defined")


def test_more_than_one_root_and_entry():
    text = ("HloModule m\nENTRY a {\n  ROOT x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)\n}\n"
            "ENTRY b {\n  ROOT z = f32[] parameter(0)\n}\n")
    assert [(line, msg) for line, _, msg in located(errors(text))] == [
        (6, "more than one ENTRY computation"), (4, "computation 'a' has more than one ROOT")]


def test_empty_computation():
    assert located(errors("HloModule m\nENTRY e {\n}\n")) == [(2, 7, "computation 'e' has no instructions")]


def test_illegal_instruction_name():
    err = errors("HloModule m\nENTRY e {\n  __x = f32[] parameter(0)\n}\n")
    assert located(err) == [(3, 3, "illegal instruction name '__x'")]


def test_control_predecessor_must_be_defined_earlier():
    err = errors(entry("  %a = f32[] parameter(0)\n  ROOT %b = f32[] negate(%a), control-predecessors={%c}"))
    assert located(err) == [(5, 31, "attribute 'control-predecessors': control predecessor '%c' is not an "
                                    "instruction defined earlier in this computation")]


# --------------------------------------------------------------------------- opcodes and attributes

def test_unknown_opcode_with_suggestion():
    err = errors(entry("  %a = f32[] parameter(0)\n  ROOT %b = f32[] negat(%a)"))
    assert located(err) == [(5, 19, "unknown opcode 'negat'; did you mean 'negate'?")]


def test_unknown_attribute_lists_allowed_ones():
    err = errors(entry("  %a = f32[2] parameter(0)\n  ROOT %b = f32[2,3] broadcast(%a), dimension={0}"))
    assert located(err) == [(5, 37, "unexpected attribute 'dimension' for opcode 'broadcast' "
                                    "(did you mean 'dimensions'?); allowed: dimensions")]
    err = errors(entry("  %a = f32[] parameter(0)\n  ROOT %b = f32[] negate(%a), k=1"))
    assert located(err) == [(5, 31, "unexpected attribute 'k' for opcode 'negate'; "
                                    "allowed: none besides the generic ones")]


def test_missing_required_attribute():
    err = errors(entry("  %a = f32[2,3] parameter(0)\n  ROOT %b = f32[3,2] transpose(%a)"))
    assert located(err) == [(5, 22, "'transpose' requires attribute 'dimensions='")]


def test_missing_several_required_attributes():
    err = errors(entry("  %a = f32[5,4] parameter(0)\n  %i = s32[3,1] parameter(1)\n"
                       "  ROOT %g = f32[3,4] gather(%a, %i), offset_dims={1}, collapsed_slice_dims={0}"))
    assert [m for _, _, m in located(err)] == ["'gather' requires attribute 'start_index_map='",
                                                "'gather' requires attribute 'index_vector_dim='",
                                                "'gather' requires attribute 'slice_sizes='"]


def test_attribute_given_twice():
    err = errors(entry("  %a = f32[2] parameter(0)\n  ROOT %b = f32[2] reverse(%a), dimensions={0}, dimensions={0}"))
    (diag,) = err.diagnostics
    assert (diag.loc.column, diag.message) == (49, "attribute 'dimensions' is given more than once")
    assert diag.notes[0].loc.column == 33


@pytest.mark.parametrize("attr,message", [
    ("dimensions={a}", "attribute 'dimensions': expected a list of integers like {0,1}, got '{a}'"),
    ("dimensions=3", "attribute 'dimensions': expected a list of integers like {0,1}, got '3'"),
])
def test_bad_int_list(attr, message):
    err = errors(entry(f"  %a = f32[2] parameter(0)\n  ROOT %b = f32[2] reverse(%a), {attr}"))
    assert located(err) == [(5, 33, message)]


@pytest.mark.parametrize("attr,message", [
    ("window={size=2 stide=2}", "attribute 'window': expected window fields size= stride= pad= lhs_dilate= "
                                "rhs_dilate= rhs_reversal=, got 'stide=2'"),
    ("window={size=2x2}", None),
    ("window={stride=2}", "attribute 'window': window needs size="),
    ("window={size=2 stride=2x2}", "attribute 'window': window stride= has 2 dimensions but size= has 1"),
])
def test_bad_window(attr, message):
    text = entry("  %a = f32[4] parameter(0)\n  %z = f32[] constant(0)\n"
                 f"  ROOT %r = f32[2] reduce-window(%a, %z), {attr}, to_apply=%a")
    err = errors(text)
    if message is not None:
        assert located(err)[0] == (6, 43, message)


def test_bad_enum_and_precision():
    err = errors(entry("  %a = f32[2] parameter(0)\n  ROOT %c = pred[2] compare(%a, %a), direction=BIGGER"))
    assert located(err) == [(5, 38, "attribute 'direction': unknown value 'BIGGER'; expected one of "
                                    "EQ, NE, GE, GT, LE, LT")]
    err = errors(entry("  %a = f32[2] parameter(0)\n  ROOT %d = f32[] dot(%a, %a), lhs_contracting_dims={0}, "
                       "rhs_contracting_dims={0}, operand_precision={fast,default}"))
    assert located(err)[0][2] == ("attribute 'operand_precision': expected precision default, high or highest, "
                                  "got 'fast'")


def test_bad_padding_and_dim_labels():
    err = errors(entry("  %a = f32[2] parameter(0)\n  %z = f32[] constant(0)\n"
                       "  ROOT %p = f32[4] pad(%a, %z), padding=1_1_-1"))
    assert located(err) == [(6, 33, "attribute 'padding': interior padding must be non-negative")]
    err = errors(entry("  %a = f32[1,2] parameter(0)\n  ROOT %c = f32[1,2] convolution(%a, %a), dim_labels=bf_oo->bf"))
    assert located(err) == [(5, 43, "attribute 'dim_labels': dim_labels rhs part 'oo': label 'o' appears twice")]


@pytest.mark.parametrize("sharding,message", [
    ("{bogus}", "unexpected 'bogus' in a sharding; expected replicated, manual, unknown, unreduced, maximal device=N, "
                "devices=[...]..., last_tile_dim_replicate, last_tile_dims={...}, shard_as N, shard_like N or "
                "metadata={...}"),
    ("{devices=[2,2]0,1,2}", "devices=[2,2] needs 4 device ids, got 3"),
    ("{devices=[2,2]<=[8]}", "devices=[2,2] has 4 tiles but the iota list has 8 devices"),
    ("{replicated maximal}", "a sharding needs only one of replicated, manual, unknown, unreduced, maximal or devices="),
    ("{device=1}", "device=N comes after 'maximal', e.g. {maximal device=0}"),
    ("{replicated shard_as}", "shard_as takes a group id, e.g. shard_as 1"),
])
def test_bad_sharding(sharding, message):
    err = errors(entry(f"  ROOT %a = f32[2] parameter(0), sharding={sharding}"))
    assert located(err) == [(4, 34, "attribute 'sharding': " + message)]


def test_bad_replica_groups():
    text = ("HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"
            "ENTRY e {\n  p = f32[8] parameter(0)\n  ROOT r = f32[8] all-reduce(p), replica_groups=[2,4]<=[6], "
            "to_apply=add\n}\n")
    assert located(errors(text)) == [(9, 34, "attribute 'replica_groups': iota replica groups: [2, 4] and [6] have "
                                             "different element counts")]


def test_bad_metadata_and_frontend_attributes():
    err = errors(entry('  ROOT %a = f32[2] parameter(0), metadata={op_nam="x"}'))
    assert located(err) == [(4, 34, "attribute 'metadata': unknown metadata field 'op_nam'; allowed: op_type, "
                                    "op_name, source_file, source_line, source_end_line, source_column, "
                                    "source_end_column, profile_type, deduplicated_name, scheduling_name, "
                                    "stack_frame_id")]
    err = errors(entry('  ROOT %a = f32[2] parameter(0), metadata={source_line="x"}'))
    assert located(err) == [(4, 34, "attribute 'metadata': metadata field 'source_line' takes an integer")]
    err = errors(entry('  ROOT %a = f32[2] parameter(0), frontend_attributes={a=1}'))
    assert located(err) == [(4, 34, "attribute 'frontend_attributes': frontend attribute 'a' must be a string or "
                                    "a {...} dict")]


def test_syntax_error_inside_metadata_points_into_the_file():
    err = errors(entry('  ROOT %a = f32[2] parameter(0), metadata={op_name="x" ]}'))
    assert located(err) == [(4, 56, "unexpected ']'")]


def test_bad_header_attributes():
    err = errors("HloModule m, replica_count=0, foo=1, is_scheduled=2\nENTRY e {\n  ROOT x = f32[] parameter(0)\n}\n")
    assert [(c, m) for _, c, m in located(err)] == [
        (14, "module attribute 'replica_count': expected a positive integer, got '0'"),
        (31, "module attribute 'foo': unknown module attribute; allowed: is_scheduled, input_output_alias, "
             "buffer_donor, alias_passthrough_params, entry_computation_layout, "
             "allow_spmd_sharding_propagation_to_parameters, allow_spmd_sharding_propagation_to_output, "
             "replica_count, num_partitions, frontend_attributes, origin_recovery_table"),
        (38, "module attribute 'is_scheduled': expected true or false, got '2'"),
    ]


def test_bad_alias_entry():
    err = errors("HloModule m, input_output_alias={ {0}: (0, {0}, maybe-alias) }\n"
                 "ENTRY e {\n  ROOT x = (f32[]) parameter(0)\n}\n")
    assert located(err) == [(1, 14, "module attribute 'input_output_alias': alias kind must be may-alias or "
                                    "must-alias, not 'maybe-alias'")]


# --------------------------------------------------------------------------- literals

def test_literal_out_of_range_points_at_the_element():
    err = errors(entry("  ROOT %c = s8[3] constant({1, 300, 2})"))
    assert located(err) == [(4, 32, "bad literal for s8[3]{0}: value 300 is out of range for s8")]


def test_literal_scalar_out_of_range():
    err = errors(entry("  ROOT %c = u8[] constant(-1)"))
    assert located(err) == [(4, 27, "bad literal for u8[]: value -1 is out of range for u8")]


def test_float_literal_out_of_range():
    err = errors(entry("  ROOT %c = f16[2] constant({1, 1e6})"))
    assert located(err) == [(4, 33, "bad literal for f16[2]{0}: value 1000000.0 is out of range for f16")]


def test_literal_wrong_nesting():
    err = errors(entry("  ROOT %c = f32[2,2] constant({1, 2})"))
    assert located(err) == [(4, 32, "bad literal for f32[2,2]{1,0}: literal needs 2 levels of braces")]
    err = errors(entry("  ROOT %c = f32[2] constant({{1}, {2}})"))
    assert located(err) == [(4, 29, "bad literal for f32[2]{0}: literal is nested deeper than the shape's rank 1")]
    err = errors(entry("  ROOT %c = f32[2,2] constant({ {1, 2}, {3} })"))
    assert located(err) == [(4, 42, "bad literal for f32[2,2]{1,0}: literal dimension 1 has 1 elements, expected 2")]


def test_literal_wrong_element_kind():
    err = errors(entry("  ROOT %c = s32[2] constant({1, 2.5})"))
    assert located(err) == [(4, 33, "bad literal for s32[2]{0}: expected an integer for s32, got 2.5")]
    err = errors(entry("  ROOT %c = pred[2] constant({1, 2.5})"))
    assert located(err) == [(4, 34, "bad literal for pred[2]{0}: expected true/false or an integer for pred, got 2.5")]


def test_literal_special_values_the_type_lacks():
    err = errors(entry("  ROOT %c = f8e4m3fn[2] constant({1, inf})"))
    assert located(err) == [(4, 38, "bad literal for f8e4m3fn[2]{0}: f8e4m3fn has no infinity")]
    err = errors(entry("  ROOT %c = f4e2m1fn[1] constant({nan})"))
    assert located(err) == [(4, 35, "bad literal for f4e2m1fn[1]{0}: f4e2m1fn has no NaN")]
    err = errors(entry("  ROOT %c = f32[1] constant({nan(0x800000)})"))
    assert located(err)[0][2] == ("bad literal for f32[1]{0}: NaN payload 0x800000 does not fit the 23 payload bits "
                                  "of f32 (and must not be 0)")


def test_elided_literal_only_as_a_whole():
    err = errors(entry("  ROOT %c = f32[2,2] constant({ {...}, {1, 2} })"))
    assert located(err)[0][2] == "bad literal for f32[2,2]{1,0}: '...' (elided data) must be the whole literal: {...}"
    err = errors(entry("  ROOT %c = (f32[2]) constant({...})"))
    assert located(err)[0][2] == "bad literal for (f32[2]{0}): expected a tuple literal ( ... ) with 1 elements"


def test_parameter_needs_an_integer():
    err = errors(entry("  ROOT %a = f32[] parameter(x)"))
    assert located(err) == [(4, 19, "parameter takes one integer: parameter(N)")]
    err = errors(entry("  ROOT %a = f32[] parameter(-1)"))
    assert located(err) == [(4, 19, "parameter number must be non-negative")]


def test_literal_operand_on_other_opcodes():
    err = errors(entry("  ROOT %a = f32[] negate(1)"))
    assert located(err) == [(4, 19, "'negate' takes instruction operands, not literal values")]


def test_errors_from_several_phases_are_collected():
    err = errors(entry("  %a = f32[2] parameter(0)\n  %b = f32[2] frob(%a)\n  %c = s8[] constant(999)\n"
                       "  ROOT %d = f32[2] reverse(%q), dimensions={0}"))
    assert [m for _, _, m in located(err)] == [
        "unknown opcode 'frob'",
        "bad literal for s8[]: value 999 is out of range for s8",
        "use of undefined instruction '%q'",
    ]
