#!/usr/bin/env python3
"""The C++ code blocks of README.md and docs/guide/*.md, as programs the test suite builds and runs.

Markdown rules (an HTML comment on the line right before a block; it does not show on GitHub):

  ```cpp                          a program. A block with `int main(` is compiled as it stands; any
                                  other is a fragment, wrapped in a prelude (`#include
                                  <tapeflow/tapeflow.h>`, `<cstdio>`, `<iostream>`, `namespace tf = tapeflow;`)
                                  and `int main() { ... }`.
  <!-- block: continues -->       this fragment continues the page's previous fragment: one program
                                  holds both, in order, so it uses the names the earlier one made.
  <!-- block: compile-only -->    built, never run (it needs MPI ranks, a data set, a file).
  <!-- block: skip -->            neither built nor run (say in the text why it cannot be).
  <!-- output -->                 the next ``` block is what the page's previous C++ block prints,
                                  byte for byte (trailing whitespace on the last line aside).

Blocks marked `<!-- output: examples/expected/NAME.txt -->` are golden files of examples/ and
are checked by scripts/check_readme_outputs.sh, not here. ```python blocks, with the same markers,
are run by python/tests/test_docs.py.

Commands:
  extract OUTDIR PAGE...    writes OUTDIR/<page>_<n>.cpp, one per program (a first block and the
                            blocks that continue it), OUTDIR/<name>.json (each block's expected
                            output) and OUTDIR/programs.txt ("name mode" a line; mode is run or
                            compile-only). Files whose text is unchanged are not rewritten, so a
                            reconfigure rebuilds only the programs that changed.
                            examples/CMakeLists.txt runs this at configure time and builds each
                            program as a target linked to tapeflow (the test suite's flags).
  run PROGRAM JSON          runs PROGRAM and compares what each block printed with its output block.
  check BUILD_DIR [--update] [PAGE...]
                            extracts, compiles and runs every program against an existing build
                            tree (its compile_commands.json and an example's link line), one at a
                            time: a quick check of a page without reconfiguring. --update rewrites
                            the pages' output blocks with what the programs print (then read the
                            diff before committing it).
  selftest                  checks these rules on small pages (ctest docs.checker).
"""

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Printed to stdout between two blocks of one program, so each block's output can be told apart.
SEPARATOR = "@@tapeflow-doc-block@@\n"
PRELUDE = "#include <tapeflow/tapeflow.h>\n\n#include <cstdio>\n#include <iostream>\n\nnamespace tf = tapeflow;\n"
MARKER = re.compile(r"^<!--\s*(block|output)\s*(?::\s*([a-z-]+))?\s*-->\s*$")
MODES = {"continues", "compile-only", "skip"}


class PageError(Exception):
    pass


def parse(page):
    """A page's programs: [{"name", "mode", "blocks": [{"line", "code", "expected"}]}]."""
    lines = Path(page).read_text(encoding="utf-8").split("\n")
    # Program names: readme_<n> for README.md, getting_started_<n> for docs/guide/getting-started.md.
    relative = os.path.relpath(Path(page).resolve(), ROOT)
    stem = re.sub(r"[^A-Za-z0-9]+", "_", relative[:-3] if relative.endswith(".md") else relative)
    stem = stem.strip("_").lower().removeprefix("docs_guide_")
    programs, last_block, marker, i = [], None, None, 0
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line.strip())
        if m and m.group(1) == "block":
            if m.group(2) not in MODES:
                raise PageError(f"{page}:{i + 1}: unknown block marker '{line.strip()}'")
            marker = ("block", m.group(2), i + 1)
            i += 1
            continue
        if m and m.group(1) == "output" and m.group(2) is None:
            marker = ("output", None, i + 1)
            i += 1
            continue
        fence = re.match(r"^(\s*)```(\S*)\s*$", line)
        if not fence:
            if line.strip() and marker:
                raise PageError(f"{page}:{marker[2]}: a marker must be the line right before a ``` block")
            i += 1
            continue
        indent, lang = fence.group(1), fence.group(2)
        body, i = [], i + 1
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise PageError(f"{page}:{len(lines)}: a ``` block is not closed")
        start, i = i - len(body), i + 1
        text = "\n".join(body) + "\n"
        kind, mode, marker_line = marker if marker else (None, None, None)
        marker = None
        if kind == "output":
            if last_block is None:
                raise PageError(f"{page}:{marker_line}: an output block with no C++ block before it")
            if last_block["expected"] is not None:
                raise PageError(f"{page}:{marker_line}: a second output block for the block at line {last_block['line']}")
            last_block["expected"] = text
            last_block["output_lines"] = (start, i - 1)  # 0-based: the body's first line, the closing ```
            continue
        if lang == "python":  # python/tests/test_docs.py runs these; an output block after one is its own
            last_block = {"line": start, "code": text, "expected": None}
            continue
        if lang != "cpp":
            if kind == "block":
                raise PageError(f"{page}:{marker_line}: a block marker before a ```{lang} block")
            continue
        if mode == "skip":
            last_block = {"line": start, "code": text, "expected": None}  # its output block is not checked
            continue
        block = {"line": start, "code": text, "expected": None}
        has_main = re.search(r"\bint\s+main\s*\(", text) is not None
        if mode == "continues":
            if not programs or programs[-1]["has_main"] or has_main:
                raise PageError(f"{page}:{start}: 'continues' needs a fragment (no main) after a fragment")
            programs[-1]["blocks"].append(block)
        else:
            programs.append({"name": f"{stem}_{len(programs) + 1}", "page": str(page), "has_main": has_main,
                             "mode": "compile-only" if mode == "compile-only" else "run", "blocks": [block]})
        last_block = block
    for p in programs:
        if p["mode"] == "compile-only" and any(b["expected"] is not None for b in p["blocks"]):
            raise PageError(f"{page}:{p['blocks'][0]['line']}: a compile-only block has an output block")
    return programs


def source(program):
    """The C++ text of one program, with #line directives so errors point into the page."""
    page = os.path.relpath(program["page"], ROOT)
    if program["has_main"]:
        b = program["blocks"][0]
        return f'#line {b["line"] + 1} "{page}"\n{b["code"]}'
    includes, parts = [], []
    for n, b in enumerate(program["blocks"]):
        code_lines = b["code"].split("\n")
        # #include lines of a fragment go above main (the rest of the fragment keeps its lines).
        kept = []
        for k, line in enumerate(code_lines):
            if line.startswith("#include"):
                includes.append(line)
                kept.append("")
            else:
                kept.append(line)
        if n:
            parts.append(f'std::cout << "{SEPARATOR.strip()}\\n";\n')
        parts.append(f'#line {b["line"] + 1} "{page}"\n' + "\n".join(kept))
    body = "".join(p if p.endswith("\n") else p + "\n" for p in parts)
    return (PRELUDE + "\n".join(sorted(set(includes))) + "\n\nint main() {\n" + body + "}\n")


def write_if_changed(path, text):
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def extract(outdir, pages):
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    programs = [p for page in pages for p in parse(page)]
    listing = []
    for p in programs:
        write_if_changed(outdir / f"{p['name']}.cpp", source(p))
        page = os.path.relpath(p["page"], ROOT)
        expected = [{"where": f"{page}:{b['line']}", "expected": b["expected"]} for b in p["blocks"]]
        write_if_changed(outdir / f"{p['name']}.json", json.dumps(expected, indent=1) + "\n")
        listing.append(f"{p['name']} {p['mode']}")
    for stale in outdir.glob("*.cpp"):
        if stale.stem not in {p["name"] for p in programs}:
            stale.unlink()
    write_if_changed(outdir / "programs.txt", "\n".join(listing) + "\n")
    return programs


def same(want, got):
    """Equal but for trailing whitespace at the ends of lines and of the text."""
    def lines(s):
        return [line.rstrip() for line in s.rstrip().split("\n")]
    return lines(want) == lines(got)


def run(program, expected_json, printed=None, cwd=None):
    """Runs `program` (in `cwd`, where the files it writes land) and checks each block's output;
    `printed` (a list) receives the outputs."""
    blocks = json.loads(Path(expected_json).read_text(encoding="utf-8"))
    result = subprocess.run([program], capture_output=True, text=True, timeout=600, cwd=cwd)
    if result.returncode != 0:
        print(f"{blocks[0]['where']}: the program exited with status {result.returncode}")
        print(result.stdout + result.stderr)
        return 1
    outputs = result.stdout.split(SEPARATOR)
    if printed is not None:
        printed.extend(outputs)
    if len(outputs) != len(blocks):
        print(f"{blocks[0]['where']}: expected {len(blocks)} block outputs, got {len(outputs)}")
        return 1
    status = 0
    for block, got in zip(blocks, outputs):
        want = block["expected"]
        if want is not None and not same(want, got):
            print(f"{block['where']}: the output differs from the page's output block.")
            print("--- the page says:\n" + want + "--- the program printed:\n" + got)
            status = 1
    print(f"{blocks[0]['where']}: {len(blocks)} block(s) " + ("ok" if status == 0 else "FAILED"))
    return status


def build_commands(build_dir):
    """The compile and link command of examples/demo.cpp in BUILD_DIR, as templates."""
    build_dir = Path(build_dir).resolve()
    entries = json.loads((build_dir / "compile_commands.json").read_text())
    compile_cmd = next(shlex.split(e["command"]) for e in entries if e["file"].endswith("examples/demo.cpp"))
    link_dir = build_dir / "examples"
    link_cmd = shlex.split((link_dir / "CMakeFiles/tapeflow_example_demo.dir/link.txt").read_text())
    return compile_cmd, link_cmd, link_dir


def check(build_dir, pages, update=False):
    compile_cmd, link_cmd, link_dir = build_commands(build_dir)
    status, edits = 0, []  # edits: (page, first line, end line, text) of output blocks to rewrite
    with tempfile.TemporaryDirectory() as tmp:
        for p in extract(tmp, pages):
            src, obj, exe = Path(tmp) / f"{p['name']}.cpp", Path(tmp) / f"{p['name']}.o", Path(tmp) / p["name"]
            cc = compile_cmd[:]
            cc[cc.index("-o") + 1], cc[cc.index("-c") + 1] = str(obj), str(src)
            ld = link_cmd[:]
            ld[ld.index("-o") + 1] = str(exe)
            ld = [str(obj) if a.endswith("demo.cpp.o") else a for a in ld]
            if subprocess.run(cc).returncode or subprocess.run(ld, cwd=link_dir).returncode:
                print(f"{os.path.relpath(p['page'], ROOT)}:{p['blocks'][0]['line']}: does not build")
                status = 1
                continue
            if p["mode"] == "run":
                printed = []
                status |= run(str(exe), Path(tmp) / f"{p['name']}.json", printed, cwd=tmp)
                if update and len(printed) == len(p["blocks"]):
                    edits += [(p["page"], *b["output_lines"], got) for b, got in zip(p["blocks"], printed)
                              if "output_lines" in b and not same(b["expected"], got)]
            else:
                print(f"{os.path.relpath(p['page'], ROOT)}:{p['blocks'][0]['line']}: built (compile-only)")
    for page, first, end, text in sorted(edits, key=lambda e: (e[0], -e[1])):  # bottom up
        lines = Path(page).read_text(encoding="utf-8").split("\n")
        lines[first:end] = [line.rstrip() for line in text.rstrip("\n").split("\n")] if text.strip() else []
        Path(page).write_text("\n".join(lines), encoding="utf-8")
        print(f"{page}:{first}: output block rewritten")
    return status


def selftest():
    """Checks the rules above on small pages: what is parsed, what is refused, what run() rejects."""
    with tempfile.TemporaryDirectory() as tmp:
        def page(text):
            path = Path(tmp) / "page.md"
            path.write_text(text, encoding="utf-8")
            return path

        fence = "```"
        programs = parse(page(f"""{fence}cpp\nint x = 1;\n{fence}\n\n<!-- output -->\n{fence}\n1\n{fence}\n
<!-- block: continues -->\n{fence}cpp\nx += 1;\n{fence}\n\n<!-- block: compile-only -->\n{fence}cpp\nint y;\n{fence}\n
<!-- block: skip -->\n{fence}cpp\nnot C++\n{fence}\n\n{fence}python\nprint(2)\n{fence}\n\n<!-- output -->\n{fence}\n2\n{fence}\n
{fence}cpp\nint main() {{}}\n{fence}\n"""))
        assert [(p["mode"], len(p["blocks"])) for p in programs] == [("run", 2), ("compile-only", 1), ("run", 1)]
        assert [b["expected"] for b in programs[0]["blocks"]] == ["1\n", None], programs
        assert "int main() {" in source(programs[0]) and SEPARATOR.strip() in source(programs[0])
        assert source(programs[2]).count("int main()") == 1
        for bad in [f"<!-- block: compile-olny -->\n{fence}cpp\nint a;\n{fence}\n",
                    f"<!-- output -->\n{fence}\n1\n{fence}\n",
                    f"{fence}cpp\nint main() {{}}\n{fence}\n<!-- block: continues -->\n{fence}cpp\nint b;\n{fence}\n",
                    f"<!-- block: skip -->\ntext\n{fence}cpp\nint a;\n{fence}\n",
                    f"{fence}cpp\nint a;\n"]:
            try:
                parse(page(bad))
            except PageError:
                continue
            raise AssertionError(f"not refused:\n{bad}")
        program = Path(tmp) / "prints"
        program.write_text(f"#!/bin/sh\nprintf '1\\n{SEPARATOR.strip()}\\n3\\n'\n")
        program.chmod(0o755)
        expected = Path(tmp) / "expected.json"
        for outputs, status in [(["1\n", "3\n"], 0), (["1\n", None], 0), (["1\n", "2\n"], 1), (["1\n"], 1)]:
            expected.write_text(json.dumps([{"where": "page.md:1", "expected": o} for o in outputs]))
            with contextlib.redirect_stdout(io.StringIO()):
                assert run(str(program), expected) == status, outputs
    print("check_doc_blocks.py: selftest passed")
    return 0


def default_pages():
    return [ROOT / "README.md"] + sorted((ROOT / "docs" / "guide").glob("*.md"))


def main(argv):
    try:
        if len(argv) >= 2 and argv[0] == "extract":
            extract(argv[1], argv[2:] or default_pages())
            return 0
        if len(argv) == 3 and argv[0] == "run":
            return run(argv[1], argv[2])
        if argv == ["selftest"]:
            return selftest()
        if len(argv) >= 2 and argv[0] == "check":
            update = "--update" in argv
            pages = [a for a in argv[2:] if a != "--update"]
            return check(argv[1], pages or default_pages(), update)
    except PageError as e:
        print(e, file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
