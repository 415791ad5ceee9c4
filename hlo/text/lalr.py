"""The LALR(1) driver: Lark's parse table re-keyed for a tight loop over the lexer's tokens.

Lark's own parser loop costs a Token comparison per table lookup and a generic
callback wrapper per rule; `drive` looks up plain strings and calls the callbacks
of hlo/text/records.py directly (the hottest rules through FAST_CALLBACKS).
"""
from __future__ import annotations

import functools
from itertools import chain

from lark import Lark
from lark.parsers.lalr_analysis import Shift

from .grammar import load_grammar
from .lexer import make_token
from .records import FAST_CALLBACKS, FAST_EXPANSIONS


class Tables:
    """Lark's LALR table re-keyed for a tight driver loop.

    states[s][terminal or rule name] is (True, next_state) for a shift or
    (False, (length, callback, rule name)) for a reduction; callbacks are the
    ones Lark built from `Records` (they drop anonymous punctuation and inline
    `?rules` exactly as lark.parse would).
    """

    def __init__(self, lark: Lark):
        inner = lark.parser.parser.parser
        table, callbacks = inner.parse_table, inner.callbacks
        self.start_states = dict(table.start_states)
        self.end_states = dict(table.end_states)
        self.states = {}
        for state, row in table.states.items():
            # Plain str keys: lark's Token keys would make every lookup call Token.__eq__.
            self.states[state] = {
                str(sym): (True, arg) if action is Shift
                else (False, (len(arg.expansion), _callback(arg, callbacks), str(arg.origin.name)))
                for sym, (action, arg) in row.items()}


def _callback(rule, callbacks):
    """The rule's callback: a direct one from FAST_CALLBACKS for the hottest rules, else Lark's."""
    name = str(rule.alias or rule.origin.name)
    fast = FAST_CALLBACKS.get(name)
    if fast is not None and FAST_EXPANSIONS[name](tuple(str(s.name) for s in rule.expansion)):
        return fast
    if (rule.alias is None and rule.options.expand1 and len(rule.expansion) == 1
            and not rule.expansion[0].is_term):
        return _first_child  # `?rule: other_rule` passes its single child through
    return callbacks[rule]


def _first_child(children):
    return children[0]


@functools.lru_cache(maxsize=None)
def tables() -> Tables:
    return Tables(load_grammar())


class UnexpectedToken(Exception):
    """The table has no action for `token`; `expected` is the state's row (its keys: what would do)."""

    def __init__(self, token, expected):
        self.token, self.expected = token, expected


def drive(tokens, start: str, end_pos: int):
    """Run the LALR table over tokens, then end of input; the callbacks' value for `start`."""
    parse_table = tables()
    states = parse_table.states
    state_stack = [parse_table.start_states[start]]
    value_stack: list = []
    end_state = parse_table.end_states[start]
    end = make_token("$END", "", end_pos)
    for tok in chain(tokens, (end,)):
        ttype = tok.type
        while True:
            row = states[state_stack[-1]]
            try:
                shift, arg = row[ttype]
            except KeyError:
                raise UnexpectedToken(tok, row) from None
            if shift:
                state_stack.append(arg)
                value_stack.append(tok)
                break
            size, callback, origin = arg
            if size:
                children = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                children = []
            value_stack.append(callback(children))
            state = states[state_stack[-1]][origin][1]
            if state == end_state and tok is end:  # the start rule, reduced at end of input
                return value_stack[-1]
            state_stack.append(state)
