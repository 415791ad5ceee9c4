"""Tools for chasing compiler bugs in HLO (see docs/DEBUGGING.md).

    diff.py        hlo-diff: match two modules by graph structure, report what changed
    diff_html.py   the side-by-side HTML page of a diff
    reduce.py      hlo-reduce: delta debugging of a module under an "interesting" predicate
    predicates.py  what hlo-reduce asks of a candidate (a command's exit status, a crash,
                   an error text, two backends disagreeing)
    backends.py    running a module on a backend in a separate worker process
    graph_page.py  hlo-opt --emit=html: one self-contained interactive page of the graph
    web/           the page's script and style, and the vendored layout library (dagre)
"""
