"""Editor support for HLO text: a language server (`hlo-lsp`) and a comment-keeping formatter.

The features work on plain offsets into the document text so that they can be
used (and tested) without an editor:

* text.py        offset <-> (line, character) conversion, token extents, comments;
* index.py       the names of a document (computations, instructions, every use),
                 built from the lexer's tokens, tolerant of broken lines;
* analysis.py    parse with recovery + checker -> diagnostics; one cached analysis per text;
* incremental.py quick diagnostics after line edits, from the previous analysis;
* formatting.py  canonical formatting that keeps the user's comments (or says why not);
* features.py    hover, definition, references, rename, symbols, folding;
* completion.py  completion and signature help from the text around the cursor;
* operands.py    the operands each opcode expects (for signature help);
* server.py      the pygls server wiring these to the Language Server Protocol;
* client.py      a minimal LSP client over a subprocess (tests, benchmarks/lsp_bench.py).
"""
