"""HLO text <-> IR.

* parser.py    the entry points: parse_module, parse_module_with_recovery (and the records cache);
* lexer.py     the grammar's terminals as one regular expression, with XLA's context rules;
* grammar.py   grammar/hlo.lark compiled by Lark into an LALR(1) table, cached on disk;
* lalr.py      the driver loop running that table over the lexer's tokens;
* records.py   the rule callbacks: plain records, shapes, layouts and generic values;
* recovery.py  syntax errors: their messages, and the blanking that lets a parse go on;
* builder.py   records -> Module, with names resolved, attributes converted, shapes inferred;
* printer.py   IR -> canonical text;
* dot.py       Graphviz drawings of computations.
"""
