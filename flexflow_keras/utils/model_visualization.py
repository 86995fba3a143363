"""`keras.utils.plot_model` and `model_to_dot`: the layer graph as a pydot graph, drawn by Graphviz.

A node per layer (name, class, optionally shapes, dtype, activation, trainable), an edge per connection
recorded when the layers were called. Drawing an image needs the `pydot` package and Graphviz's `dot`
program; without them `PlotModelError` (an ImportError) says what to install, except that plot_model in
IPython logs it and returns None, as Keras 3 does (a notebook goes on). A ``.dot`` file is written by pydot
alone (Keras 3 asks for Graphviz there too).
"""

from __future__ import annotations

import logging
import os
import sys

from flexflow_keras.errors import FlexFlowKerasError

log = logging.getLogger("flexflow_keras")

_PYDOT = "pydot (pip install pydot)"
_GRAPHVIZ = "Graphviz's `dot` program (apt-get install graphviz, brew install graphviz, or https://graphviz.org/download/)"


class PlotModelError(FlexFlowKerasError, ImportError):
    """plot_model / model_to_dot cannot run: pydot or Graphviz is missing."""


def _pydot():
    try:
        import pydot
    except ImportError:
        raise PlotModelError(f"You must install {_PYDOT} and {_GRAPHVIZ} for plot_model / model_to_dot to "
                             f"work.") from None
    return pydot


def _shape_text(tensors) -> str:
    shapes = ["(" + ", ".join(str(d) for d in t.shape) + ")" for t in tensors]
    return shapes[0] if len(shapes) == 1 else "[" + ", ".join(shapes) + "]"


def _label(layer, show_shapes, show_dtype, show_layer_names, show_layer_activations, show_trainable) -> str:
    cls = getattr(layer, "_display_class", type(layer).__name__)
    parts = [f"{layer.name} ({cls})" if show_layer_names else cls]
    if show_layer_activations and getattr(layer, "activation", None) is not None:
        act = layer.activation
        parts.append(f"activation: {getattr(act, '__name__', act)}")
    node = layer._inbound_nodes[-1] if layer._inbound_nodes else None
    if show_shapes and node is not None:
        parts.append(f"input: {_shape_text(node.input_tensors) if node.input_tensors else '-'}")
        parts.append(f"output: {_shape_text(node.output_tensors)}")
    if show_dtype:
        parts.append(f"dtype: {getattr(layer, 'dtype', None) or 'float32'}")
    if show_trainable:
        parts.append(f"trainable: {'yes' if layer.trainable else 'no'}")
    return "\\n".join(parts)


def _edges(model, layers) -> list[tuple[object, object]]:
    ids = {id(layer) for layer in layers}
    edges = []
    for layer in layers:
        for node in layer._inbound_nodes:
            for t in node.input_tensors:
                hist = t._keras_history
                if hist is not None and id(hist.operation) in ids:
                    edges.append((hist.operation, layer))
    if not edges and len(layers) > 1:  # a Sequential never called symbolically: the layers in order
        edges = list(zip(layers[:-1], layers[1:], strict=True))
    unique = {(id(a), id(b)): (a, b) for a, b in edges}
    return list(unique.values())


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB",
                 expand_nested=False, dpi=200, subgraph=False, show_layer_activations=False,
                 show_trainable=False):
    """The model's layer graph as a `pydot.Dot`.

    Args:
        model: a built Keras model.
        show_shapes, show_dtype, show_layer_names, show_layer_activations, show_trainable: what each node says.
        rankdir: "TB" (top to bottom) or "LR" (left to right).
        expand_nested: must be False when the model holds models (drawing them inside is not supported).
        dpi: the image resolution.
        subgraph: return a `pydot.Cluster` rather than a `pydot.Dot`.
    """
    _check_built(model, "model_to_dot")
    pydot = _pydot()
    if rankdir not in ("TB", "LR"):
        raise ValueError(f"model_to_dot expects rankdir 'TB' or 'LR', received rankdir={rankdir!r}.")
    layers = list(model.layers)
    if expand_nested and any(hasattr(layer, "layers") for layer in layers):
        raise ValueError("model_to_dot(expand_nested=True): drawing nested models inside their parent is not "
                         "supported by flexflow_keras; pass expand_nested=False (a nested model is one node).")
    input_layers = [t._keras_history.operation for t in getattr(model, "inputs", None) or []
                    if getattr(t, "_keras_history", None) is not None]
    layers = [lay for lay in input_layers if all(lay is not x for x in layers)] + layers
    if subgraph:
        dot = pydot.Cluster(style="dashed", graph_name=model.name, label=model.name)
    else:
        dot = pydot.Dot(graph_type="digraph")
        dot.set("rankdir", rankdir)
        dot.set("dpi", dpi)
        dot.set("concentrate", True)
    dot.set_node_defaults(shape="record")
    for layer in layers:
        label = _label(layer, show_shapes, show_dtype, show_layer_names, show_layer_activations, show_trainable)
        dot.add_node(pydot.Node(str(id(layer)), label=label))
    for src, dst in _edges(model, layers):
        dot.add_edge(pydot.Edge(str(id(src)), str(id(dst))))
    return dot


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False, show_layer_names=True, rankdir="TB",
               expand_nested=False, dpi=200, show_layer_activations=False, show_trainable=False):
    """Draw the model's layer graph to `to_file` (the extension picks the format: png, svg, pdf, dot, ...).

    Args:
        model: a built Keras model.
        to_file: the output file.
        show_shapes, show_dtype, show_layer_names, rankdir, expand_nested, dpi, show_layer_activations,
            show_trainable: as `model_to_dot`.

    Raises:
        ValueError: the model is not built yet.
        PlotModelError: pydot, or (for an image) Graphviz's dot, is not installed. In IPython (a notebook), as
            Keras 3, the message is logged and plot_model returns None instead, so a notebook runs on.
    """
    _check_built(model, "plot_model")
    to_file = str(to_file)
    try:
        dot = model_to_dot(model, show_shapes=show_shapes, show_dtype=show_dtype, show_layer_names=show_layer_names,
                           rankdir=rankdir, expand_nested=expand_nested, dpi=dpi,
                           show_layer_activations=show_layer_activations, show_trainable=show_trainable)
        extension = os.path.splitext(to_file)[1][1:].lower() or "png"
        if extension == "dot":
            dot.write(to_file, format="raw")
            return None
        try:
            dot.write(to_file, format=extension)
        except FileNotFoundError:  # pydot runs `dot`; it is not on PATH
            raise PlotModelError(f"plot_model(to_file={to_file!r}) needs {_GRAPHVIZ} to draw a .{extension} "
                                 f"image; it is not on PATH. Install it, or pass a to_file ending in .dot "
                                 f"(written without Graphviz).") from None
    except PlotModelError as e:
        if "IPython.core.magics.namespace" not in sys.modules:  # IPython's namespace magics: a notebook or shell
            raise
        log.warning("%s", e)
        return None
    return None


def _check_built(model, who: str) -> None:
    if not getattr(model, "built", True):
        raise ValueError(f"{who}: model '{model.name}' has not been built yet, so it has no layer graph to draw. "
                         f"Build it first: give it an Input (keras.Input(shape=...)), call model.build(input_shape) "
                         f"or call it on a batch of data.")


__all__ = ["PlotModelError", "model_to_dot", "plot_model"]
