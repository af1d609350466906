#!/usr/bin/env node
// Tokenizes weft files with the extension's TextMate grammar, as VS Code does (vscode-textmate and
// the Oniguruma regex engine), and fails if any token has an `invalid` scope.
//
//   node tests/tokenize.js FILE...          check FILEs (default: every .weft in examples/ and stdlib/)
//   node tests/tokenize.js --dump FILE...   print each token with its scopes
'use strict';
const fs = require('fs');
const path = require('path');
const vsctm = require('vscode-textmate');
const oniguruma = require('vscode-oniguruma');

const root = path.resolve(__dirname, '..', '..', '..');
const grammarPath = path.join(__dirname, '..', 'syntaxes', 'weft.tmLanguage.json');

async function loadGrammar() {
  const wasm = fs.readFileSync(require.resolve('vscode-oniguruma/release/onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (sources) => new oniguruma.OnigScanner(sources),
      createOnigString: (text) => new oniguruma.OnigString(text),
    }),
    loadGrammar: async (scopeName) =>
      scopeName === 'source.weft'
        ? vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath)
        : null,
  });
  return registry.loadGrammar('source.weft');
}

function* tokens(grammar, text) {
  let state = vsctm.INITIAL;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const result = grammar.tokenizeLine(lines[i], state);
    for (const token of result.tokens) {
      yield { line: i + 1, column: token.startIndex + 1, text: lines[i].slice(token.startIndex, token.endIndex), scopes: token.scopes };
    }
    state = result.ruleStack;
  }
}

function defaultFiles() {
  const files = [];
  for (const dir of ['examples', 'stdlib']) {
    for (const name of fs.readdirSync(path.join(root, dir)).sort()) {
      if (name.endsWith('.weft')) files.push(path.join(root, dir, name));
    }
  }
  return files;
}

async function main() {
  const args = process.argv.slice(2);
  const dump = args[0] === '--dump';
  if (dump) args.shift();
  const files = args.length ? args : defaultFiles();
  const grammar = await loadGrammar();
  let bad = 0;
  for (const file of files) {
    const shown = path.relative(process.cwd(), file) || file;
    for (const token of tokens(grammar, fs.readFileSync(file, 'utf8'))) {
      if (dump) {
        console.log(`${shown}:${token.line}:${token.column}\t${JSON.stringify(token.text)}\t${token.scopes.slice(1).join(' ')}`);
      } else if (token.scopes.some((scope) => scope.startsWith('invalid'))) {
        console.error(`${shown}:${token.line}:${token.column}: ${JSON.stringify(token.text)} is ${token.scopes.join(' ')}`);
        bad++;
      }
    }
  }
  if (!dump) {
    if (bad) {
      console.error(`tokenize: ${bad} invalid token(s) in ${files.length} file(s)`);
      process.exit(1);
    }
    console.log(`tokenize: ${files.length} file(s), no invalid token`);
  }
}

module.exports = { loadGrammar, tokens, defaultFiles, root };

if (require.main === module) {
  main().catch((error) => {
    console.error(error);
    process.exit(2);
  });
}
