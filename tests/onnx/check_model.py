"""Checks ONNX files with onnx.checker (full check, with shape inference) and prints, for each,
a line "model PATH", then its opset, its inputs' shapes (a dim_param by name) and its op types,
one line each, for the tests. Exits non-zero at the first file the checker refuses.

    python3 check_model.py MODEL.onnx...
"""
import sys

import onnx


def shape_text(value_info):
    dims = value_info.type.tensor_type.shape.dim
    return "[" + ", ".join(d.dim_param if d.dim_param else str(d.dim_value) for d in dims) + "]"


for path in sys.argv[1:]:
    print("model", path)
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    print("opset", ",".join(str(o.version) for o in model.opset_import))
    for i in model.graph.input:
        print("input", i.name, shape_text(i))
    print("ops", " ".join(sorted({n.op_type for n in model.graph.node})))
