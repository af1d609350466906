#!/usr/bin/env python3
"""A scripted editor session against `weft lsp` (docs/lsp.md): it opens documents, edits them, and
checks every answer: published diagnostics (ids, ranges, notes as related information), hovers
(`name : type` with symbolic shapes), definitions, document symbols and completions, positions in
UTF-16 around non-ASCII text, and the protocol's framing and errors.

Usage: lsp_test.py WEFT   (ctest runs it as the test `lsp`; `make test` runs ctest)
Exit status 0 when every check passes; each failure is printed with what came back.
"""
import os
import random
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from client import Client, LspError, position_of, utf16_length  # noqa: E402

STDLIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "stdlib")

GOOD = """\
-- Types with symbolic shapes: é ü 😀 in a comment, before the code.
import nn
import "lib.weft"

def scale (x: 'f[..s, n]) (w: 'f[n]) = x * w + 1.0

def mix (a: f32[b, k]) (m: f32[k, n]) (bias: f32[n]) =
  let h = a @ m in
  let g = scale h bias in
  g - expand (max g)

def probs (x: f32[b, 8]) = {- é😀 -} softmax x

def twice (x: f32[n]) =
  let x = x + x in
  let f = fn y -> y * 2.0 in
  f x + double x

def later = 1
"""

LIB = """\
-- A module imported by path.
def double (v: f32[n]) = v + v
"""

# Layouts in hovers (docs/lsp.md): a view over a parameter, and its known layout in main.
VIEWS = """\
def flip (x: f32[n, m]) = transpose x
def main =
  let t = flip (random [4, 6] 1 : f32[4, 6]) in
  print t
"""

TILES = """\
kernel double (x: f32[n, 64]) (out y: f32[n, 64]) where n % 64 == 0 grid n / 64 threads 128 =
  let i = block_idx in
  let s = shared (tile x [64, 64] (i, 0)) in
  let r = regs s in
  store (tile y [64, 64] (i, 0)) (r + r)
"""

INCREMENTAL = """\
def base (x: f32[n]) = x * 2.0

def user (y: f32[4]) = base y + y

def other (z: f32[3]) = z + z

def far (w: f32[2]) = w * w
"""

SHAPE_ERROR = """\
-- language.md's rejected example: the inner dimensions of `@` are 4 and 5.
def bad (x: f32[n, 4]) (y: f32[5, m]) = x @ y

def fine (z: f32[3]) = z * 2.0
"""

# A kernel the tile tier refuses (E0501, as plain `weft check` reports it), beside a `def`.
KERNEL_TIER = """\
kernel copy (x: f32[n, 64]) (out y: f32[n, 64]) where n % 64 == 0 grid n / 64 threads 128 =
  let i = block_idx in
  let g = tile x [64, 64] (i, 0) in
  store (tile y [64, 64] (i, 0)) (regs g)

def twice (v: f32[4]) = v + v
"""

SIZES = """\
def chunks (x: f32[n, 4]) (w: f32[4, m]) : f32[n / 4, 4, m] where n % 4 == 0 =
  reshape [n / 4, 4, m] (x @ w)

def explicit [k] (x: f32[k]) (y: f32[k]) = x + y

def spread (x: 'f[..s, d]) (v: 'f[d]) = x * v
"""


RANDOM_EDITS = 12

# Blocks of definitions that name each other, as in bench/check/generate.py.
BLOCK = """\
-- block {i}
def scale{i} (x: 'f[..s, n]) (w: 'f[n]) = x * w + 1.0
def mix{i} (a: f32[b, k]) (m: f32[k, n]) (bias: f32[n]) =
  let h = a @ m in
  let g = scale{i} h bias in
  g - expand (max g)
def step{i} (x: f32[b, 64]) (m: f32[64, 64]) (v: f32[64]) =
  mix{i} x m v |> fn y -> y + scale{prev} y v
"""


def generated_program(lines):
    out, i = "", 0
    while out.count("\n") < lines:
        out += BLOCK.format(i=i, prev=max(i - 1, 0))
        i += 1
    return out


def mutate(text, rng):
    """One random edit: a name swapped for another, a line dropped or repeated, an operand made a
    bool, a literal changed, or a previous edit's kind again elsewhere."""
    lines = text.split("\n")
    kind = rng.randrange(5)
    i = rng.randrange(len(lines))
    if kind == 0:
        names = re.findall(r"[a-z][a-z0-9]*", text)
        words = re.findall(r"[a-z][a-z0-9]*", lines[i])
        if words:
            lines[i] = lines[i].replace(rng.choice(words), rng.choice(names), 1)
    elif kind == 1:
        del lines[i]
    elif kind == 2:
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif kind == 3:
        lines[i] = lines[i].replace(" + ", " + true + ", 1)
    else:
        lines[i] = lines[i].replace("1.0", "2", 1).replace("64", "32", 1)
    return "\n".join(lines)


def strip(diagnostics):
    """What must agree between two checks: places, ids, messages, related messages."""
    return sorted((d["range"]["start"]["line"], d["range"]["start"]["character"], d.get("code"), d["message"],
                   tuple(r["message"] for r in d.get("relatedInformation", []))) for d in diagnostics)


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def __call__(self, name, condition, got=None):
        if condition:
            self.passed += 1
        else:
            self.failed.append(name)
            print("FAIL: %s\n  got: %r" % (name, got))


def hover_text(result):
    """The code line of a hover: `name : type`."""
    if not result:
        return None
    match = re.match(r"```weft\n(.*?)\n```", result["contents"]["value"], re.S)
    return match.group(1) if match else result["contents"]["value"]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: lsp_test.py WEFT")
    weft = sys.argv[1]
    check = Checks()
    work = tempfile.mkdtemp(prefix="weft-lsp-test-")
    env = dict(os.environ, WEFT_STDLIB=STDLIB, NO_COLOR="1")
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    with open(os.path.join(work, "lib.weft"), "w") as f:
        f.write(LIB)
    # A space and a non-ASCII letter in the path: URIs are percent-encoded.
    folder = os.path.join(work, "my docs é")
    os.mkdir(folder)
    with open(os.path.join(folder, "lib.weft"), "w") as f:
        f.write(LIB)
    good_path = os.path.join(folder, "good.weft")
    good = "file://" + "/".join(
        "".join(c if c.isalnum() or c in "-._~" else "".join("%%%02X" % b for b in c.encode()) for c in part)
        for part in good_path.split("/"))
    client = Client([weft, "lsp"], env=env)

    # ---- initialize ----
    init = client.initialize()
    caps = init.get("capabilities", {})
    check("initialize: full text sync", caps.get("textDocumentSync", {}).get("change") == 1, caps)
    check("initialize: hover, definition, symbols, completion",
          caps.get("hoverProvider") and caps.get("definitionProvider") and caps.get("documentSymbolProvider")
          and "completionProvider" in caps, caps)
    check("initialize: UTF-16 positions", caps.get("positionEncoding") == "utf-16", caps)

    # ---- a good file ----
    client.open(good, GOOD)
    diagnostics = client.diagnostics(good, version=1)
    check("good file: no diagnostics", diagnostics == [], diagnostics)

    def hover(uri, text, needle, occurrence=0, delta=0):
        return client.at("textDocument/hover", uri, position_of(text, needle, occurrence, delta))

    result = hover(good, GOOD, "a @ m")
    check("hover: a parameter at its use, with its symbolic shape", hover_text(result) == "a : f32[b, k]", result)
    check("hover: the range is the name",
          result and result["range"] == {"start": position_of(GOOD, "a @ m"), "end": position_of(GOOD, "a @ m", 0, 1)},
          result)
    result = hover(good, GOOD, "@ m")
    check("hover: an operator, at its instance", hover_text(result) == "@ : f32[b, k] -> f32[k, n] -> f32[b, n]",
          result)
    result = hover(good, GOOD, "let g", delta=4)
    check("hover: a let binder", hover_text(result) == "g : f32[b, n]", result)
    result = hover(good, GOOD, "scale h")
    check("hover: a polymorphic global at this use", hover_text(result) == "scale : f32[b, n] -> f32[n] -> f32[b, n]",
          result)
    check("hover: ... and its general type",
          result and "defined as `scale : 'a[..s, n] -> 'a[n] -> 'a[..s, n] where 'a : float`" in
          result["contents"]["value"], result)
    result = hover(good, GOOD, "expand (max")
    check("hover: a built-in at its instance", hover_text(result) == "expand : f32[b] -> f32[b, 1]", result)
    result = hover(good, GOOD, "(max g)")
    check("hover: an expression (its parenthesis)", hover_text(result) == "expand (max g) : f32[b, 1]", result)
    result = hover(good, GOOD, "1.0")
    check("hover: a literal, at its polymorphic type", hover_text(result) == "1.0 : 'a[] where 'a : float", result)
    result = hover(good, GOOD, "mix")
    check("hover: a definition's name shows its signature",
          hover_text(result) == "mix : f32[b, k] -> f32[k, n] -> f32[n] -> f32[b, n]", result)
    result = hover(good, GOOD, "é ü")
    check("hover: nothing in a comment", result is None, result)
    # After `{- é😀 -}` on the same line: the character offset counts 😀 as two UTF-16 units.
    position = position_of(GOOD, "softmax x", 0, 8)
    line = GOOD.splitlines()[position["line"]]
    check("positions: the test line has a character outside the BMP",
          utf16_length(line) == len(line) + 1 and position["character"] == line.index("softmax x") + 9, position)
    result = client.at("textDocument/hover", good, position)
    check("hover: after a non-ASCII comment, in UTF-16 units", hover_text(result) == "x : f32[b, 8]", result)
    check("hover: ... and its range in UTF-16 units", result and result["range"]["start"] == position, result)
    result = hover(good, GOOD, "softmax x")
    check("hover: an imported definition", hover_text(result) == "softmax : f32[b, 8] -> f32[b, 8]", result)
    result = hover(good, GOOD, "f x")
    check("hover: a local function", hover_text(result) == "f : f32[n] -> f32[n]", result)
    result = hover(good, GOOD, "y * 2.0")
    check("hover: a lambda's parameter (the let of a function is generalized)",
          hover_text(result) == "y : 'a[..s1] where 'a : float", result)

    # ---- go to definition ----
    def definition(needle, occurrence=0, delta=0):
        return client.at("textDocument/definition", good, position_of(GOOD, needle, occurrence, delta))

    result = definition("h bias")
    check("definition: a let-bound local", result == {"uri": good, "range": {
        "start": position_of(GOOD, "h = a"), "end": position_of(GOOD, "h = a", 0, 1)}}, result)
    result = definition("f x + double")
    check("definition: f, bound to a lambda", result and result["range"]["start"] == position_of(GOOD, "f = fn"),
          result)
    result = definition("x + double")
    check("definition: a shadowing let, not the parameter",
          result and result["range"]["start"] == position_of(GOOD, "x = x + x"), result)
    result = definition("x + x", 0, 0)
    check("definition: the shadowed parameter inside the let's value",
          result and result["range"]["start"] == position_of(GOOD, "x: f32[n]) =", 0), result)
    result = definition("scale h")
    check("definition: a global, at its name",
          result == {"uri": good, "range": {"start": position_of(GOOD, "scale ("),
                                            "end": position_of(GOOD, "scale (", 0, 5)}}, result)
    result = definition("softmax x")
    nn_text = open(os.path.join(STDLIB, "nn.weft")).read()
    check("definition: into the stdlib (import nn)",
          result and result["uri"].endswith("/stdlib/nn.weft") and
          result["range"]["start"] == position_of(nn_text, "softmax (x"), result)
    result = definition("double x")
    check("definition: into a file imported by path, whose folder has a space and an é",
          result and result["uri"].endswith("/my%20docs%20%C3%A9/lib.weft") and
          result["range"]["start"] == position_of(LIB, "double ("), result)
    result = definition('"lib.weft"')
    check("definition: an import goes to its file", result and result["uri"].endswith("/lib.weft"), result)

    # ---- document symbols ----
    symbols = client.request("textDocument/documentSymbol", {"textDocument": {"uri": good}})
    by_name = {s["name"]: s for s in symbols}
    check("symbols: every definition and import, in order",
          [s["name"] for s in symbols] == ["nn", "lib.weft", "scale", "mix", "probs", "twice", "later"], symbols)
    check("symbols: a definition's type as its detail",
          by_name.get("scale", {}).get("detail") == "'a[..s, n] -> 'a[n] -> 'a[..s, n] where 'a : float", symbols)
    check("symbols: functions and values",
          by_name.get("mix", {}).get("kind") == 12 and by_name.get("later", {}).get("kind") == 13, symbols)
    check("symbols: the selection is the name",
          by_name.get("mix", {}).get("selectionRange", {}).get("start") == position_of(GOOD, "mix ("), symbols)

    # ---- completion ----
    result = client.at("textDocument/completion", good, position_of(GOOD, "g - expand"))
    items = {i["label"]: i for i in result["items"]}
    check("completion: locals with their types",
          items.get("g", {}).get("detail") == "f32[b, n]" and items.get("bias", {}).get("detail") == "f32[n]", result)
    check("completion: definitions above, imported ones, built-ins, keywords",
          "scale" in items and "softmax" in items and "double" in items and "reshape" in items and
          items.get("let", {}).get("kind") == 14 and "f32" in items, sorted(items))
    check("completion: not the definitions below, nor locals out of scope",
          "later" not in items and "probs" not in items and "y" not in items, sorted(items))

    # Kernel operations are offered in a kernel's body only; built-ins come from the checker's table.
    kernel_uri = "file://" + os.path.join(work, "kernel.weft")
    kernel_text = open(os.path.join(os.path.dirname(STDLIB), "examples", "gemm_kernel.weft")).read()
    client.open(kernel_uri, kernel_text)
    client.diagnostics(kernel_uri)
    result = client.at("textDocument/completion", kernel_uri, position_of(kernel_text, "mma (regs"))
    items = {i["label"]: i for i in result["items"]}
    check("completion: in a kernel's body, its operations",
          all(items.get(op, {}).get("detail") == "kernel operation" for op in ("block_idx", "tile", "mma", "store")) and
          "exp" in items, sorted(items))
    result = client.at("textDocument/completion", kernel_uri, position_of(kernel_text, "random [256, 256] 1"))
    items = {i["label"]: i for i in result["items"]}
    check("completion: not in a `def`", "mma" not in items and "block_idx" not in items and "random" in items,
          sorted(items))

    # ---- size and shape names in types ----
    sizes_uri = "file://" + os.path.join(work, "sizes.weft")
    client.open(sizes_uri, SIZES)
    diagnostics = client.diagnostics(sizes_uri)
    check("sizes: the file checks", diagnostics == [], diagnostics)

    def size_hover(needle, occurrence=0):
        result = hover(sizes_uri, SIZES, needle, occurrence)
        return hover_text(result), result["contents"]["value"] if result else ""

    text, full = size_hover("n, 4]")
    check("size hover: a size in a parameter's type is `n : size`", text == "n : size", full)
    check("size hover: ... bound by the first parameter that names it",
          "bound by the parameter `(x: f32[n, 4])` (line 1)" in full, full)
    check("size hover: ... the other places that name it",
          "also in the result type `f32[n / 4, 4, m]` (line 1)" in full, full)
    check("size hover: ... and its `where` conditions", "constrained by `where n % 4 == 0`" in full, full)
    result = hover(sizes_uri, SIZES, "n, 4]")
    check("size hover: the range is the name",
          result and result["range"] == {"start": position_of(SIZES, "n, 4]"), "end": position_of(SIZES, "n, 4]", 0, 1)},
          result)
    text, full = size_hover("n % 4")
    check("size hover: in a `where` condition", text == "n : size" and "bound by the parameter" in full, full)
    text, full = size_hover("n / 4, 4, m] (")
    check("size hover: a size used as a value in the body", text == "n : size" and "bound by the parameter" in full,
          full)
    text, full = size_hover("m]) :")
    check("size hover: a size with no `where`", text == "m : size" and "constrained" not in full, full)
    text, full = size_hover("k]) (y")
    check("size hover: an explicit size binder binds it",
          text == "k : size" and "bound by `[k]` after the definition's name (line 4)" in full and
          "also in the parameter `(y: f32[k])`" in full, full)
    text, full = size_hover("s, d]")
    check("size hover: a shape name", text == "..s : shape" and "bound by the parameter `(x: 'f[..s, d])`" in full,
          full)
    text, full = size_hover("d]) =")
    check("size hover: bound by an earlier parameter", text == "d : size" and "`(x: 'f[..s, d])`" in full, full)
    text, _ = size_hover("x @ w")
    check("size hover: a parameter is still `name : type`", text == "x : f32[n, 4]", text)
    result = client.at("textDocument/definition", sizes_uri, position_of(SIZES, "n / 4, 4, m] where"))
    check("size definition: from the result type to where the size is bound",
          result and result["range"]["start"] == position_of(SIZES, "n, 4]"), result)
    result = client.at("textDocument/definition", sizes_uri, position_of(SIZES, "k]) =", 0))
    check("size definition: an explicit binder",
          result and result["range"]["start"] == position_of(SIZES, "k] (x"), result)

    # ---- edits: an error, hovers in the broken definition, the fix ----
    broken = GOOD.replace("g - expand (max g)", "g - expand (max g) + a")
    client.change(good, broken, 2)
    diagnostics = client.diagnostics(good, version=2)
    check("edit: the new error is published for version 2",
          len(diagnostics) == 1 and diagnostics[0].get("code", "").startswith("E02") and
          diagnostics[0]["range"]["start"]["line"] == position_of(broken, "+ a")["line"], diagnostics)
    result = hover(good, broken, "h bias")
    check("edit: a broken definition still has hovers (its last good analysis)",
          hover_text(result) == "h : f32[b, n]", result)
    result = hover(good, broken, "scale h")
    check("edit: ... and go to definition still works there",
          client.at("textDocument/definition", good, position_of(broken, "scale h"))["range"]["start"] ==
          position_of(broken, "scale ("), result)
    result = client.at("textDocument/completion", good, position_of(broken, "+ a", 0, 3))
    labels = [i["label"] for i in result["items"]]
    check("edit: completion in the broken definition offers its locals", "h" in labels and "g" in labels, labels)
    result = hover(good, broken, "x * w")
    check("edit: other definitions are unaffected", hover_text(result) == "x : 'a[..s, n] where 'a : float", result)

    # An edit inside a comment keeps the tokens: no new check, but the diagnostics move down a line.
    commented = broken.replace("-- Types with", "-- A new line\n-- Types with")
    client.change(good, commented, 3)
    diagnostics = client.diagnostics(good, version=3)
    check("edit in a comment: the diagnostic moves with its line",
          len(diagnostics) == 1 and diagnostics[0]["range"]["start"]["line"] == position_of(commented, "+ a")["line"],
          diagnostics)
    result = hover(good, commented, "a @ m")
    check("edit in a comment: hovers follow", hover_text(result) == "a : f32[b, k]", result)

    # Several edits in a burst: answers reflect the last one.
    client.change(good, commented.replace("+ a", "+ b"), 4)
    client.change(good, GOOD, 5)
    result = hover(good, GOOD, "g - expand")
    check("a burst of edits: the request sees the last text", hover_text(result) == "g : f32[b, n]", result)
    diagnostics = client.diagnostics(good, version=5)
    check("a burst of edits: the fix clears the diagnostics", diagnostics == [], diagnostics)

    # A syntax error: only it is reported; the definitions that parse still have hovers.
    unparsed = GOOD.replace("let h = a @ m in", "let h = a @ in")
    client.change(good, unparsed, 6)
    diagnostics = client.diagnostics(good, version=6)
    check("syntax error: reported with its id (E01xx)",
          len(diagnostics) >= 1 and diagnostics[0].get("code", "").startswith("E01"), diagnostics)
    result = hover(good, unparsed, "f x")
    check("syntax error: another definition still has hovers", hover_text(result) == "f : f32[n] -> f32[n]", result)
    result = hover(good, unparsed, "g - expand")
    check("syntax error: the definition that does not parse is read where it last checked",
          hover_text(result) == "g : f32[b, n]", result)
    client.change(good, GOOD, 7)
    check("syntax error fixed: no diagnostics", client.diagnostics(good, version=7) == [])

    # ---- incremental checking: only what an edit affects is checked again ----
    inc_uri = "file://" + os.path.join(work, "incremental.weft")
    inc = INCREMENTAL
    client.open(inc_uri, inc)
    check("incremental: the file checks", client.diagnostics(inc_uri, version=1) == [])
    # `base` changes type: `user`, whose text is unchanged, breaks (it names `base`).
    inc = inc.replace("= x * 2.0", "= concat x x")
    client.change(inc_uri, inc, 2)
    diagnostics = client.diagnostics(inc_uri, version=2)
    check("incremental: a definition that names a changed one is checked again",
          len(diagnostics) == 1 and diagnostics[0]["range"]["start"]["line"] == position_of(inc, "def user")["line"],
          diagnostics)
    # An edit far below: `user`'s error stays (kept from the analysis that found it), `far`'s is new.
    inc = inc.replace("w * w", "w * true")
    client.change(inc_uri, inc, 3)
    diagnostics = client.diagnostics(inc_uri, version=3)
    lines = sorted(d["range"]["start"]["line"] for d in diagnostics)
    check("incremental: errors of definitions not checked again are kept, in place",
          lines == [position_of(inc, "def user")["line"], position_of(inc, "def far")["line"]], diagnostics)
    result = hover(inc_uri, inc, "z + z")
    check("incremental: a definition between two edits keeps its hovers", hover_text(result) == "z : f32[3]", result)
    # The same text checked whole, in a second document, gives the same diagnostics.
    whole_uri = "file://" + os.path.join(work, "incremental_whole.weft")
    client.open(whole_uri, inc)
    whole = client.diagnostics(whole_uri)
    check("incremental: the diagnostics are those of a check of the whole file", strip(whole) == strip(diagnostics),
          (whole, diagnostics))
    # An unknown name: "did you mean" names a definition that the edited one did not name before.
    inc = inc.replace("z + z", "z + basr")
    client.change(inc_uri, inc, 4)
    diagnostics = client.diagnostics(inc_uri, version=4)
    check("incremental: an unknown name's suggestion is a check of the whole file's",
          any("unknown name `basr`; did you mean `base`?" == d["message"] for d in diagnostics), diagnostics)
    # A name defined below: E0201, as a check of the whole file says.
    inc = inc.replace("base y + y", "base y + far")
    client.change(inc_uri, inc, 5)
    diagnostics = client.diagnostics(inc_uri, version=5)
    check("incremental: a definition used above its own is E0201",
          any(d.get("code") == "E0201" for d in diagnostics), diagnostics)
    client.change(whole_uri, inc, 2)
    whole = client.diagnostics(whole_uri, version=2)
    check("incremental: ... the same diagnostics as a whole check, again", strip(whole) == strip(diagnostics),
          (whole, diagnostics))

    # A definition moved below another: it is not checked again, and keeps its hovers where it went.
    moved = inc.replace("def other (z: f32[3]) = z + basr\n\n", "") + "\ndef other (z: f32[3]) = z + basr\n"
    client.change(inc_uri, moved, 6)
    diagnostics = client.diagnostics(inc_uri, version=6)
    client.change(whole_uri, moved, 3)
    check("incremental: a moved definition's diagnostics move with it",
          strip(diagnostics) == strip(client.diagnostics(whole_uri, version=3)), diagnostics)
    result = hover(inc_uri, moved, "z + basr")
    check("incremental: ... and its hovers", hover_text(result) == "z : f32[3]", result)

    # Random edits of a generated program (bench/check/generate.py), each compared with a check of
    # the whole text in a fresh document: incremental checking reports exactly what a whole check does.
    program = generated_program(40)
    random_uri = "file://" + os.path.join(work, "random_edits.weft")
    client.open(random_uri, program)
    client.diagnostics(random_uri, version=1)
    rng = random.Random(7)
    mismatches = []
    for step in range(2, 2 + RANDOM_EDITS):
        program = mutate(program, rng)
        client.change(random_uri, program, step)
        incremental = client.diagnostics(random_uri, version=step)
        fresh_uri = "file://" + os.path.join(work, "fresh_%d.weft" % step)
        client.open(fresh_uri, program)
        fresh = client.diagnostics(fresh_uri)
        client.notify("textDocument/didClose", {"textDocument": {"uri": fresh_uri}})
        if strip(incremental) != strip(fresh):
            mismatches.append((step, strip(incremental), strip(fresh)))
    check("incremental: %d random edits, each reported as a whole check reports it" % RANDOM_EDITS,
          not mismatches, mismatches[:1])

    # ---- a shape error, with its notes as related information ----
    shape_uri = "file://" + os.path.join(work, "shape.weft")
    client.open(shape_uri, SHAPE_ERROR)
    diagnostics = client.diagnostics(shape_uri)
    error = diagnostics[0] if diagnostics else {}
    check("shape error: E0206 on `@`",
          len(diagnostics) == 1 and error.get("code") == "E0206" and error.get("severity") == 1 and
          error.get("message") == "cannot multiply `f32[n, 4]` by `f32[5, m]`: inner dimensions `4` and `5` differ" and
          error["range"]["start"] == position_of(SHAPE_ERROR, "x @ y"), diagnostics)
    related = {r["message"]: r["location"] for r in error.get("relatedInformation", [])}
    check("shape error: the note on the right operand",
          related.get("the right operand has type `f32[5, m]`", {}).get("range", {}).get("start") ==
          position_of(SHAPE_ERROR, "y\n"), related)
    check("shape error: the notes on where each operand is bound",
          related.get("`x` is bound here", {}).get("range", {}).get("start") == position_of(SHAPE_ERROR, "(x:") and
          related.get("`y` is bound here", {}).get("range", {}).get("start") == position_of(SHAPE_ERROR, "(y:") and
          related["`x` is bound here"]["uri"] == shape_uri, related)
    result = hover(shape_uri, SHAPE_ERROR, "x @")
    check("shape error: hover on the left operand shows its shape", hover_text(result) == "x : f32[n, 4]", result)
    result = hover(shape_uri, SHAPE_ERROR, "m])")
    check("shape error: a size in the failing definition's types",
          hover_text(result) == "m : size" and "bound by the parameter `(y: f32[5, m])`" in result["contents"]["value"],
          result)
    result = hover(shape_uri, SHAPE_ERROR, "y\n")
    check("shape error: hover on the right operand shows its shape", hover_text(result) == "y : f32[5, m]", result)
    result = hover(shape_uri, SHAPE_ERROR, "z * 2.0")
    check("shape error: the definition that checked has its hovers", hover_text(result) == "z : f32[3]", result)
    result = client.at("textDocument/definition", shape_uri, position_of(SHAPE_ERROR, "y\n"))
    check("shape error: go to definition from the operand",
          result and result["range"]["start"] == position_of(SHAPE_ERROR, "y: f32"), result)

    # ---- the kernel tier's errors: each kernel is lowered to the tile IR, as `weft check` does ----
    tier_uri = "file://" + os.path.join(work, "tier.weft")
    client.open(tier_uri, KERNEL_TIER)
    diagnostics = client.diagnostics(tier_uri)
    error = diagnostics[0] if diagnostics else {}
    check("kernel tier: E0501 on `g`, the tile read from global memory",
          len(diagnostics) == 1 and error.get("code") == "E0501" and error.get("severity") == 1 and
          error.get("message") == "`regs` takes a tile in shared memory; `g` is a tile in global memory" and
          error["range"]["start"] == position_of(KERNEL_TIER, "g)\n"), diagnostics)
    related = {r["message"]: r["location"] for r in error.get("relatedInformation", [])}
    check("kernel tier: the note on where `g` is made",
          related.get("`g` is made here", {}).get("range", {}).get("start") ==
          position_of(KERNEL_TIER, "tile x [64"), related)
    # An edit of the `def` alone checks it alone: the kernel's error is kept, where it was.
    edited = KERNEL_TIER.replace("v + v", "v * 2.0")
    client.change(tier_uri, edited, 2)
    diagnostics = client.diagnostics(tier_uri, version=2)
    check("kernel tier: an edit elsewhere keeps the kernel's error", strip(diagnostics) == strip([error]),
          diagnostics)
    fixed = edited.replace("(regs g)", "(regs (shared g))")
    client.change(tier_uri, fixed, 3)
    check("kernel tier: the fix clears it", client.diagnostics(tier_uri, version=3) == [])

    # ---- an error in an imported file is shown on the import ----
    with open(os.path.join(work, "broken_lib.weft"), "w") as f:
        f.write("def oops (v: f32[n]) = v + true\n")
    importer = 'import "broken_lib.weft"\n\ndef use (v: f32[4]) = v\n'
    importer_uri = "file://" + os.path.join(work, "importer.weft")
    client.open(importer_uri, importer)
    diagnostics = client.diagnostics(importer_uri)
    check("import: the imported file's error is on the import line, its place related",
          len(diagnostics) >= 1 and diagnostics[0]["range"]["start"]["line"] == 0 and
          "broken_lib.weft:1:" in diagnostics[0]["message"] and
          diagnostics[0]["relatedInformation"][0]["location"]["uri"].endswith("/broken_lib.weft"), diagnostics)
    # Saving a file analyses the other documents again (imports are read from disk).
    with open(os.path.join(work, "broken_lib.weft"), "w") as f:
        f.write("def oops (v: f32[n]) = v + v\n")
    client.notify("textDocument/didSave", {"textDocument": {"uri": "file://" + os.path.join(work, "broken_lib.weft")}})
    check("import: after the imported file is saved, the error is gone", client.diagnostics(importer_uri) == [])

    # ---- close, protocol errors, shutdown ----
    client.notify("textDocument/didClose", {"textDocument": {"uri": shape_uri}})
    cleared = client.notification("textDocument/publishDiagnostics",
                                  lambda p: p["uri"] == shape_uri and "version" not in p, timeout=60)
    check("close: the diagnostics are cleared", cleared["diagnostics"] == [], cleared)
    try:
        client.request("weft/unknown", {})
        check("protocol: an unknown method is an error", False)
    except LspError as error:
        check("protocol: an unknown method is MethodNotFound", error.code == -32601, error.code)
    try:
        client.at("textDocument/hover", shape_uri, {"line": 0, "character": 0})
        check("protocol: a closed document is an error", False)
    except LspError as error:
        check("protocol: a request on a closed document is InvalidParams", error.code == -32602, error.code)
    client.send_raw(b"Content-Length: 5\r\n\r\n{oops")
    try:
        client.response(None, timeout=60)
        check("protocol: malformed JSON is an error", False)
    except LspError as error:
        check("protocol: malformed JSON is a ParseError, and the server goes on", error.code == -32700, error.code)
    result = hover(good, GOOD, "a @ m")
    check("protocol: ... still answering", hover_text(result) == "a : f32[b, k]", result)
    status = client.stop()
    check("shutdown then exit: exit status 0", status == 0, status)
    stderr = "".join(client.stderr)
    check("no sanitizer report or internal error on stderr",
          "Sanitizer" not in stderr and "runtime error" not in stderr and "internal" not in stderr, stderr)

    # ---- layouts in hovers: asked for with the initialization option `layouts` ----
    client = Client([weft, "lsp"], env=env)
    client.initialize(options={"layouts": True})
    views_uri = "file://" + os.path.join(work, "views.weft")
    client.open(views_uri, VIEWS)
    check("layouts: no diagnostics", client.diagnostics(views_uri) == [])
    result = client.at("textDocument/hover", views_uri, position_of(VIEWS, "flip (x"))
    check("layouts: a definition's hover shows its parameters' layout variables and its result's view",
          hover_text(result) == "flip : f32[n, m] @ 'l1 -> f32[m, n] @ transpose 'l1", result)
    result = client.at("textDocument/hover", views_uri, position_of(VIEWS, "t = ", 0, 0))
    check("layouts: a value of main has a known layout",
          hover_text(result) == "t : f32[6, 4] @ (6, 4):(1, 6)", result)
    # A kernel's tile: its layout variable and the constraints that mention it.
    tiles_uri = "file://" + os.path.join(work, "tiles.weft")
    client.open(tiles_uri, TILES)
    check("layouts: a kernel: no diagnostics", client.diagnostics(tiles_uri) == [])
    result = client.at("textDocument/hover", tiles_uri, position_of(TILES, "regs s", 0, 5))
    value = result["contents"]["value"] if result else ""
    check("layouts: a name bound to a shared tile shows the tile's layout variable",
          "tile 'L1 `s` : f32[64, 64] @shared  (3:11)" in value, result)
    check("layouts: ... and the constraints that mention it, the copy that writes it and the one that reads it",
          "'L1 copy of `tile x [64, 64] (i, 0)` (global to shared)  (`shared` at 3:11)" in value
          and "'L2 copy of 'L1 (shared to registers)  (`regs` at 4:11)" in value, result)
    check("layouts: ... and not the constraints of other tiles", "'L2 = 'L3" not in value, result)
    result = client.at("textDocument/hover", tiles_uri, position_of(TILES, "r + r", 0, 0))
    value = result["contents"]["value"] if result else ""
    check("layouts: a use of a register tile's name shows its binding's variable and its equalities",
          "tile 'L2 `r` : f32[64, 64] @reg  (4:11)" in value and "'L2 = 'L3  (the elementwise `+` at 5:35)" in value,
          result)
    status = client.stop()
    check("layouts: shutdown then exit: exit status 0", status == 0, status)

    total = check.passed + len(check.failed)
    print("lsp_test: %d of %d checks passed" % (check.passed, total))
    return 0 if not check.failed else 1


if __name__ == "__main__":
    sys.exit(main())
