"""Golden test of one Python seed program: runs it as a notebook runs its cells and compares what
it prints with the output the specification shows.

    python3 run_seed.py PROGRAM.py EXPECTED_DIR [PNG_DIR]

A program is the specification's code with only the import line changed; `# %%` lines separate
its notebook cells, and a cell whose last statement is an expression shows that value's repr(),
as the notebook did. EXPECTED_DIR holds the files the C++ seed programs are compared with
(examples/seeds/run_golden.sh describes .txt, .regex and .stderr); their `explain:` lines are the
C++ programs' own companion lines and are skipped here. Figures drawn with matplotlib are saved
as PNG_DIR/NAME-N.png (a temporary directory by default) and checked to be PNG images.
"""

import ast
import os
import pathlib
import re
import subprocess
import sys
import tempfile


def run_cells(path):
    """Runs `path` cell by cell in one namespace, showing each cell's final expression."""
    source = pathlib.Path(path).read_text()
    namespace = {"__name__": "__main__", "__file__": str(path)}
    for cell in re.split(r"^# %%.*$", source, flags=re.M):
        tree = ast.parse(cell, filename=str(path))
        shown = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, str(path), "exec"), namespace)
        if shown is not None:
            value = eval(compile(ast.Expression(shown.value), str(path), "eval"), namespace)
            if value is not None:
                print(repr(value))
    return namespace


def save_figures(png_dir, name):
    if "matplotlib.pyplot" not in sys.modules:
        return
    import matplotlib.pyplot as plt
    for number in plt.get_fignums():
        out = pathlib.Path(png_dir) / f"{name}-{number}.png"
        plt.figure(number).savefig(out)


def expected_lines(path):
    return [line for line in path.read_text().splitlines() if not line.startswith("explain: ")]


def fail(message):
    print(f"FAIL {message}")
    sys.exit(1)


def main():
    if sys.argv[1] == "--child":
        os.environ["MPLBACKEND"] = "Agg"
        run_cells(sys.argv[2])
        save_figures(sys.argv[3], pathlib.Path(sys.argv[2]).stem)
        return
    program, expected_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    with tempfile.TemporaryDirectory() as scratch:
        check(program, expected_dir, pathlib.Path(sys.argv[3] if len(sys.argv) > 3 else scratch))


def check(program, expected_dir, png_dir):
    name = program.stem
    child = subprocess.run([sys.executable, __file__, "--child", str(program), str(png_dir)],
                           capture_output=True, text=True, env=dict(os.environ, MPLBACKEND="Agg"))
    if child.returncode != 0:
        fail(f"{name}: exited with status {child.returncode}; stderr:\n{child.stderr}")
    got = child.stdout.splitlines()
    text, regex = expected_dir / f"{name}.txt", expected_dir / f"{name}.regex"
    if text.exists():
        want = expected_lines(text)
        if got != want:
            fail(f"{name}: stdout differs from {text}\n--- expected\n" + "\n".join(want) + "\n--- got\n" +
                 "\n".join(got))
    elif regex.exists():
        patterns = [p for p in regex.read_text().splitlines() if not p.startswith("#")]
        if len(patterns) != len(got):
            fail(f"{name}: printed {len(got)} lines, {regex} expects {len(patterns)}:\n{child.stdout}")
        for number, (pattern, line) in enumerate(zip(patterns, got), 1):
            if not re.fullmatch(pattern, line):
                fail(f"{name}: line {number} does not match\n  got:     {line}\n  pattern: {pattern}")
    else:
        fail(f"{name}: no {text} or {regex}")
    stderr = expected_dir / f"{name}.stderr"
    if stderr.exists() and child.stderr.splitlines() != stderr.read_text().splitlines():
        fail(f"{name}: stderr differs from {stderr}\n--- expected\n{stderr.read_text()}--- got\n{child.stderr}")
    for png in sorted(png_dir.glob(f"{name}-*.png")):
        if not png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n"):
            fail(f"{name}: {png} is not a PNG image")
    print(child.stdout, end="")


if __name__ == "__main__":
    main()
