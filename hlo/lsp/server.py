"""`hlo-lsp`: the HLO language server (Language Server Protocol over stdio, built on pygls).

Analyses (parse with recovery + checker + name index) run on one worker thread so
that the server keeps answering while a large file is analysed:

* didOpen analyses at once, didChange after a short quiet period (debounce,
  HLO_LSP_DEBOUNCE seconds, default 0.1): a burst of keystrokes costs one analysis;
* edits inside instruction lines are first diagnosed incrementally from the last
  full analysis (hlo.lsp.incremental, a few ms, on a second thread), then the full
  analysis follows and publishes again: it always has the last word;
* diagnostics are published only for the text they were computed from, so a slow
  analysis never overwrites the diagnostics of a newer text;
* requests that need names (hover, definition, references, rename, symbols,
  folding) use the analysis of the current text: a cached one (by content hash)
  or the one in flight, started at once if there is none; hover does not wait:
  outside the lines edited since the last full analysis it answers from that
  analysis, with positions moved along;
* completion and signature help read the text around the cursor and never wait
  for an analysis (names in scope come from the last name index, or from a scan
  of the text when there is none);
* after publishing, the name index of the new text is built ahead of need (given
  up when another edit arrives: it must not delay newer diagnostics);
* the cyclic garbage collector is off in the server (collections over the IR of a
  large file take a few hundred ms at random moments); garbage is collected on the
  worker when the user pauses for a second, or after a few analyses at the latest.

    hlo-lsp [--stdio] [--log-file FILE] [--log-level LEVEL]
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from . import completion, features
from .analysis import Analysis, Problem, analyse, cached_analysis, content_key
from .formatting import format_text
from .incremental import LineChanges, line_changes, quick_problems
from .text import UTF8, UTF16, UTF32, LineIndex
from ..text.fastpath import keep_last_text

VERSION = "0.1.0"
DEFAULT_DEBOUNCE_SECONDS = 0.1
IDLE_SECONDS_BEFORE_GC = 1.0
ANALYSES_BEFORE_GC = 6
REQUEST_FAILED = -32803   # LSP ErrorCodes.RequestFailed

log = logging.getLogger("hlo.lsp")

_SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
             "note": lsp.DiagnosticSeverity.Information}
_COMPLETION_KIND = {
    completion.OPCODE: lsp.CompletionItemKind.Function, completion.ATTRIBUTE: lsp.CompletionItemKind.Property,
    completion.COMPUTATION: lsp.CompletionItemKind.Module, completion.INSTRUCTION: lsp.CompletionItemKind.Variable,
    completion.TYPE: lsp.CompletionItemKind.TypeParameter, completion.VALUE: lsp.CompletionItemKind.EnumMember}


class HloLanguageServer(LanguageServer):
    def __init__(self, debounce_seconds: Optional[float] = None):
        super().__init__("hlo-lsp", VERSION)
        if debounce_seconds is None:
            debounce_seconds = float(os.environ.get("HLO_LSP_DEBOUNCE", DEFAULT_DEBOUNCE_SECONDS))
        self.debounce_seconds = debounce_seconds
        self.analyser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hlo-analysis")
        self.quick_analyser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hlo-quick")
        self._latest: dict[str, Analysis] = {}    # the last full analysis of each document
        self._indexed: dict[str, Analysis] = {}   # the last one whose name index is built
        self._scheduled: dict[str, asyncio.Task] = {}
        self._inflight: dict[tuple, asyncio.Future] = {}
        self._line_index: Optional[LineIndex] = None
        self._gc_timer: Optional[asyncio.TimerHandle] = None
        self._analyses_since_gc = 0
        keep_last_text(True)  # a text's lines, read by its analysis, are read again by its name index

    # ---- documents
    @property
    def encoding(self) -> str:
        chosen = str(self.workspace.position_encoding or "utf-16")
        return {"utf-8": UTF8, "utf-32": UTF32}.get(chosen, UTF16)

    def document(self, uri: str) -> tuple[str, str]:
        """(text, file name) of an open document."""
        doc = self.workspace.get_text_document(uri)
        return doc.source, to_fs_path(uri) or uri

    def lines_of(self, text: str) -> LineIndex:
        """Line index of a text without a full analysis (completion, signature help)."""
        cached = self._line_index
        if cached is None or cached.text is not text or cached.encoding != self.encoding:
            cached = self._line_index = LineIndex(text, self.encoding)
        return cached

    # ---- analyses
    async def analysis_of(self, text: str, filename: str, with_index: bool = True) -> Analysis:
        """The analysis of text: cached, in flight, or computed now on the worker thread."""
        found = cached_analysis(text, filename)
        if found is None:
            key = content_key(text, filename)
            future = self._inflight.get(key)
            if future is None:
                loop = asyncio.get_running_loop()
                future = loop.run_in_executor(self.analyser, _timed_analysis, text, filename)
                self._inflight[key] = future
                future.add_done_callback(lambda _f, k=key: self._inflight.pop(k, None))
                self._count_analysis()
            # shielded: a cancelled waiter (a superseded debounce) must not cancel the others
            found = await asyncio.shield(future)
        if with_index and not found.has_index:
            await asyncio.shield(asyncio.get_running_loop().run_in_executor(self.analyser, lambda: found.index))
        return found

    async def current_analysis(self, uri: str) -> Analysis:
        text, filename = self.document(uri)
        return await self.analysis_of(text, filename)

    def schedule_diagnostics(self, uri: str, delay: float) -> None:
        previous = self._scheduled.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self._scheduled[uri] = asyncio.get_running_loop().create_task(self._diagnose_later(uri, delay))

    async def _diagnose_later(self, uri: str, delay: float) -> None:
        scheduled_at = time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if uri not in self.workspace.text_documents:
            return
        text, filename = self.document(uri)
        base = self.base_of(uri)
        if base is not None and cached_analysis(text, filename) is None:
            problems = await asyncio.get_running_loop().run_in_executor(self.quick_analyser, quick_problems, base,
                                                                        text)
            if base.has_index and self._latest.get(uri) is base:
                self._indexed[uri] = base
            if problems is not None and self.is_current(uri, text):
                self.publish_problems(uri, self.lines_of(text), problems)
                log.info("published %d quick diagnostics for %s %.3f s after the change", len(problems), uri,
                         time.perf_counter() - scheduled_at)
        analysis = await self.analysis_of(text, filename, with_index=False)
        if not self.is_current(uri, text):
            return  # the text changed meanwhile: the newer analysis publishes
        self.publish_problems(uri, analysis.lines(self.encoding), analysis.problems)
        log.info("published %d diagnostics for %s %.3f s after the change", len(analysis.problems), uri,
                 time.perf_counter() - scheduled_at)
        if self._scheduled.get(uri) is asyncio.current_task():
            del self._scheduled[uri]
        self._latest[uri] = analysis  # the base of quick diagnostics and early hovers
        # The name index, ready for the next hover; given up if another edit comes first (quick diagnostics
        # and hovers then use the last analysis whose index is built).
        built = await asyncio.shield(asyncio.get_running_loop().run_in_executor(
            self.analyser, analysis.build_index_unless, lambda: self._newer_work_pending(uri)))
        if built and self._latest.get(uri) is analysis:
            self._indexed[uri] = analysis
        self._collect_garbage_when_idle()

    def _newer_work_pending(self, uri: str) -> bool:
        """Another edit is waiting, and the document has an earlier name index to fall back on."""
        return bool(self._scheduled) and uri in self._indexed

    def base_of(self, uri: str) -> Optional[Analysis]:
        """The newest full analysis if its name index is built, else the last one whose index is (the lines
        changed since are re-checked all the same), else the newest (its index is then built on demand)."""
        latest = self._latest.get(uri)
        if latest is not None and latest.has_index:
            return latest
        return self._indexed.get(uri, latest)

    def scope_names(self, uri: str, text: str) -> Optional[completion.ScopeNames]:
        """Names in scope from a name index (of this text, or of the last full analysis), for completion."""
        found = cached_analysis(text, self.document(uri)[1])
        if found is not None and found.has_index:
            return lambda start: features.names_in_scope(found, start)
        earlier = self.earlier_view(uri, text)
        if earlier is None:
            return None
        base, changes = earlier
        return lambda start: features.names_in_scope(base, changes.to_old(start, clamp=True))

    def earlier_view(self, uri: str, text: str) -> Optional[tuple[Analysis, LineChanges]]:
        """The last full analysis and the lines changed since, when the current text has none of its own."""
        base = self.base_of(uri)
        if base is None or not base.has_index:
            return None
        found = cached_analysis(text, self.document(uri)[1])
        if found is not None and found.has_index:
            return None
        changes = line_changes(base.text, text)
        return (base, changes) if changes is not None else None

    def is_current(self, uri: str, text: str) -> bool:
        return uri in self.workspace.text_documents and self.workspace.get_text_document(uri).source is text

    # ---- garbage collection (the collector is off while the server runs: see main)
    def _count_analysis(self) -> None:
        self._analyses_since_gc += 1
        if not gc.isenabled() and self._analyses_since_gc >= ANALYSES_BEFORE_GC:
            self._collect_now()

    def _collect_garbage_when_idle(self) -> None:
        if gc.isenabled():
            return
        if self._gc_timer is not None:
            self._gc_timer.cancel()
        self._gc_timer = asyncio.get_running_loop().call_later(IDLE_SECONDS_BEFORE_GC, self._collect_if_idle)

    def _collect_if_idle(self) -> None:
        self._gc_timer = None
        if self._scheduled or self._inflight:
            self._collect_garbage_when_idle()
        elif self._analyses_since_gc:
            self._collect_now()

    def _collect_now(self) -> None:
        self._analyses_since_gc = 0
        self.analyser.submit(gc.collect)

    def publish_problems(self, uri: str, lines: LineIndex, problems: list[Problem]) -> None:
        version = self.workspace.get_text_document(uri).version
        diagnostics = [self.diagnostic(uri, lines, p) for p in problems]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def diagnostic(self, uri: str, lines: LineIndex, problem: Problem) -> lsp.Diagnostic:
        related = [lsp.DiagnosticRelatedInformation(lsp.Location(uri, to_range(lines, r.start, r.end)), r.message)
                   for r in problem.related]
        return lsp.Diagnostic(range=to_range(lines, problem.start, problem.end), message=problem.message,
                              severity=_SEVERITY.get(problem.severity, lsp.DiagnosticSeverity.Error),
                              source=f"hlo {problem.source}", related_information=related or None)


def _timed_analysis(text: str, filename: str) -> Analysis:
    start = time.perf_counter()
    analysis = analyse(text, filename)
    log.info("analysed %s (%d characters) in %.3f s", filename, len(text), time.perf_counter() - start)
    return analysis


def to_range(lines: LineIndex, start: int, end: int) -> lsp.Range:
    return lsp.Range(lsp.Position(*lines.position(start)), lsp.Position(*lines.position(end)))


def _offset(analysis_or_lines, position: lsp.Position, encoding: str = UTF16) -> int:
    lines = analysis_or_lines if isinstance(analysis_or_lines, LineIndex) else analysis_or_lines.lines(encoding)
    return lines.offset(position.line, position.character)


# --------------------------------------------------------------------------- features

def create_server(debounce_seconds: Optional[float] = None) -> HloLanguageServer:
    server = HloLanguageServer(debounce_seconds)

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: HloLanguageServer, params):
        for task in ls._scheduled.values():
            task.cancel()
        ls._scheduled.clear()
        for executor in (ls.analyser, ls.quick_analyser):  # queued analyses would delay the exit
            executor.shutdown(wait=False, cancel_futures=True)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: HloLanguageServer, params: lsp.DidOpenTextDocumentParams):
        ls.schedule_diagnostics(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: HloLanguageServer, params: lsp.DidChangeTextDocumentParams):
        ls.schedule_diagnostics(params.text_document.uri, ls.debounce_seconds)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: HloLanguageServer, params: lsp.DidSaveTextDocumentParams):
        ls.schedule_diagnostics(params.text_document.uri, 0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: HloLanguageServer, params: lsp.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        task = ls._scheduled.pop(uri, None)
        if task is not None:
            task.cancel()
        ls._latest.pop(uri, None)
        ls._indexed.pop(uri, None)
        ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: HloLanguageServer, params: lsp.HoverParams):
        uri = params.text_document.uri
        text, _ = ls.document(uri)
        earlier = ls.earlier_view(uri, text)
        if earlier is not None:  # answer at once from the last full analysis, if the position is not edited
            base, changes = earlier
            old = changes.to_old(_offset(ls.lines_of(text), params.position))
            if old is not None:
                found = features.hover(base, old)
                if found is None:
                    return None
                return _hover(found.markdown, ls.lines_of(text), changes.to_new(found.start),
                              changes.to_new(found.end))
        analysis = await ls.current_analysis(uri)
        found = features.hover(analysis, _offset(analysis, params.position, ls.encoding))
        if found is None:
            return None
        return _hover(found.markdown, analysis.lines(ls.encoding), found.start, found.end)

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: HloLanguageServer, params: lsp.DefinitionParams):
        uri = params.text_document.uri
        analysis = await ls.current_analysis(uri)
        target = features.definition(analysis, _offset(analysis, params.position, ls.encoding))
        if target is None:
            return None
        return lsp.Location(uri, to_range(analysis.lines(ls.encoding), *target))

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    async def references(ls: HloLanguageServer, params: lsp.ReferenceParams):
        uri = params.text_document.uri
        analysis = await ls.current_analysis(uri)
        lines = analysis.lines(ls.encoding)
        found = features.references(analysis, _offset(lines, params.position),
                                    params.context.include_declaration)
        return [lsp.Location(uri, to_range(lines, s, e)) for s, e in found]

    @server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
    async def prepare_rename(ls: HloLanguageServer, params: lsp.PrepareRenameParams):
        analysis = await ls.current_analysis(params.text_document.uri)
        lines = analysis.lines(ls.encoding)
        found = features.prepare_rename(analysis, _offset(lines, params.position))
        if found is None:
            return None
        start, end, name = found
        return lsp.PrepareRenamePlaceholder(range=to_range(lines, start, end), placeholder=name)

    @server.feature(lsp.TEXT_DOCUMENT_RENAME, lsp.RenameOptions(prepare_provider=True))
    async def rename(ls: HloLanguageServer, params: lsp.RenameParams):
        uri = params.text_document.uri
        analysis = await ls.current_analysis(uri)
        lines = analysis.lines(ls.encoding)
        try:
            edits = features.rename(analysis, _offset(lines, params.position), params.new_name)
        except features.RenameError as exc:
            raise JsonRpcException(str(exc), code=REQUEST_FAILED) from None
        text_edits = [lsp.TextEdit(to_range(lines, s, e), new) for s, e, new in edits]
        return lsp.WorkspaceEdit(changes={uri: text_edits})

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(ls: HloLanguageServer, params: lsp.DocumentSymbolParams):
        analysis = await ls.current_analysis(params.text_document.uri)
        lines = analysis.lines(ls.encoding)
        return [_symbol(lines, s) for s in features.document_symbols(analysis)]

    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    async def folding_range(ls: HloLanguageServer, params: lsp.FoldingRangeParams):
        analysis = await ls.current_analysis(params.text_document.uri)
        kinds = {"region": lsp.FoldingRangeKind.Region, "comment": lsp.FoldingRangeKind.Comment}
        return [lsp.FoldingRange(start_line=f.start_line, end_line=f.end_line, kind=kinds[f.kind])
                for f in features.folding_ranges(analysis, ls.encoding)]

    @server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                    lsp.CompletionOptions(trigger_characters=["%", "=", ",", "(", " "]))
    def complete(ls: HloLanguageServer, params: lsp.CompletionParams):
        text, _ = ls.document(params.text_document.uri)
        lines = ls.lines_of(text)
        found = completion.complete(text, _offset(lines, params.position),
                                    ls.scope_names(params.text_document.uri, text))
        items = [lsp.CompletionItem(label=c.label, kind=_COMPLETION_KIND[c.kind], detail=c.detail or None,
                                    sort_text=c.sort_text,
                                    text_edit=lsp.TextEdit(to_range(lines, c.replace_start, c.replace_end),
                                                           c.insert_text))
                 for c in found.items]
        return lsp.CompletionList(is_incomplete=found.incomplete, items=items)

    @server.feature(lsp.TEXT_DOCUMENT_SIGNATURE_HELP, lsp.SignatureHelpOptions(trigger_characters=["(", ","]))
    def signature_help(ls: HloLanguageServer, params: lsp.SignatureHelpParams):
        text, _ = ls.document(params.text_document.uri)
        found = completion.signature_help(text, _offset(ls.lines_of(text), params.position))
        if found is None:
            return None
        parameters = [lsp.ParameterInformation(label=(s, e), documentation=doc) for s, e, doc in found.parameters]
        signature = lsp.SignatureInformation(label=found.label, documentation=found.documentation,
                                             parameters=parameters, active_parameter=found.active_parameter)
        return lsp.SignatureHelp(signatures=[signature], active_signature=0,
                                 active_parameter=found.active_parameter)

    @server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
    async def formatting(ls: HloLanguageServer, params: lsp.DocumentFormattingParams):
        text, filename = ls.document(params.text_document.uri)
        result = await asyncio.get_running_loop().run_in_executor(ls.analyser, format_text, text, filename)
        if result.text is None:
            where = os.path.basename(filename)
            if result.offset >= 0 and not result.errors:
                where += f" line {text.count(chr(10), 0, result.offset) + 1}"
            ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning,
                                                         message=f"hlo: not formatting {where}: {result.reason}"))
            return []
        if result.text == text:
            return []
        lines = ls.lines_of(text)
        return [lsp.TextEdit(to_range(lines, 0, len(text)), result.text)]

    return server


def _hover(markdown: str, lines: LineIndex, start: int, end: int) -> lsp.Hover:
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown),
                     range=to_range(lines, start, end))


def _symbol(lines: LineIndex, symbol: features.Symbol) -> lsp.DocumentSymbol:
    kind = lsp.SymbolKind.Function if symbol.kind == "computation" else lsp.SymbolKind.Variable
    return lsp.DocumentSymbol(name=symbol.name, detail=symbol.detail, kind=kind,
                              range=to_range(lines, symbol.start, symbol.end),
                              selection_range=to_range(lines, symbol.name_start, symbol.name_end),
                              children=[_symbol(lines, c) for c in symbol.children] or None)


# --------------------------------------------------------------------------- entry point

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="hlo-lsp", description="The HLO language server (LSP over stdio).")
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default)")
    parser.add_argument("--log-file", help="write the server's log here (default: standard error)")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--version", action="version", version=f"hlo-lsp {VERSION}")
    args = parser.parse_args(argv)
    handler = logging.FileHandler(args.log_file) if args.log_file else logging.StreamHandler(sys.stderr)
    logging.basicConfig(level=args.log_level, handlers=[handler],
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.log_level != "DEBUG":  # pygls logs every message (whole documents) at INFO
        logging.getLogger("pygls").setLevel(logging.WARNING)
    gc.disable()  # collected explicitly when idle (see HloLanguageServer)
    server = create_server()
    # Build the parser's tables before the first document arrives.
    server.analyser.submit(analyse, "HloModule warm_up\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n", "<warm-up>")
    server.start_io()
    return 0


if __name__ == "__main__":
    sys.exit(main())
