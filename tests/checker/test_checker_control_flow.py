"""Checker errors of call, while, conditional and fusion, and of the structure of
computations and modules: parameter numbering, declared signatures, the entry
computation layout and input/output aliasing."""
import pytest

CASES = {
    "call operand shape": ("""HloModule m

%double (p: f32[4]) -> f32[4] {
  %p = f32[4] parameter(0)
  ROOT %d = f32[4] add(%p, %p)
}

ENTRY %main (x: f32[3]) -> f32[4] {
  %x = f32[3] parameter(0)
  ROOT %c = f32[4] call(%x), to_apply=%double
}
""", ["10:25: operand 0 of 'call' has shape f32[3] but parameter 0 of to_apply computation %double has shape f32[4]",
      "note 9:3: operand 0 is %x, defined here with shape f32[3]",
      "note 4:3: parameter 0 of %double is declared here"]),

    "call arity": ("""HloModule m

%f (a: f32[4], b: f32[4]) -> f32[4] {
  %a = f32[4] parameter(0)
  %b = f32[4] parameter(1)
  ROOT %s = f32[4] add(%a, %b)
}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[4] call(%x), to_apply=%f
}
""", ["11:30: to_apply computation %f must take 1 parameter ('call' passes 1 operand), but it takes 2",
      "note 3:1: %f is defined here"]),

    "call result": ("""HloModule m

%f (a: f32[4]) -> f32[4] {
  ROOT %a = f32[4] parameter(0)
}

ENTRY %main (x: f32[4]) -> f32[2,2] {
  %x = f32[4] parameter(0)
  ROOT %c = f32[2,2] call(%x), to_apply=%f
}
""", ["9:8: shape mismatch: 'call' produces f32[4] but the instruction is written as f32[2,2]"]),

    "while condition result": ("""HloModule m

%cond (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  ROOT %c = s32[] constant(1)
}

%body (s: s32[]) -> s32[] {
  %s = s32[] parameter(0)
  %one = s32[] constant(1)
  ROOT %n = s32[] add(%s, %one)
}

ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %w = s32[] while(%x), condition=%cond, body=%body
}
""", ["16:30: condition computation %cond must return pred[], but returns s32[]",
      "note 5:8: the ROOT of %cond is here"]),

    "while body result": ("""HloModule m

%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  ROOT %c = pred[] constant(true)
}

%body (s: s32[]) -> f32[] {
  %s = s32[] parameter(0)
  ROOT %f = f32[] convert(%s)
}

ENTRY %main (x: s32[]) -> s32[] {
  %x = s32[] parameter(0)
  ROOT %w = s32[] while(%x), condition=%cond, body=%body
}
""", ["15:47: body computation %body must return the loop state s32[], but returns f32[]",
      "note 10:8: the ROOT of %body is here"]),

    "while state shape": ("""HloModule m

%cond (s: s32[]) -> pred[] {
  %s = s32[] parameter(0)
  ROOT %c = pred[] constant(true)
}

%body (s: s32[]) -> s32[] {
  ROOT %s = s32[] parameter(0)
}

ENTRY %main (x: s64[]) -> s64[] {
  %x = s64[] parameter(0)
  ROOT %w = s64[] while(%x), condition=%cond, body=%body
}
""", ["14:25: operand 0 of 'while' has shape s64[] but parameter 0 of condition computation %cond has shape s32[]",
      "note 13:3: operand 0 is %x, defined here with shape s64[]",
      "note 4:3: parameter 0 of %cond is declared here"]),

    "conditional branch results": ("""HloModule m

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}

%neg (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}

%sum (v: f32[4]) -> f32[] {
  %v = f32[4] parameter(0)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(%v, %z), dimensions={0}, to_apply=%add
}

ENTRY %main (k: s32[], x: f32[4]) -> f32[4] {
  %k = s32[] parameter(0)
  %x = f32[4] parameter(1)
  ROOT %c = f32[4] conditional(%k, %x, %x), branch_computations={%neg, %sum}
}
""", ["23:45: all branches of 'conditional' must return the same shape: %neg returns f32[4] but %sum returns f32[]",
      "note 17:8: the ROOT of %sum is here"]),

    "conditional predicate type": ("""HloModule m

%neg (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}

ENTRY %main (p: s32[], x: f32[4]) -> f32[4] {
  %p = s32[] parameter(0)
  %x = f32[4] parameter(1)
  ROOT %c = f32[4] conditional(%p, %x, %x), true_computation=%neg, false_computation=%neg
}
""", ["11:32: the predicate of 'conditional' with true_computation=/false_computation= must be pred[], but operand 0 "
      "is s32[]",
      "note 9:3: operand 0 is %p, defined here with shape s32[]"]),

    "conditional operand count": ("""HloModule m

%neg (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}

ENTRY %main (k: s32[], x: f32[4]) -> f32[4] {
  %k = s32[] parameter(0)
  %x = f32[4] parameter(1)
  ROOT %c = f32[4] conditional(%k, %x), branch_computations={%neg, %neg}
}
""", ["11:8: 'conditional' expects 3 operands (the selector and one operand per branch), got 2"]),

    "fusion root": ("""HloModule m

%fused (p0: f32[4]) -> f32[4] {
  %p0 = f32[4] parameter(0)
  ROOT %e = f32[4] exponential(%p0)
}

ENTRY %main (x: f32[4]) -> f32[2,2] {
  %x = f32[4] parameter(0)
  ROOT %f = f32[2,2] fusion(%x), kind=kLoop, calls=%fused
}
""", ["10:8: 'fusion' is written as f32[2,2] but its fused computation %fused returns f32[4]",
      "note 5:8: the ROOT of %fused is here"]),

    "fusion parameter": ("""HloModule m

%fused (p0: f32[4]) -> f32[4] {
  %p0 = f32[4] parameter(0)
  ROOT %e = f32[4] exponential(%p0)
}

ENTRY %main (x: f32[5]) -> f32[4] {
  %x = f32[5] parameter(0)
  ROOT %f = f32[4] fusion(%x), kind=kLoop, calls=%fused
}
""", ["10:27: operand 0 of 'fusion' has shape f32[5] but parameter 0 of fused computation %fused has shape f32[4]",
      "note 9:3: operand 0 is %x, defined here with shape f32[5]",
      "note 4:3: parameter 0 of %fused is declared here"]),

    "duplicate parameter number": ("""HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(0)
  ROOT %a = f32[4] add(%x, %y)
}
""", ["5:3: parameter number 0 is used twice in computation %main",
      "note 4:3: %x is parameter(0) already"]),

    "gap in parameter numbers": ("""HloModule m

ENTRY %main (x: f32[4], y: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[4] parameter(2)
  ROOT %a = f32[4] add(%x, %y)
}
""", ["5:3: computation %main has 2 parameters, which must be numbered 0..1, but %y is parameter(2); there is no "
      "parameter(1)"]),

    "declared result": ("""HloModule m

ENTRY %main (x: f32[4]) -> s32[4] {
  %x = f32[4] parameter(0)
  ROOT %a = f32[4] add(%x, %x)
}
""", ["3:25: computation %main is declared to return s32[4] but its ROOT %a produces f32[4]",
      "note 5:8: the ROOT of %main is here"]),

    "entry computation layout parameter": ("""HloModule m, entry_computation_layout={(f32[4]{0}, f32[2]{0})->f32[4]{0}}

ENTRY %main (x: f32[4], y: f32[3]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[3] parameter(1)
  ROOT %a = f32[4] add(%x, %x)
}
""", ["1:14: entry_computation_layout gives parameter 1 the shape f32[2] but %y = parameter(1) of ENTRY %main is f32[3]",
      "note 5:3: %y is defined here"]),

    "entry computation layout count": ("""HloModule m, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

ENTRY %main (x: f32[4], y: f32[3]) -> f32[4] {
  %x = f32[4] parameter(0)
  %y = f32[3] parameter(1)
  ROOT %a = f32[4] add(%x, %x)
}
""", ["1:14: entry_computation_layout gives 1 parameter shape but ENTRY %main has 2 parameters",
      "note 3:7: %main is defined here"]),

    "entry computation layout result": ("""HloModule m, entry_computation_layout={(f32[4]{0})->s32[4]{0}}

ENTRY %main (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %a = f32[4] add(%x, %x)
}
""", ["1:14: entry_computation_layout gives the result shape s32[4] but the ROOT %a of ENTRY %main produces f32[4]",
      "note 5:8: the ROOT of %main is here"]),

    "input output alias size": ("""HloModule m, input_output_alias={ {}: (0, {}, may-alias) }

ENTRY %main (x: f32[4]) -> f32[2] {
  %x = f32[4] parameter(0)
  ROOT %s = f32[2] slice(%x), slice={[0:2]}
}
""", ["1:14: input_output_alias: output {} is f32[2] but parameter 0 at {} is f32[4]; aliased buffers must have the "
      "same size"]),
}


@pytest.mark.parametrize("name", CASES)
def test_malformed_control_flow_and_structure(expect_error, name):
    text, expected = CASES[name]
    expect_error(text, expected)


def test_conditional_with_predicate_and_while_loop_check_clean(check):
    assert check("""HloModule m, entry_computation_layout={(pred[], f32[4]{0})->f32[4]{0}}

%neg (x: f32[4]) -> f32[4] {
  %x = f32[4] parameter(0)
  ROOT %n = f32[4] negate(%x)
}

%id (x: f32[4]) -> f32[4] {
  ROOT %x = f32[4] parameter(0)
}

ENTRY %main (p: pred[], x: f32[4]) -> f32[4] {
  %p = pred[] parameter(0)
  %x = f32[4] parameter(1)
  ROOT %c = f32[4] conditional(%p, %x, %x), true_computation=%neg, false_computation=%id
}
""") == []
