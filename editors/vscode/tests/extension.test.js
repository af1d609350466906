// The extension's manifest and its client wiring, outside VS Code: `vscode` and
// `vscode-languageclient/node` are replaced by recording fakes, so these tests check what the
// extension asks for (`weft lsp` over stdio, the `weft.path` setting, restarts), not VS Code itself.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const Module = require('module');

const extensionDir = path.join(__dirname, '..');
const manifest = JSON.parse(fs.readFileSync(path.join(extensionDir, 'package.json'), 'utf8'));

// --- fakes -------------------------------------------------------------------------------------

function makeFakes() {
  const fakes = {
    settings: {},
    clients: [],
    errors: [],
    commands: {},
    executed: [],
    configListeners: [],
    failStart: false,
  };
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, state: 1, stopped: false });
      fakes.clients.push(this);
    }
    async start() {
      if (fakes.failStart) throw new Error('spawn weft ENOENT');
      this.state = 2;
    }
    async stop() {
      this.stopped = true;
      this.state = 1;
    }
  }
  fakes.languageclient = { LanguageClient, State: { Stopped: 1, Running: 2, Starting: 3 } };
  fakes.vscode = {
    workspace: {
      getConfiguration: (section) => ({
        get: (key) => fakes.settings[`${section}.${key}`],
      }),
      createFileSystemWatcher: (glob) => ({ glob }),
      onDidChangeConfiguration: (listener) => {
        fakes.configListeners.push(listener);
        return { dispose() {} };
      },
    },
    window: {
      showErrorMessage: async (message, ...items) => {
        fakes.errors.push({ message, items });
        return fakes.errorChoice;
      },
    },
    commands: {
      registerCommand: (name, handler) => {
        fakes.commands[name] = handler;
        return { dispose() {} };
      },
      executeCommand: async (...args) => {
        fakes.executed.push(args);
      },
    },
  };
  return fakes;
}

// Loads a fresh copy of extension.js that sees the given fakes.
function loadExtension(fakes) {
  const originalLoad = Module._load;
  Module._load = function (request, parent, isMain) {
    if (request === 'vscode') return fakes.vscode;
    if (request === 'vscode-languageclient/node') return fakes.languageclient;
    return originalLoad.call(this, request, parent, isMain);
  };
  try {
    const file = require.resolve(path.join(extensionDir, manifest.main));
    delete require.cache[file];
    return require(file);
  } finally {
    Module._load = originalLoad;
  }
}

function changeConfiguration(fakes, changed) {
  for (const listener of fakes.configListeners) {
    listener({ affectsConfiguration: (section) => section === changed });
  }
}

// --- the manifest ------------------------------------------------------------------------------

test('the manifest contributes the weft language, grammar, snippets and settings', () => {
  const { contributes } = manifest;
  const language = contributes.languages.find((l) => l.id === 'weft');
  assert.deepEqual(language.extensions, ['.weft']);
  for (const file of [manifest.main, language.configuration, contributes.grammars[0].path, contributes.snippets[0].path]) {
    assert.ok(fs.existsSync(path.join(extensionDir, file)), `${file} exists`);
  }
  assert.equal(contributes.grammars[0].scopeName, 'source.weft');
  assert.equal(contributes.grammars[0].language, 'weft');
  assert.equal(contributes.snippets[0].language, 'weft');
  const settings = contributes.configuration.properties;
  assert.equal(settings['weft.path'].default, 'weft');
  assert.deepEqual(settings['weft.trace.server'].enum, ['off', 'messages', 'verbose']);
  assert.ok(manifest.activationEvents.includes('onLanguage:weft'));
  assert.ok(contributes.commands.some((c) => c.command === 'weft.restartServer'));
});

test('every npm dependency is pinned to one version, and the lock file agrees', () => {
  const lock = JSON.parse(fs.readFileSync(path.join(extensionDir, 'package-lock.json'), 'utf8'));
  for (const [name, version] of Object.entries({ ...manifest.dependencies, ...manifest.devDependencies })) {
    assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is pinned`);
    assert.equal(lock.packages[`node_modules/${name}`].version, version, `${name} in package-lock.json`);
  }
  assert.match(manifest.devDependencies['@vscode/vsce'], /^3\./, 'vsce 3.x (its Node engine matches Node 20)');
});

test('the language configuration toggles -- and {- -} comments', () => {
  const config = JSON.parse(fs.readFileSync(path.join(extensionDir, 'language-configuration.json'), 'utf8'));
  assert.equal(config.comments.lineComment, '--');
  assert.deepEqual(config.comments.blockComment, ['{-', '-}']);
  const increase = new RegExp(config.indentationRules.increaseIndentPattern);
  const decrease = new RegExp(config.indentationRules.decreaseIndentPattern);
  assert.ok(increase.test('def softmax (x: f32[n]) ='));
  assert.ok(increase.test('  let acc = pipeline kk < k / 64 with acc = zeros [128, 128] do'));
  assert.ok(increase.test('  x |> fn h ->'));
  assert.ok(!increase.test('  let e = exp x in'));
  assert.ok(!increase.test('    where m % 128 == 0, k >= 64'));
  assert.ok(decrease.test('  in'));
  assert.ok(!decrease.test('  index x'));
});

// --- the client --------------------------------------------------------------------------------

test('activation starts `weft lsp` over stdio for weft files', async () => {
  const fakes = makeFakes();
  await loadExtension(fakes).activate({ subscriptions: [] });
  assert.equal(fakes.clients.length, 1);
  const [client] = fakes.clients;
  assert.equal(client.id, 'weft');
  assert.equal(client.serverOptions.command, 'weft');
  assert.deepEqual(client.serverOptions.args, ['lsp']);
  assert.equal(client.serverOptions.transport, undefined, 'no transport: plain stdio, no --stdio argument');
  assert.deepEqual(
    client.clientOptions.documentSelector.map((s) => s.language),
    ['weft', 'weft'],
  );
  assert.equal(client.state, 2);
  assert.equal(fakes.errors.length, 0);
});

test('weft.path and weft.server.extraArgs choose the command line', async () => {
  const fakes = makeFakes();
  fakes.settings['weft.path'] = '/opt/weft/bin/weft';
  fakes.settings['weft.server.extraArgs'] = ['--log=/tmp/weft-lsp.log'];
  await loadExtension(fakes).activate({ subscriptions: [] });
  assert.equal(fakes.clients[0].serverOptions.command, '/opt/weft/bin/weft');
  assert.deepEqual(fakes.clients[0].serverOptions.args, ['lsp', '--log=/tmp/weft-lsp.log']);
});

test('changing weft.path restarts the server with the new executable', async () => {
  const fakes = makeFakes();
  const extension = loadExtension(fakes);
  await extension.activate({ subscriptions: [] });
  fakes.settings['weft.path'] = '/usr/local/bin/weft';
  changeConfiguration(fakes, 'weft.path');
  await fakes.commands['weft.restartServer'](); // waits for the restart queued before it
  assert.ok(fakes.clients[0].stopped, 'the old server stops');
  assert.equal(fakes.clients.at(-1).serverOptions.command, '/usr/local/bin/weft');
  assert.equal(fakes.clients.at(-1).state, 2);
  await extension.deactivate();
  assert.ok(fakes.clients.at(-1).stopped, 'deactivation stops the server');
});

test('a weft executable that cannot start is reported, with a way to the setting', async () => {
  const fakes = makeFakes();
  fakes.failStart = true;
  fakes.errorChoice = 'Open Settings';
  await loadExtension(fakes).activate({ subscriptions: [] });
  assert.equal(fakes.errors.length, 1);
  assert.match(fakes.errors[0].message, /weft lsp/);
  assert.match(fakes.errors[0].message, /weft\.path/);
  assert.deepEqual(fakes.executed, [['workbench.action.openSettings', 'weft.path']]);
});

test('weft.server.enabled = false: highlighting only, no server', async () => {
  const fakes = makeFakes();
  fakes.settings['weft.server.enabled'] = false;
  await loadExtension(fakes).activate({ subscriptions: [] });
  assert.equal(fakes.clients.length, 0);
});
