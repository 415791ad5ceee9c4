// Tokenise .hlo files with the TextMate grammar, as VS Code does (vscode-textmate + vscode-oniguruma),
// and report every piece of text that no rule of the grammar matched (only the root scope).
//
//   node tokenize.js GRAMMAR FILE...          prints a JSON report; exit status 1 if text was unmatched
//   node tokenize.js --dump GRAMMAR FILE      prints every token of FILE with its scopes (JSON lines)
'use strict';
const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

async function loadRegistry(grammarPath) {
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve('vscode-oniguruma')), 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  return new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async () => vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath),
  });
}

function unmatchedPieces(grammar, text) {
  const pieces = [];
  let ruleStack = vsctm.INITIAL;
  const lines = text.split(/\r?\n/);
  lines.forEach((line, i) => {
    const result = grammar.tokenizeLine(line, ruleStack);
    for (const token of result.tokens) {
      const piece = line.substring(token.startIndex, token.endIndex);
      if (token.scopes.length === 1 && piece.trim() !== '') {
        pieces.push({ line: i + 1, column: token.startIndex + 1, text: piece });
      }
    }
    ruleStack = result.ruleStack;
  });
  return { lines: lines.length, pieces };
}

function dump(grammar, text) {
  let ruleStack = vsctm.INITIAL;
  text.split(/\r?\n/).forEach((line, i) => {
    const result = grammar.tokenizeLine(line, ruleStack);
    for (const token of result.tokens) {
      const piece = line.substring(token.startIndex, token.endIndex);
      process.stdout.write(JSON.stringify({ line: i + 1, text: piece, scopes: token.scopes }) + '\n');
    }
    ruleStack = result.ruleStack;
  });
}

async function main() {
  const args = process.argv.slice(2);
  const dumping = args[0] === '--dump';
  const [grammarPath, ...files] = dumping ? args.slice(1) : args;
  const registry = await loadRegistry(grammarPath);
  const grammar = await registry.loadGrammar('source.hlo');
  if (dumping) {
    dump(grammar, fs.readFileSync(files[0], 'utf8'));
    return;
  }
  const report = { files: {}, unmatched: 0 };
  for (const file of files) {
    const { lines, pieces } = unmatchedPieces(grammar, fs.readFileSync(file, 'utf8'));
    report.files[file] = { lines, unmatched: pieces.slice(0, 20) };
    report.unmatched += pieces.length;
  }
  process.stdout.write(JSON.stringify(report, null, 1) + '\n');
  process.exit(report.unmatched ? 1 : 0);
}

main().catch((err) => { console.error(err); process.exit(2); });
