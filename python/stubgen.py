"""Writes type stubs (.pyi) for the extension module `tapeflow._tapeflow` from the signatures
pybind11 puts in its docstrings, so that editors complete and type checkers check code that
uses tapeflow. Run by the build after the module is linked:

    python3 stubgen.py OUTPUT_DIR      # writes OUTPUT_DIR/_tapeflow/{__init__,errors,config}.pyi
"""

import inspect
import pathlib
import re
import sys
import types

# C++ and pybind11 spellings in signatures, as Python types.
_REPLACEMENTS = [
    (r"\bdetail::\S+", "Any"),
    (r"\bstd::vector<[^>]*>", "list"),
    # A C++ type pybind11 had not yet seen registered when it wrote the signature.
    (r"\b\w+(?:::\w+)+(?:<[^>]*>)?", "Any"),
    (r"\btapeflow\._tapeflow\.", ""),
    (r"\bhandle\b", "Any"), (r"\bobject\b", "Any"), (r"\bcapsule\b", "Any"), (r"\bnumpy\.ndarray\b", "Any"),
    (r"\bfunction\b", "Callable[..., Any]"), (r"\bList\b", "list"), (r"\bTuple\b", "tuple"), (r"\bDict\b", "dict"),
]
_HEADER = "from typing import Any, Callable, Optional, Union, overload\n\n"


def _untyped_callables(text):
    """Callable[[args], result] (pybind11's std::function) as Callable[..., Any]: bracket-balanced."""
    out, start = "", 0
    while (i := text.find("Callable[", start)) >= 0:
        depth, j = 0, i + len("Callable")
        while True:
            depth += {"[": 1, "]": -1}.get(text[j], 0)
            j += 1
            if depth == 0:
                break
        out += text[start:i] + "Callable[..., Any]"
        start = j
    return out + text[start:]


def _python_types(text):
    for pattern, replacement in _REPLACEMENTS:
        text = re.sub(pattern, replacement, text)
    return _untyped_callables(text)


def _signatures(name, doc):
    """The `name(...) -> type` lines of a pybind11 docstring (several for an overloaded function)."""
    lines = re.findall(rf"^(?:\d+\. )?{re.escape(name)}(\(.*\) -> .*)$", doc or "", flags=re.M)
    return [_python_types(line) for line in lines]


def _defaults_as_ellipsis(signature):
    """pybind11 prints defaults as their repr (`dtype: DType = tf.float32`): a stub shows `= ...`."""
    head, ret = signature.rsplit(" -> ", 1)
    params = head[1:-1]
    depth, quote, current, parts = 0, None, "", []
    for ch in params:
        # A comma inside a quoted default (separator: str = ',') does not end the parameter.
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        depth += ch in "([{" and not quote
        depth -= ch in ")]}" and not quote
        if ch == "," and depth == 0 and not quote:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current.strip())
    parts = [re.sub(r"=.*$", "= ...", p) if "=" in p else p for p in parts]
    return f"({', '.join(parts)}) -> {ret}"


def _function(name, obj, indent=""):
    sigs = _signatures(name, obj.__doc__)
    if not sigs:
        return f"{indent}def {name}(*args: Any, **kwargs: Any) -> Any: ...\n"
    out = ""
    for sig in sigs:
        if len(sigs) > 1:
            out += f"{indent}@overload\n"
        out += f"{indent}def {name}{_defaults_as_ellipsis(sig)}: ...\n"
    return out


def _class(name, cls):
    body = ""
    for attr, value in sorted(vars(cls).items()):
        if attr.startswith("__") and attr not in {"__init__", "__call__", "__getitem__", "__len__", "__iter__",
                                                   "__float__", "__int__", "__bool__", "__array__", "__dlpack__",
                                                   "__dlpack_device__", "__add__", "__radd__", "__sub__", "__rsub__",
                                                   "__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__pow__",
                                                   "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__",
                                                   "__lt__", "__le__", "__gt__", "__ge__"}:
            continue
        if attr.startswith("_") and not attr.startswith("__"):
            continue
        if isinstance(value, property):
            sigs = _signatures("", value.fget.__doc__ if value.fget else "") or ["(self) -> Any"]
            ret = sigs[0].rsplit(" -> ", 1)[1]
            body += f"    @property\n    def {attr}(self) -> {ret}: ...\n"
        elif callable(value) or isinstance(value, (staticmethod, classmethod)):
            body += _function(attr, value, "    ")
    bases = ", ".join(b.__name__ for b in cls.__bases__ if b.__module__.startswith("tapeflow")) or ""
    return f"class {name}{f'({bases})' if bases else ''}:\n{body or '    ...'}\n\n"


def _module(module):
    out = _HEADER
    classes = [(n, v) for n, v in vars(module).items() if isinstance(v, type) and not n.startswith("__")]
    # Base classes first: a stub may not name a class before it is defined.
    classes.sort(key=lambda item: len(item[1].__mro__))
    for name, cls in classes:
        if issubclass(cls, BaseException):
            out += f"class {name}({', '.join(b.__name__ for b in cls.__bases__)}): ...\n"
        else:
            out += _class(name, cls)
    for name, value in sorted(vars(module).items()):
        if name.startswith("_") or isinstance(value, (type, types.ModuleType)):
            continue
        if callable(value):
            out += _function(name, value)
        else:
            out += f"{name}: {type(value).__name__}\n"
    return out


def main():
    out = pathlib.Path(sys.argv[1]) / "_tapeflow"
    out.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(pathlib.Path(sys.argv[1]).parent))
    from tapeflow import _tapeflow  # noqa: E402 (found in the build tree)
    text = _module(_tapeflow)
    for name, sub in sorted(vars(_tapeflow).items()):
        if isinstance(sub, types.ModuleType):
            text += f"from . import {name} as {name}\n"
            sub_text = _module(sub)
            if re.search(r"\bTensor\b", sub_text) and "class Tensor" not in sub_text:
                # The submodule's functions take and return the package's Tensor.
                sub_text = sub_text.replace(_HEADER, _HEADER + "from . import Tensor\n\n", 1)
            (out / f"{name}.pyi").write_text(sub_text)
    (out / "__init__.pyi").write_text(text)


if __name__ == "__main__":
    main()
