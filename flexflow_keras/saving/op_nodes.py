"""Ops applied directly to symbolic tensors of a functional model (``x + 3.0``, ``a * b``), in a `.keras`
config as Keras 3 writes them: an entry of module ``keras.src.ops.numpy`` whose class is the op
(`Add`, `Subtract`, `Multiply`, `TrueDivide`, `Maximum`, `Minimum`, `Power`) and whose inbound node
lists the op's arguments (tensors and Python numbers); ``one_hot`` is ``keras.src.ops.nn``'s `OneHot`,
whose config holds num_classes, axis, dtype and sparse (Deep Learning with Python's one-hot sequence
model). Saving writes these ops with their Keras twins; loading rebuilds them (also from files Keras
wrote). Other ops stay refused by the saver."""

from __future__ import annotations

OPS_MODULE = "keras.src.ops.numpy"
NN_MODULE = "keras.src.ops.nn"
# our op type -> Keras 3's operation class
KERAS_CLASS = {"add": "Add", "subtract": "Subtract", "multiply": "Multiply", "divide": "TrueDivide",
               "maximum": "Maximum", "minimum": "Minimum", "power": "Power"}


def describe(op_layer, tensor) -> dict | None:
    """The Keras 3 config entry of `op_layer` (a functional model's OpLayer), or None when its op has no
    Keras twin here. `tensor(t)` describes an input tensor (None when it cannot: a constant)."""
    from flexflow_keras.ops.array_ops import OneHotOp
    from flexflow_keras.ops.math_ops import BinaryOp, ScalarOp

    node = op_layer._op_node
    op = node.op
    if isinstance(op, OneHotOp):
        x = tensor(node.inputs[0])
        if x is None:
            return None
        config = {"name": op_layer.name, "num_classes": int(op.num_classes), "axis": int(op.axis),
                  "dtype": op.dtype, "sparse": False}
        return {"module": NN_MODULE, "class_name": "OneHot", "config": config, "registered_name": "OneHot",
                "name": op_layer.name, "inbound_nodes": [{"args": [x], "kwargs": {}}]}
    if isinstance(op, ScalarOp) and op.fn in KERAS_CLASS:
        cls, scalar = KERAS_CLASS[op.fn], float(op.scalar)
        if scalar.is_integer() and str(node.inputs[0].dtype).startswith(("int", "uint")):
            scalar = int(scalar)  # `ids + 1` on integers stays integer when Keras rebuilds it
        x = tensor(node.inputs[0])
        args = [scalar, x] if op.reverse else [x, scalar]
    elif isinstance(op, BinaryOp) and op.type_name in KERAS_CLASS:
        cls = KERAS_CLASS[op.type_name]
        args = [tensor(t) for t in node.inputs]
    else:
        return None
    if any(a is None for a in args):
        return None
    return {"module": OPS_MODULE, "class_name": cls, "config": {"name": op_layer.name}, "registered_name": cls,
            "name": op_layer.name, "inbound_nodes": [{"args": args, "kwargs": {}}]}


def is_op_entry(entry: dict) -> bool:
    """Whether a functional config entry is an op (Keras 3's ``keras.src.ops.*`` modules), not a layer."""
    return str(entry.get("module", "")).startswith("keras.src.ops")


def op_callable(entry: dict, where: str):
    """A function applying the op of config `entry` to its inbound node's arguments."""
    from flexflow_keras import ops
    from flexflow_keras.errors import DataError

    functions = {"Add": ops.add, "Subtract": ops.subtract, "Multiply": ops.multiply, "TrueDivide": ops.divide,
                 "Divide": ops.divide, "Maximum": ops.maximum, "Minimum": ops.minimum, "Power": ops.power}
    name = entry.get("class_name")
    if name == "OneHot":
        return _one_hot(entry, where)
    if name not in functions:
        raise DataError(f"{where}: the model applies the Keras op {name} ('{entry.get('name')}') directly to "
                        f"tensors; flexflow_keras reads the element-wise ops {sorted(functions)} and OneHot from "
                        "a config. "
                        "Rebuild the model in code and load its weights with model.load_weights().")
    fn = functions[name]

    def apply(*args, **kwargs):  # under the saved name, so outputs and get_layer keep theirs
        return fn(*args, name=entry.get("name"), **kwargs)

    apply.name = entry.get("name", name)
    return apply


def _one_hot(entry: dict, where: str):
    """`OneHot` of a config entry (Keras 3's ``keras.src.ops.nn.OneHot``) as a function of its ids."""
    from flexflow_keras.errors import DataError
    from flexflow_keras.ops.array_ops import OneHotOp
    from flexflow_keras.ops.base import apply_op

    config = dict(entry.get("config") or {})
    if config.get("sparse"):
        raise DataError(f"{where}: OneHot '{entry.get('name')}' has sparse=True; flexflow_keras has no sparse "
                        "tensors. Rebuild the model with sparse=False and load its weights with "
                        "model.load_weights().")
    dtype = config.get("dtype") or "float32"
    if isinstance(dtype, dict):  # a DTypePolicy
        dtype = (dtype.get("config") or {}).get("name", "float32")
    op = OneHotOp(int(config["num_classes"]), int(config.get("axis", -1)), str(dtype))

    def apply(x):
        return apply_op(op, [x], name=entry.get("name"))

    apply.name = entry.get("name", "one_hot")
    return apply
