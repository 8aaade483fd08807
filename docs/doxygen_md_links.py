#!/usr/bin/env python3
"""Doxygen INPUT_FILTER for the Markdown pages (docs/*.md, docs/design/, docs/guide/).

The pages link to each other and to repository files with relative links, which read right on
GitHub and in an editor. Doxygen 1.9 turns a link to another input page (`[x](other.md)`) into a
link to that page of the site, but not the rest; this filter rewrites them in what Doxygen reads,
never in the files:
  - `other.md#heading`: the anchor goes. Doxygen 1.9 does not give headings GitHub's ids (it
    numbers them), so the link goes to the top of the page;
  - a public header (`../../include/tapeflow/tape.h`): `@ref tapeflow/tape.h`, its page in the
    reference (without backticks in the text, which Doxygen would print);
  - anything else (a directory, an example's .cpp, a script): not part of the site, so the text
    stays and the link becomes the file's repository path in code font, `text (path)`.
Lines keep their place (one line out for each line in), so warnings point at the right line.
Code blocks (``` fences and indented) are left alone.
    python3 docs/doxygen_md_links.py docs/guide/README.md
"""
import os
import re
import sys

LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def site_target(page, target):
    """Returns the replacement for the link `[text](target)` on `page`, or None to keep it."""
    if SCHEME.match(target) or target.startswith(("#", "@ref", "\\ref")):
        return None
    path, _, anchor = target.partition("#")
    repo_path = os.path.normpath(os.path.join(os.path.dirname(page), path))
    if repo_path.endswith(".md") and repo_path.startswith("docs/") and os.path.isfile(repo_path):
        return ("link", path) if anchor else None
    if repo_path.startswith("include/") and os.path.isfile(repo_path):
        return ("ref", "@ref " + os.path.relpath(repo_path, "include"))
    return ("path", repo_path + ("/" if path.endswith("/") else ""))


def rewrite(page, line):
    def replace(match):
        text, target = match.group(1), match.group(2)
        new = site_target(page, target)
        if new is None:
            return match.group(0)
        kind, value = new
        if kind == "link":
            return f"[{text}]({value})"
        if kind == "ref":  # Doxygen prints a \ref's text as it is: no `code` in it
            return f"[{text.strip('`')}]({value})"
        return text if text.strip("`") == value else f"{text} (`{value}`)"

    return LINK.sub(replace, line)


def main():
    page = os.path.relpath(sys.argv[1])
    fence = None
    with open(page, encoding="utf-8") as f:
        for line in f:
            stripped = line.lstrip()
            if fence is None and stripped.startswith(("```", "~~~")):
                fence = stripped[:3]
            elif fence is not None and stripped.startswith(fence):
                fence = None
            elif fence is None and not line.startswith("    "):
                line = rewrite(page, line)
            sys.stdout.write(line)


if __name__ == "__main__":
    main()
