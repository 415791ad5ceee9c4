// The VS Code client of the HLO language server: starts `hlo-lsp` (over stdio) for .hlo files.
'use strict';
const vscode = require('vscode');
const { LanguageClient, TransportKind } = require('vscode-languageclient/node');

let client;

function serverOptions() {
  const config = vscode.workspace.getConfiguration('hlo');
  const command = config.get('server.path', 'hlo-lsp');
  const args = config.get('server.args', []);
  return { command, args, transport: TransportKind.stdio };
}

async function activate(context) {
  const clientOptions = {
    documentSelector: [{ scheme: 'file', language: 'hlo' }, { scheme: 'untitled', language: 'hlo' }],
    outputChannelName: 'HLO Language Server',
  };
  client = new LanguageClient('hlo', 'HLO Language Server', serverOptions(), clientOptions);
  context.subscriptions.push(vscode.commands.registerCommand('hlo.restartServer', () => client.restart()));
  try {
    await client.start();
  } catch (err) {
    vscode.window.showErrorMessage(
      `Could not start hlo-lsp (${err.message}). Install the toolchain (pip install -e .) or set "hlo.server.path".`);
  }
}

async function deactivate() {
  if (client) {
    await client.stop();
  }
}

module.exports = { activate, deactivate };
