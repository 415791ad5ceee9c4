"""Syntax errors: what to report, and how to change the text so that the next parse gets further.

A syntax error does not stop the parse: the broken line is blanked out (or, for
a computation header, replaced by a neutral one) and the text parsed again, so
that every syntax error in a file is reported at once; the rules are described
at `_recover`. Blanking keeps every offset, so each diagnostic points into the
text as written.
"""
from __future__ import annotations

import re
from typing import Optional

from lark.exceptions import VisitError

from ..diagnostics import Diagnostic, HloError, SourceFile
from .grammar import load_grammar
from .fastpath import instruction_runs
from .lalr import UnexpectedToken, drive
from .lexer import tokenize
from .records import SyntaxInCallback

_TERMINAL_WORDS = {
    "NAME": "a %name", "IDENT": "a name", "COLON_NAME": "a parameter 'name:'", "ATTR_NAME": "an attribute 'name='",
    "INT": "an integer", "DECIMAL": "a number", "STRING": "a string", "PRIM": "a shape", "SHAPE_TEXT": "a shape",
    "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'", "LSQB": "'['", "RSQB": "']'",
    "COMMA": "','", "EQUAL": "'='", "COLON": "':'", "ARROW": "'->'", "LE": "'<='", "ROOT": "ROOT",
    "ENTRY": "ENTRY", "HLOMODULE": "HloModule", "LAYOUT_LBRACE": "'{'", "$END": "end of input",
    "OPERAND_NAMES": "'('", "LITERAL_TEXT": "'('", "INT_LIST": "'{'", "BRACED": "'{'", "STACK_TABLE_NAME": "a stack frame table",
    "QMARK": "'?'", "STAR": "'*'", "HASH": "'#'", "ELLIPSIS": "'...'", "NAN": "a number", "INF": "a number",
    "NEG_INF": "a number", "TRUE": "true", "FALSE": "false", "DXD": "a window size like 3x3",
    "PAD": "a padding like 0_1x1_0", "DIM_LABELS": "dim labels like b01f_01io->b01f", "IOTA_T": "'T('",
}


def _describe_token(tok) -> str:
    if tok.type == "$END":
        return "end of input"
    text = str(tok)
    if tok.type == "ATTR_NAME":
        text += "="
    elif tok.type == "COLON_NAME":
        text += ":"
    elif tok.type == "NAME":
        text = "%" + text
    text = text.replace("\n", " ")
    if len(text) > 40:
        text = text[:37] + "..."
    return f"'{text}'"


def _expected_phrase(row) -> Optional[str]:
    """'an integer or a shape': the terminals the table row accepts (None if none or too many to list).
    INSTRUCTION_LINES (the line fast path's) stands for instructions, whose first tokens are listed."""
    words = sorted({_TERMINAL_WORDS.get(e, e.lower()) for e in row
                    if (e.isupper() or e == "$END") and e != "INSTRUCTION_LINES"})
    if not words or len(words) > 6:
        return None
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _expected_text(row) -> str:
    phrase = _expected_phrase(row)
    return "" if phrase is None else "; expected " + phrase


_STATEMENT_STARTS = {"NAME", "IDENT", "ROOT", "RBRACE"}
_MULTI_LINE_STRING = re.compile(r'"(?:\\.|[^"\\\n])*\n(?:\\.|[^"\\])*"')
_HEADER_LINE = re.compile(r"\s*(ENTRY\s+)?%?[A-Za-z_][A-Za-z0-9_.\-]*\s*(\(.*\)\s*->.*)?\{\s*(//.*)?$")
_BRACE_SCAN = re.compile(r'"(?:\\.|[^"\\])*"|/\*.*?\*/|//[^\n\r]*|[{}]', re.S)


def _line_bounds(text: str, offset: int) -> tuple[int, int]:
    start = max(text.rfind("\n", 0, offset), text.rfind("\r", 0, offset)) + 1
    ends = [e for e in (text.find("\n", offset), text.find("\r", offset)) if e >= 0]
    return start, (min(ends) if ends else len(text))


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + re.sub(r"[^\n\r]", " ", text[start:end]) + text[end:]


def _previous_token_end(text: str, offset: int) -> int:
    """Offset just after the last non-space, non-comment character before offset."""
    i = offset
    while True:
        j = i
        while j > 0 and text[j - 1].isspace():
            j -= 1
        line_start, _ = _line_bounds(text, j)
        comment = text.find("//", line_start, j)
        if comment >= 0 and '"' not in text[line_start:comment]:
            j = comment
        if j == i:
            return i
        i = j


def brace_depth(text: str, end: int) -> int:
    depth = 0
    for m in _BRACE_SCAN.finditer(text, 0, end):
        t = m.group()
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
    return depth


class _Recovery:
    """What to report for one syntax error and how to change the text to go on."""

    def __init__(self, diag: Diagnostic, text: Optional[str], key: int):
        self.diag, self.text, self.key = diag, text, key


def _recover(exc: Exception, text: str, source: SourceFile) -> _Recovery:
    """Diagnose a syntax error and blank the culprit so the next parse gets further.

    * a token that starts a line, where the parser still wanted to finish the
      previous line (e.g. a missing ')'), blames the previous line: the error
      points just after its last token and that line is blanked;
    * an error on a computation header line inside an unclosed computation is a
      missing '}': a '}' is put in the whitespace before the header;
    * an error elsewhere in a computation header replaces the header by a
      neutral `_ {` so that its body still parses as a computation;
    * otherwise the line holding the error is blanked;
    * end of input and unterminated comments stop the recovery (text None).
    """
    if isinstance(exc, HloError):
        d = exc.diagnostics[0]
        off = d.loc.offset if d.loc else 0
        stop = d.message.startswith("unterminated /*") or d.message.startswith("unterminated '{'")
        return _Recovery(d, None if stop else _blank(text, *_line_bounds(text, off)), off)
    if isinstance(exc, SyntaxInCallback):
        off = max(exc.offset, 0)
        return _Recovery(Diagnostic(exc.message, source.loc(off)), _blank_statement_line(text, off), off)
    tok, row = exc.token, exc.expected
    if tok.type == "$END":
        off = _previous_token_end(text, len(text))
        msg = "unexpected end of input" + _expected_text(row)
        if "RBRACE" in row and brace_depth(text, len(text)) > 0:
            msg = "unexpected end of input: a '}' is missing"
        diag = Diagnostic(msg, source.loc(max(off - 1, 0)))
        multi_line = _MULTI_LINE_STRING.search(text)
        if multi_line:
            diag.notes.append(Diagnostic("this string runs over several lines; is a closing '\"' missing?",
                                         source.loc(multi_line.start()), "note"))
        return _Recovery(diag, None, len(text))
    off = tok.start_pos
    line_start, line_end = _line_bounds(text, off)
    first_on_line = not text[line_start:off].strip()
    line = text[line_start:line_end]
    if _HEADER_LINE.match(line) and brace_depth(text, line_start) > 0 and "RBRACE" in row:
        where = _previous_token_end(text, line_start)
        name = re.search(r"%?([A-Za-z_][A-Za-z0-9_.\-]*)\s*[({]", line.replace("ENTRY", "", 1))
        what = f"before computation '{name.group(1)}'" if name else "before this computation"
        diag = Diagnostic(f"missing '}}' {what}: the previous computation is not closed",
                          source.loc(max(where - 1, 0)))
        return _Recovery(diag, _close_before(text, line_start, line_end), off)
    if first_on_line and not (_STATEMENT_STARTS & set(row)) and line_start > 0:
        where = _previous_token_end(text, line_start)
        prev_start, prev_end = _line_bounds(text, max(where - 1, 0))
        msg = f"expected {_expected_phrase(row) or 'more input'} before {_describe_token(tok)}"
        return _Recovery(Diagnostic(msg, source.loc(where)),
                         _blank(text, prev_start, prev_end), off)
    msg = f"unexpected {_describe_token(tok)}{_expected_text(row)}"
    if tok.type == "ATTR_NAME" and "COMMA" in row:
        msg = f"expected ',' before {_describe_token(tok)}"
    elif tok.type == "ATTR_NAME" and ("EQUAL" in row or "NAME" in row):
        msg += f" (an instruction is written '{tok} = shape opcode(...)' with spaces around '=')"
    return _Recovery(Diagnostic(msg, source.loc(off)), _blank_statement_line(text, off), off)


def _close_before(text: str, line_start: int, line_end: int) -> Optional[str]:
    """The text with a '}' put before the computation header at line_start (same length)."""
    neutral = "} _ {"
    if line_end - line_start >= len(neutral):  # names don't matter once there are syntax errors
        return text[:line_start] + neutral.ljust(line_end - line_start) + text[line_end:]
    if line_start > 0:  # a very short header: the line break before it becomes the '}'
        return text[:line_start - 1] + "}" + text[line_start:]
    return None


def _blank_statement_line(text: str, off: int) -> str:
    """Blank the line at off; a computation header is replaced by a neutral `_ {` instead."""
    start, end = _line_bounds(text, off)
    line = text[start:end]
    if _HEADER_LINE.match(line) or (line.rstrip().endswith("{") and "=" not in line and "(" in line
                                    and "->" in line):
        entry = "ENTRY " if line.lstrip().startswith("ENTRY") else ""
        neutral = f"{entry}_ {{"
        if len(neutral) <= len(line):
            return text[:start] + neutral.ljust(len(line)) + text[end:]
    return _blank(text, start, end)


def parse_records(text: str, source: SourceFile, start: str = "start", raw_dict_values: bool = False,
                  max_errors: int = 50, fast_path: bool = True):
    """Records of the text, or raise HloError with every syntax error found."""
    result, diagnostics = parse_records_recovering(text, source, start, raw_dict_values, max_errors, fast_path)
    if diagnostics:
        raise HloError(diagnostics)
    return result


def parse_records_fast(text: str, source: SourceFile):
    """The records of the text read with the line fast path; None if that parse fails anywhere
    (or there are no ordinary instruction lines)."""
    load_grammar()
    runs = instruction_runs(text)
    if not runs:
        return None
    try:
        return drive(tokenize(text, False, source, runs), "start", len(text))
    except (VisitError, UnexpectedToken, HloError, SyntaxInCallback):
        return None  # the general path finds the same error and gives the grammar's diagnostics


def parse_records_recovering(text: str, source: SourceFile, start: str = "start", raw_dict_values: bool = False,
                             max_errors: int = 50, fast_path: bool = True):
    """(records, syntax diagnostics): the records of the text with every broken line blanked out
    (None when recovery had to stop, e.g. at an unexpected end of input).

    With `fast_path`, ordinary instruction lines are read by hlo/text/fastpath.py; a text whose
    fast parse fails anywhere is parsed again without it, so diagnostics are the grammar's."""
    load_grammar()  # installs the lexer's patterns
    if fast_path and start == "start" and not raw_dict_values:
        records = parse_records_fast(text, source)
        if records is not None:
            return records, []
    diagnostics: list[Diagnostic] = []
    work = text
    last_key = None
    extra_blanks = 0
    for _ in range(max_errors * 4):
        try:
            return drive(tokenize(work, raw_dict_values, source), start, len(work)), diagnostics
        except VisitError as exc:
            err = exc.orig_exc
        except (UnexpectedToken, HloError, SyntaxInCallback) as exc:
            err = exc
        rec = _recover(err, work, source)
        if rec.key == last_key and rec.text is not None:
            # Same token fails again: the culprit starts earlier (a multi-line statement).
            extra_blanks += 1
            if extra_blanks > 20:
                break
            start_line, _ = _line_bounds(work, _previous_token_end(work, _line_bounds(work, rec.key)[0]) - 1)
            prev_text = _blank(work, start_line, _line_bounds(work, start_line)[1])
            if prev_text == work:
                break
            work = prev_text
            continue
        extra_blanks = 0
        last_key = rec.key
        diagnostics.append(rec.diag)
        if rec.text is None or rec.text == work or len(diagnostics) >= max_errors:
            break
        work = rec.text
    return None, diagnostics
