#!/usr/bin/env python3
"""The docs test: runs every command that README.md, docs/*.md and examples/README.md show with its
output, and compares what it prints with what the page shows (docs/testing.md, "The docs test").

A page is read as a newcomer reads it, top to bottom, in a folder of its own:

- A fenced block whose first line is `$ COMMAND` is a transcript: each `$ ` line is run with `bash`
  (`weft` is the compiler under test), and the lines after it, up to the next `$ `, are what it
  must print: standard output, then standard error. A line `...` alone stands for any number of
  lines. Trailing spaces and trailing blank lines are not compared.
- `$ weft repl` (or a block that starts with `weft> `) is a REPL session: the `weft> ` lines and
  their `...   ` continuations are its input, every other line (but the banner, which only a
  terminal gets) its output, standard error included where it falls.
- A ```weft block (or any block) after a line that names a file makes that file, as the reader
  would: "`model.weft`:" creates it, "Add to the end of `model.weft`:" (or "add ... to the end of
  the file:", the last file named) appends the block after a blank line, "Change line 8 [of
  `model.weft`] to:" replaces that line with the block, "change the last line of `run.weft` to ..."
  replaces the last line.
- A block of errors right after a ```weft block, its first line `FILE.weft:L:C: error[EN]`, is
  that program's errors (docs/error_index.md's entries): the program is written to FILE.weft and
  checked with `weft check` (`weft run --cpu` for E04xx, `weft explain` for E06xx, with the
  `--target` its prose names), and its standard error must be the block.
- `<!-- doc-test: skip REASON -->` before a block leaves it out, saying why (a command whose output
  needs a GPU, or one that takes minutes); `<!-- doc-test: run COMMAND -->` runs a command the page
  asks for in prose (`make deps`-style set-up is never run).

The page's folder holds a link to each tracked top-level entry of the repository, so `examples/...`
and `tests/...` paths work as they do in a checkout, and files the page makes stay in the folder.

usage: doc_test.py WEFT [--root DIR] [--update] [--jobs N] [-v] [PAGE...]
  WEFT      the compiler to test (build/dev/compiler/driver/weft in ctest)
  --update  rewrite the shown output of a failing transcript with what the command printed (not
            for blocks with `...` or REPL sessions); read the diff before committing it
Exit status 0 when every transcript matches, 1 otherwise.
"""
import argparse
import concurrent.futures
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

PAGES = ["README.md", "examples/README.md", "docs/*.md"]
REPL_BANNER = "weft repl: `:help` lists the commands, `:quit` or Ctrl-D ends the session"
REPL_PROMPT = "weft> "
REPL_MORE = "...   "
FENCE = re.compile(r"^(\s*)(```+)\s*([\w+-]*)\s*$")
DIRECTIVE = re.compile(r"<!--\s*doc-test:\s*(\w+)\s*(.*?)\s*-->")
CREATE = re.compile(r"^`([^`\s]+)`:$")
APPEND = re.compile(r"\b[Aa]dd\b.*\bto the end of (?:`([^`\s]+)`|the file)")
CHANGE_LINE = re.compile(r"[Cc]hange line (\d+)(?: of `([^`\s]+)`)?(?: back)? to")
CHANGE_LAST = re.compile(r"[Cc]hange the last line of `([^`\s]+)` to")
DIAGNOSTIC = re.compile(r"^(\S+\.weft):\d+:\d+: error\[E(\d+)\]")
TARGET = re.compile(r"`--target (sm_\w+)`")
TIMEOUT = 120


class Block:
    def __init__(self, page, line, indent, lang, body, prose):
        self.page = page
        self.line = line  # 1-based line of the opening fence
        self.indent = indent
        self.lang = lang
        self.body = body  # the lines, without the block's indentation
        self.prose = prose  # the text between the previous block and this one


def read_blocks(path, page):
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, prose, i = [], [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append(lines[i])
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3)
        body, j = [], i + 1
        while j < len(lines) and lines[j].strip() != fence:
            text = lines[j]
            body.append(text[len(indent):] if text.startswith(indent) else text.lstrip())
            j += 1
        blocks.append(Block(page, i + 1, indent, lang, body, prose))
        prose, i = [], j + 1
    return blocks


def last_sentence_line(prose):
    """The last non-blank line of the prose before a block, without its list marker."""
    for line in reversed(prose):
        if line.strip() and not DIRECTIVE.search(line):
            return line.strip().lstrip("-* ").strip()
    return ""


class Failure(Exception):
    pass


class Page:
    def __init__(self, root, weft, page, update):
        self.root, self.weft, self.page, self.update = root, weft, page, update
        self.last_file = None
        self.results = []  # (ok, message)
        self.rewrites = []  # (first line index, old line count, new lines, indent)

    def env(self):
        env = dict(os.environ)
        env["PATH"] = os.path.dirname(os.path.abspath(self.weft)) + os.pathsep + env.get("PATH", "")
        env["NO_COLOR"] = "1"
        env.pop("WEFT_HISTORY", None)
        env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
        return env

    def run(self, folder):
        for entry in top_level_entries(self.root):
            os.symlink(os.path.join(self.root, entry), os.path.join(folder, entry))
        previous = None
        for block in read_blocks(os.path.join(self.root, self.page), self.page):
            block.previous, previous = previous, block
            where = "%s:%d" % (self.page, block.line)
            directives = [m.groups() for line in block.prose for m in DIRECTIVE.finditer(line)]
            if any(d[0] == "skip" for d in directives):
                reason = next(d[1] for d in directives if d[0] == "skip")
                self.results.append((True, "%s: skipped: %s" % (where, reason)))
                continue
            for kind, command in directives:
                if kind == "run":
                    self.execute(command, folder)
            try:
                self.make_file(block, folder)
                self.transcript(block, folder, where)
            except Failure as failure:
                self.results.append((False, "%s: %s" % (where, failure)))

    def make_file(self, block, folder):
        sentence = last_sentence_line(block.prose)
        text = "\n".join(block.body) + "\n"
        m = CREATE.match(sentence)
        if m:
            self.write(folder, m.group(1), text)
            return
        m = APPEND.search(sentence)
        if m:
            name = m.group(1) or self.last_file
            self.write(folder, name, self.read(folder, name) + "\n" + text)
            return
        m = CHANGE_LINE.search(sentence)
        if m:
            name = m.group(2) or self.last_file
            lines = self.read(folder, name).split("\n")
            number = int(m.group(1))
            if not 1 <= number < len(lines):
                raise Failure("`%s` has no line %d to change" % (name, number))
            lines[number - 1:number] = block.body
            self.write(folder, name, "\n".join(lines))
            return
        m = CHANGE_LAST.search(sentence)
        if m:
            lines = self.read(folder, m.group(1)).rstrip("\n").split("\n")
            self.write(folder, m.group(1), "\n".join(lines[:-1] + block.body) + "\n")

    def read(self, folder, name):
        try:
            return open(os.path.join(folder, name), encoding="utf-8").read()
        except OSError as error:
            raise Failure("the page changes `%s`, which it did not make: %s" % (name, error))

    def write(self, folder, name, text):
        path = os.path.join(folder, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        self.last_file = name

    def execute(self, command, folder, stdin=None, merge=False, stderr_only=False):
        try:
            done = subprocess.run(["bash", "-c", command], cwd=folder, env=self.env(), input=stdin,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                                  timeout=TIMEOUT, text=True, errors="replace")
        except subprocess.TimeoutExpired:
            raise Failure("`%s` ran longer than %d s" % (command, TIMEOUT))
        if stderr_only:
            return done.stderr
        return done.stdout + ("" if merge else done.stderr)

    def transcript(self, block, folder, where):
        body = block.body
        first = next((line for line in body if line.strip()), "")
        if not (first.startswith("$ ") or first.startswith(REPL_PROMPT)):
            self.diagnostics(block, folder, where, first)
            return
        steps, i = [], 0  # (command, index of its first output line, output lines, repl input)
        if first.startswith(REPL_PROMPT):
            steps.append(self.repl_step("weft repl", body, 0))
            i = len(body)
        while i < len(body):
            line = body[i]
            if not line.startswith("$ "):
                i += 1
                continue
            command = line[2:]
            j = i + 1
            while j < len(body) and not body[j].startswith("$ "):
                j += 1
            if re.match(r"^weft repl\b", command):
                steps.append(self.repl_step(command, body[i + 1:j], i + 1))
            else:
                steps.append((command, i + 1, body[i + 1:j], None))
            i = j
        for command, start, expected, session in steps:
            if session is not None:
                actual = self.execute(command, folder, stdin=session, merge=True)
            else:
                actual = self.execute(command, folder)
            if not matches(expected, actual):
                self.fail(block, where, command, start, expected, actual, session is not None)
                return
        self.results.append((True, "%s: %d command%s" % (where, len(steps), "" if len(steps) == 1 else "s")))

    def diagnostics(self, block, folder, where, first):
        """An error index entry: a ```weft block, then the errors of the file that the first error
        names. The file is checked (E04xx: run on the interpreter; E06xx: explained, for the target
        the prose before the program names), and its standard error compared."""
        m = DIAGNOSTIC.match(first)
        previous = block.previous
        if not m or previous is None or previous.lang != "weft" or block.lang:
            return
        name, number = m.group(1), int(m.group(2))
        self.write(folder, name, "\n".join(previous.body) + "\n")
        if 400 <= number < 500:
            command = "weft run --cpu " + name
        elif 600 <= number < 700:
            target = TARGET.search(" ".join(previous.prose))
            command = "weft explain " + name + (" --target " + target.group(1) if target else "")
        else:
            command = "weft check " + name
        actual = self.execute(command, folder, stderr_only=True)
        if not matches(block.body, actual):
            self.fail(block, where, command, 0, block.body, actual, False)
            return
        self.results.append((True, "%s: `%s`" % (where, command)))

    @staticmethod
    def repl_step(command, lines, start):
        inputs, expected, in_input = [], [], False
        for line in lines:
            if line.startswith(REPL_PROMPT) or line == REPL_PROMPT.rstrip():
                inputs.append(line[len(REPL_PROMPT):])
                in_input = True
            elif in_input and line.startswith(REPL_MORE):
                inputs.append(line[len(REPL_MORE):])
            else:
                in_input = False
                if line != REPL_BANNER:
                    expected.append(line)
        return (command, start, expected, "\n".join(inputs) + "\n")

    def fail(self, block, where, command, start, expected, actual, repl):
        shown = normalize("\n".join(expected))
        got = normalize(actual)
        diff = "\n".join(difflib.unified_diff(shown, got, "shown", "printed", lineterm=""))
        self.results.append((False, "%s: `%s` prints what the page does not show:\n%s" % (where, command, diff)))
        if self.update and not repl and not any(is_elision(line) for line in expected):
            # The block's body starts on the line after the fence; `start` indexes the body.
            self.rewrites.append((block.line + start, len(expected), got, block.indent))


def top_level_entries(root):
    """The repository's tracked top-level files and folders (stray files of a checkout, a build
    folder or an `.npy` left by hand, must not make a page pass), or all of them without git."""
    try:
        listed = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True).stdout
        names = sorted({path.split("/")[0] for path in listed.split("\n") if path})
        if names:
            return names
    except (OSError, subprocess.CalledProcessError):
        pass
    return [entry for entry in os.listdir(root) if entry not in (".git", "build")]


def is_elision(line):
    return line.strip() == "..."


def normalize(text):
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def matches(expected, actual):
    pattern = []
    for line in normalize("\n".join(expected)):
        pattern.append(r"(?:[^\n]*\n)*?" if is_elision(line) else re.escape(line) + r"\n")
    return re.fullmatch("".join(pattern), "".join(line + "\n" for line in normalize(actual))) is not None


def apply_rewrites(root, page, rewrites):
    path = os.path.join(root, page)
    lines = open(path, encoding="utf-8").read().split("\n")
    for first, count, new, indent in sorted(rewrites, reverse=True):
        lines[first:first + count] = [indent + line if line else line for line in new]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("weft")
    parser.add_argument("pages", nargs="*")
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--update", action="store_true")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_intermixed_args()
    root = os.path.abspath(args.root)
    weft = os.path.abspath(args.weft)
    if not os.access(weft, os.X_OK):
        sys.exit("doc_test.py: %s is not an executable" % weft)
    pages = args.pages
    if not pages:
        import glob
        pages = []
        for pattern in PAGES:
            pages += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, pattern)))
    start = time.time()

    def run_page(page):
        tested = Page(root, weft, page, args.update)
        folder = tempfile.mkdtemp(prefix="weft-doc-test-")
        try:
            tested.run(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return tested

    failed = transcripts = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for tested in pool.map(run_page, pages):
            for ok, message in tested.results:
                transcripts += 1
                if not ok:
                    failed += 1
                    print("FAIL " + message)
                elif args.verbose or "skipped" in message:
                    print("ok   " + message)
            if tested.rewrites:
                apply_rewrites(root, tested.page, tested.rewrites)
                print("updated %s (%d blocks): read the diff" % (tested.page, len(tested.rewrites)))
    print("doc_test: %d of %d transcripts in %d pages match (%.1f s)" %
          (transcripts - failed, transcripts, len(pages), time.time() - start))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
