// The packaged extension (VSIX=path/to/weft.vsix, as `make vsix` writes it): it holds the manifest,
// the grammar, the configuration and the snippets, and its extension.js loads with the
// vscode-languageclient packed beside it (only the `vscode` module itself is faked).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const Module = require('module');
const { execFileSync } = require('child_process');

const vsix = process.env.VSIX;

test('the .vsix holds the extension and its production dependencies', { skip: vsix ? false : 'VSIX not set' }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-vsix-'));
  try {
    execFileSync('python3', ['-m', 'zipfile', '-e', vsix, dir]);
    const ext = path.join(dir, 'extension');
    for (const file of ['package.json', 'extension.js', 'language-configuration.json', 'syntaxes/weft.tmLanguage.json', 'snippets/weft.json']) {
      assert.ok(fs.existsSync(path.join(ext, file)), `${file} is packed`);
    }
    assert.ok(!fs.existsSync(path.join(ext, 'tests')), 'tests are left out');
    assert.ok(!fs.existsSync(path.join(ext, 'node_modules', '@vscode', 'vsce')), 'dev dependencies are left out');
    const manifest = fs.readFileSync(path.join(dir, 'extension.vsixmanifest'), 'utf8');
    assert.match(manifest, /Id="weft"/);

    const fakeVscode = new Proxy({}, { get: (_, key) => (key === '__esModule' ? false : class {}) });
    const originalLoad = Module._load;
    Module._load = function (request, parent, isMain) {
      if (request === 'vscode') return fakeVscode;
      return originalLoad.call(this, request, parent, isMain);
    };
    try {
      const extension = require(path.join(ext, 'extension.js'));
      assert.equal(typeof extension.activate, 'function');
      const client = require(require.resolve('vscode-languageclient/node', { paths: [ext] }));
      assert.ok(require.resolve('vscode-languageclient/node', { paths: [ext] }).startsWith(ext), 'the packed copy');
      assert.equal(typeof client.LanguageClient, 'function');
    } finally {
      Module._load = originalLoad;
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
