"""The Python blocks of README.md and docs/guide/*.md, run with the built module.

The pages mark blocks as scripts/check_doc_blocks.py does for C++ (an HTML comment on the line
right before a block): a ```python block runs in a namespace of its own, `<!-- block: continues -->`
runs it in the namespace of the page's previous Python block, `<!-- block: skip -->` does not run
it (PyTorch code, a fragment of a larger program), and `<!-- output -->` before the next plain
``` block gives what the block prints, compared line by line (trailing whitespace aside).
"""

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs" / "guide").glob("*.md"))
MARKER = re.compile(r"^<!--\s*(block|output)\s*(?::\s*([a-z-]+))?\s*-->$")


def python_programs(page):
    """[(where, [(code, expected or None), ...])]: each program's blocks, in order."""
    lines = page.read_text(encoding="utf-8").split("\n")
    programs, marker, last, i = [], None, None, 0
    while i < len(lines):
        m = MARKER.match(lines[i].strip())
        if m:
            marker = (m.group(1), m.group(2))
            i += 1
            continue
        fence = re.match(r"^\s*```(\S*)\s*$", lines[i])
        if not fence:
            marker = None if lines[i].strip() else marker
            i += 1
            continue
        start, body, i = i + 1, [], i + 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i])
            i += 1
        i += 1
        text = "\n".join(body) + "\n"
        lang, (kind, mode) = fence.group(1), marker or (None, None)
        marker = None
        if kind == "output" and mode is None:
            if last is not None:
                last[1] = text
            continue
        last = None
        if lang != "python" or mode == "skip":
            continue
        block = [text, None]
        if mode == "continues" and programs:
            programs[-1][1].append(block)
        else:
            programs.append((f"{page.relative_to(ROOT)}:{start}", [block]))
        last = block
    return programs


CASES = [program for page in PAGES for program in python_programs(page)]


def same(want, got):
    def lines(s):
        return [line.rstrip() for line in s.rstrip().split("\n")]
    return lines(want) == lines(got)


@pytest.mark.skipif(not CASES, reason="no Python blocks in the pages")
@pytest.mark.parametrize("where,blocks", CASES, ids=[where for where, _ in CASES])
def test_python_block_prints_its_output(where, blocks):
    namespace = {"__name__": "__doc_block__"}
    for code, expected in blocks:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, where, "exec"), namespace)
        if expected is not None:
            assert same(expected, out.getvalue()), (
                f"{where}: the page says\n{expected}\nthe block printed\n{out.getvalue()}")
