// The weft extension's client half: starts `weft lsp` (the language server) over stdio for weft
// files, and restarts it when its settings change. Plain JavaScript, loaded by VS Code as it is.
'use strict';
const vscode = require('vscode');
const { LanguageClient, State } = require('vscode-languageclient/node');

const CLIENT_ID = 'weft'; // also the prefix of the `weft.trace.server` setting
const CLIENT_NAME = 'Weft Language Server';

let client;
let starting = Promise.resolve();

// The server's command line: `weft lsp`, the executable from the `weft.path` setting. The transport
// is left unset on purpose: vscode-languageclient then speaks LSP over the process's stdin and
// stdout without adding a `--stdio` argument.
function serverOptions() {
  const config = vscode.workspace.getConfiguration('weft');
  const command = (config.get('path') || '').trim() || 'weft';
  const extraArgs = config.get('server.extraArgs') || [];
  return { command, args: ['lsp', ...extraArgs], options: { env: process.env } };
}

function clientOptions() {
  return {
    documentSelector: [
      { scheme: 'file', language: 'weft' },
      { scheme: 'untitled', language: 'weft' },
    ],
    synchronize: {
      // The server re-checks importers when an imported file changes on disk.
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.weft'),
    },
  };
}

async function start() {
  const config = vscode.workspace.getConfiguration('weft');
  if (config.get('server.enabled') === false) return;
  const server = serverOptions();
  client = new LanguageClient(CLIENT_ID, CLIENT_NAME, server, clientOptions());
  try {
    await client.start();
  } catch (error) {
    const failed = client;
    client = undefined;
    if (failed && failed.state !== State.Stopped) await failed.stop().catch(() => {});
    const choice = await vscode.window.showErrorMessage(
      `Weft: could not start the language server \`${server.command} lsp\` (${error && error.message ? error.message : error}). ` +
        'Set `weft.path` to the weft executable.',
      'Open Settings',
    );
    if (choice === 'Open Settings') {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'weft.path');
    }
  }
}

async function stop() {
  const running = client;
  client = undefined;
  if (running && running.state !== State.Stopped) await running.stop();
}

// Serializes restarts: a second one waits for the first.
function restart() {
  starting = starting.then(stop).then(start, start);
  return starting;
}

function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('weft.restartServer', restart),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (
        event.affectsConfiguration('weft.path') ||
        event.affectsConfiguration('weft.server.extraArgs') ||
        event.affectsConfiguration('weft.server.enabled')
      ) {
        restart();
      }
    }),
  );
  starting = start();
  return starting;
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate, serverOptions, clientOptions };
