// The grammar against the repository: every scope it can give is asserted by some grammar test
// (tests/*.weft, run by vscode-tmgrammar-test), every example and stdlib file tokenizes without an
// `invalid` scope, and so does every snippet once its placeholders take their defaults; with a built
// `weft` (WEFT=path, or build/dev or build/release), the snippets and the grammar tests also parse.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { loadGrammar, tokens, defaultFiles, root } = require('./tokenize');

const extensionDir = path.join(__dirname, '..');
const grammarJson = JSON.parse(fs.readFileSync(path.join(extensionDir, 'syntaxes', 'weft.tmLanguage.json'), 'utf8'));
const grammarTests = fs.readdirSync(__dirname).filter((f) => f.endsWith('.weft')).sort().map((f) => path.join(__dirname, f));
const grammar = loadGrammar();

function invalidTokens(g, text) {
  return [...tokens(g, text)].filter((t) => t.scopes.some((s) => s.startsWith('invalid')));
}

function weftBinary() {
  const candidates = [process.env.WEFT, 'build/dev/compiler/driver/weft', 'build/release/compiler/driver/weft'];
  for (const candidate of candidates) {
    if (!candidate) continue;
    const file = path.resolve(root, candidate);
    if (fs.existsSync(file)) return file;
  }
  return null;
}

// A snippet body with every placeholder replaced by its default text (`${1:x}` -> `x`, `$1` -> the
// default of placeholder 1, `$0` -> '').
function expandSnippet(body) {
  const text = Array.isArray(body) ? body.join('\n') : body;
  const defaults = {};
  const strip = (s) => {
    let out = s;
    for (;;) {
      const next = out.replace(/\$\{(\d+):((?:[^${}]|\$(?!\{))*)\}/g, (_, n, d) => {
        defaults[n] ??= d;
        return d;
      });
      if (next === out) return out;
      out = next;
    }
  };
  return strip(text).replace(/\$(\d+)/g, (_, n) => defaults[n] ?? '');
}

test('every scope the grammar gives is asserted by a grammar test', () => {
  const names = new Set();
  (function walk(node, top) {
    if (Array.isArray(node)) return node.forEach((n) => walk(n, false));
    if (node && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === 'name' && typeof value === 'string') {
          if (!top) names.add(value);
        } else walk(value, false);
      }
    }
  })(grammarJson, true);
  const asserted = new Set();
  for (const file of grammarTests) {
    for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
      const m = line.match(/^--\s*(?:\^+|<~*-+)\s+(.*)$/);
      if (m) m[1].split(' - ')[0].split(/\s+/).forEach((s) => asserted.add(s));
    }
  }
  assert.ok(names.size > 40, `the grammar has ${names.size} scopes`);
  const missing = [...names].filter((n) => !asserted.has(n));
  assert.deepEqual(missing, [], 'scopes no test asserts');
});

test('every file in examples/ and stdlib/ tokenizes without an invalid scope', async () => {
  const g = await grammar;
  const files = defaultFiles();
  assert.ok(files.length >= 4, `found ${files.length} files`);
  for (const file of files) {
    const bad = invalidTokens(g, fs.readFileSync(file, 'utf8'));
    assert.deepEqual(bad.map((t) => `${t.line}:${t.column} ${t.text}`), [], path.relative(root, file));
  }
});

test('the grammar tests other than invalid.weft have no invalid token', async () => {
  const g = await grammar;
  for (const file of grammarTests.filter((f) => !f.endsWith('invalid.weft'))) {
    assert.deepEqual(invalidTokens(g, fs.readFileSync(file, 'utf8')), [], path.basename(file));
  }
});

const snippets = JSON.parse(fs.readFileSync(path.join(extensionDir, 'snippets', 'weft.json'), 'utf8'));

test('snippets def, kernel and pipeline exist, and every snippet expands to clean tokens', async () => {
  const g = await grammar;
  const prefixes = Object.values(snippets).map((s) => s.prefix);
  for (const prefix of ['def', 'kernel', 'pipeline']) assert.ok(prefixes.includes(prefix), prefix);
  for (const [name, snippet] of Object.entries(snippets)) {
    const text = expandSnippet(snippet.body);
    assert.doesNotMatch(text, /\$/, `${name} expands fully`);
    assert.deepEqual(invalidTokens(g, text), [], `${name}: ${text}`);
  }
});

const weft = weftBinary();

test('with a built weft: the grammar tests and the expanded snippets parse', { skip: weft ? false : 'no built weft (set WEFT=path)' }, () => {
  const parse = (source, label) => {
    try {
      execFileSync(weft, ['check', '--emit=ast', '-'], { input: source, stdio: ['pipe', 'ignore', 'pipe'] });
    } catch (error) {
      assert.fail(`${label} does not parse:\n${error.stderr}`);
    }
  };
  for (const file of grammarTests.filter((f) => !f.endsWith('invalid.weft'))) {
    parse(fs.readFileSync(file, 'utf8'), path.basename(file));
  }
  for (const [name, snippet] of Object.entries(snippets)) {
    const text = expandSnippet(snippet.body);
    // Expressions and bodies that are not declarations are parsed inside one.
    parse(/^(def|kernel|import)\b/.test(text) ? text : `def snippet x acc init n value condition a b k =\n  ${text.replace(/\n/g, '\n  ')}${/\bin\s*$/.test(text) ? ' x' : ''}`, `snippet ${name}`);
  }
});
