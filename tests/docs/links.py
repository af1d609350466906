#!/usr/bin/env python3
"""Every relative link of the repository's Markdown pages resolves inside the repository.

For each `.md` file (but those under build folders, .git and node_modules), each link
`[text](target)` and each reference `[name]: target` whose target is not a URL must name a file or
folder that exists, after resolving it against the page's folder, and that lies inside the
repository (`../shared/...` does not: a user of the repository does not have it). A `#anchor`,
alone or after a `.md` target, must be a heading of that page, spelled as GitHub spells anchors.

usage: links.py [ROOT]   (ROOT: the repository, by default the one this script is in)
"""
import os
import re
import sys

SKIP_DIRS = {".git", "build", "node_modules", ".mirror"}
INLINE = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$")
FENCE = re.compile(r"^\s*(```|~~~)")
URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not (folder == root and d.startswith("build")))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def links(path):
    """(line number, target) of each link outside code blocks and code spans."""
    in_code = False
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        text = re.sub(r"`[^`]*`", "``", line)
        for m in INLINE.finditer(text):
            yield number, m.group(1)
        m = REFERENCE.match(text)
        if m:
            yield number, m.group(1)


def slug(heading):
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    found, seen, in_code = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if FENCE.match(line):
            in_code = not in_code
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if in_code or not m:
            continue
        base = slug(m.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else "%s-%d" % (base, count))
    for m in re.finditer(r"<a\s+(?:name|id)=\"([^\"]+)\"", open(path, encoding="utf-8").read()):
        found.add(m.group(1))
    return found


def main():
    root = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else
                            os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    broken, count, cache = [], 0, {}
    for page in markdown_files(root):
        for number, target in links(page):
            if URL.match(target):
                continue
            count += 1
            where = "%s:%d" % (os.path.relpath(page, root), number)
            path, _, anchor = target.partition("#")
            resolved = os.path.realpath(os.path.join(os.path.dirname(page), path)) if path else page
            if os.path.commonpath([root, resolved]) != root:
                broken.append("%s: `%s` leads out of the repository" % (where, target))
            elif not os.path.exists(resolved):
                broken.append("%s: `%s` does not exist" % (where, target))
            elif anchor and resolved.endswith(".md"):
                if resolved not in cache:
                    cache[resolved] = anchors(resolved)
                if anchor not in cache[resolved]:
                    broken.append("%s: `%s` has no heading `#%s`" % (where, os.path.relpath(resolved, root), anchor))
    for message in broken:
        print(message)
    print("links.py: %d of %d relative links resolve" % (count - len(broken), count))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
