"""`Model.summary()`: Keras 3's table (box-drawn, as its `rich` console prints it without colour).

Columns: "Layer (type)", "Output Shape", "Param #", plus "Connected to" for non-sequential functional
models and "Trainable" with `show_trainable`. Widths follow Keras: a total of 88 (sequential) or 108
characters, capped at the terminal width minus 4, split by `positions`, then shrunk evenly as rich does
so that the borders fit; cell text wraps at spaces.
"""

from __future__ import annotations

import math
import re
import shutil
import sys

import numpy as np

from flexflow_keras.ops.graph import user_shape


def readable_size(nbytes: float) -> str:
    """``1.55 MB`` style sizes, as Keras prints them."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if nbytes / 1024 < 1:
            return f"{nbytes:.2f} {unit}"
        nbytes /= 1024
    return f"{nbytes:.2f} PB"


def _size_of(weights) -> int:
    unique = {id(w): w for w in weights}.values()
    return int(sum(math.prod(w.shape) * np.dtype(w.dtype).itemsize for w in unique))


def _count(weights) -> int:
    unique = {id(w): w for w in weights}.values()
    return int(sum(math.prod(w.shape) for w in unique))


def _reduce(total: int, widths: list[int]) -> list[int]:
    """Take `total` off `widths` in equal shares, rounding as rich's `ratio_reduce` does."""
    out, remaining, ratio_left = [], total, len(widths)
    for w in widths:
        take = min(w, round(remaining / ratio_left)) if ratio_left else 0
        out.append(w - take)
        remaining -= take
        ratio_left -= 1
    return out


def _wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap; a word longer than the cell is cut with an ellipsis (rich's default)."""
    if width <= 0:
        return [""]
    lines: list[str] = []
    for para in text.split("\n"):
        words = re.findall(r"^\s+|\S+\s*", para) or [""]
        line = ""
        for word in words:
            if len((line + word).rstrip()) <= width:
                line += word
                continue
            if line:
                lines.append(line.rstrip())
            line = word if len(word.rstrip()) <= width else word.rstrip()[:width - 1] + "…"
        lines.append(line.rstrip())
    return lines


def render_table(header: list[str], rows: list[list[str]], widths: list[int], align: list[str]) -> list[str]:
    """The box-drawn table; `widths` are the column widths including one space of padding each side."""
    inner = [w - 2 for w in widths]

    def border(left, fill, mid, right):
        return left + mid.join(fill * w for w in widths) + right

    def cells(values: list[str], vbar: str) -> list[str]:
        wrapped = [_wrap(v, w) for v, w in zip(values, inner, strict=False)]
        height = max(len(c) for c in wrapped)
        out = []
        for i in range(height):
            parts = []
            for c, w, a in zip(wrapped, inner, align, strict=False):
                text = c[i] if i < len(c) else ""
                if a == "right":
                    text = text.rjust(w)
                elif a == "center":
                    text = text.center(w)
                else:
                    text = text.ljust(w)
                parts.append(f" {text} ")
            out.append(vbar + vbar.join(parts) + vbar)
        return out

    lines = [border("┏", "━", "┳", "┓")]
    lines += cells(header, "┃")
    lines.append(border("┡", "━", "╇", "┩"))
    for i, row in enumerate(rows):
        if i:
            lines.append(border("├", "─", "┼", "┤"))
        lines += cells(row, "│")
    lines.append(border("└", "─", "┴", "┘"))
    return lines


def format_shape(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")"


def layer_output_shape(layer) -> str:
    """The output shape of the layer's last call ("?" when it was never called)."""
    if layer._inbound_nodes:
        outs = layer._inbound_nodes[-1].output_tensors
        shapes = [format_shape(user_shape(t)) for t in outs]  # with the batch an Input declared, as Keras 3
        return shapes[0] if len(shapes) == 1 else "[" + ", ".join(shapes) + "]"
    if getattr(layer, "_build_input_shape", None) is not None and layer.built:
        try:
            shape = layer.compute_output_shape(layer._build_input_shape)
        except Exception:  # noqa: BLE001 - a summary must not fail on a layer it cannot trace
            return "?"
        if isinstance(shape, list):
            return "[" + ", ".join(format_shape(s) for s in shape) + "]"
        return format_shape(shape)
    return "?"


def summary_text(model, line_length=None, positions=None, expand_nested=False, show_trainable=False,
                 layer_range=None) -> str:
    """The whole summary as one string (ending with a newline), as `print_fn` receives it."""
    layers, sequential_like, relevant = model._summary_layers()
    if sequential_like:
        default_length, positions = 88, positions or [0.45, 0.80, 1.0]
        header, align = ["Layer (type)", "Output Shape", "Param #"], ["left", "left", "right"]
    else:
        default_length, positions = 108, positions or [0.3, 0.56, 0.74, 1.0]
        header = ["Layer (type)", "Output Shape", "Param #", "Connected to"]
        align = ["left", "left", "right", "left"]
    if show_trainable:
        default_length += 12
        positions = [p * 0.90 for p in positions] + [1.0]
        header.append("Trainable")
        align.append("center")
    default_length = min(default_length, shutil.get_terminal_size().columns - 4)
    line_length = line_length or default_length
    if positions[-1] <= 1:
        positions = [int(p * line_length) for p in positions]
    widths, current = [], 0
    for pos in positions:
        width = int(pos) - current
        if width < 4:
            raise ValueError(f"summary(): line_length={line_length} is too narrow for the columns; pass a "
                             "larger line_length.")
        widths.append(width)
        current += width
    # rich renders each column at width + 2 (padding) and shrinks them evenly to fit the borders.
    widths = [w + 2 for w in widths]
    excess = sum(widths) + len(widths) + 1 - line_length
    if excess > 0:
        widths = _reduce(excess, widths)

    def connections(layer) -> str:
        parts = []
        for node in layer._inbound_nodes:
            if relevant is not None and id(node) not in relevant:
                continue
            for t in node.input_tensors:
                hist = t._keras_history
                if hist is not None:
                    parts.append(f"{hist.operation.name}[{hist.node_index}][{hist.tensor_index}]")
        return ", ".join(parts) or "-"

    def fields(layer, prefix="") -> list[str]:
        cls = getattr(layer, "_display_class", type(layer).__name__)
        params = f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"
        row = [f"{prefix}{layer.name} ({cls})", layer_output_shape(layer), params]
        if not sequential_like:
            row.append(connections(layer))
        if show_trainable:
            row.append(("Y" if layer.trainable else "N") if layer.weights else "-")
        return row

    def rows_of(layer, level=0) -> list[list[str]]:
        prefix = "   " * level + "└ " if level else ""
        out = [fields(layer, prefix)]
        if expand_nested and hasattr(layer, "_op_graph") and layer.layers:
            for sub in layer.layers:
                out.extend(rows_of(sub, level + 1))
        return out

    lo, hi = _range(layers, layer_range)
    rows = [r for layer in layers[lo:hi] for r in rows_of(layer)]
    lines = [f'Model: "{model.name}"']
    lines += render_table(header, rows, widths, align)
    trainable, non_trainable = model.trainable_weights, model.non_trainable_weights
    opt_specs = []  # Keras 3 counts a built optimizer's variables (iterations, learning rate, slots)
    optimizer = getattr(model, "optimizer", None)
    if getattr(model, "compiled", False) and getattr(optimizer, "built", False) and \
            hasattr(optimizer, "keras_variable_specs"):
        opt_specs = optimizer.keras_variable_specs(trainable)
    opt_count = sum(math.prod(shape) for shape, _ in opt_specs)
    opt_size = sum(math.prod(shape) * np.dtype(dtype).itemsize for shape, dtype in opt_specs)
    total = _count(trainable) + _count(non_trainable) + opt_count
    total_size = _size_of(trainable) + _size_of(non_trainable) + opt_size
    lines.append(f" Total params: {total:,} ({readable_size(total_size)})")
    lines.append(f" Trainable params: {_count(trainable):,} ({readable_size(_size_of(trainable))})")
    lines.append(f" Non-trainable params: {_count(non_trainable):,} ({readable_size(_size_of(non_trainable))})")
    if opt_specs:
        lines.append(f" Optimizer params: {opt_count:,} ({readable_size(opt_size)})")
    return "\n".join(lines) + "\n"


def _range(layers, layer_range) -> tuple[int, int]:
    if layer_range is None:
        return 0, len(layers)
    if len(layer_range) != 2 or not all(isinstance(s, str) for s in layer_range):
        raise ValueError(f"summary(layer_range=...) expects two layer names (or regexes), received "
                         f"{layer_range!r}.")
    lower = [i for i, layer in enumerate(layers) if re.match(layer_range[0], layer.name)]
    upper = [i for i, layer in enumerate(layers) if re.match(layer_range[1], layer.name)]
    if not lower or not upper:
        raise ValueError(f"summary(layer_range={layer_range!r}) matches no layer; layers: "
                         f"{[layer.name for layer in layers]}.")
    if min(lower) > max(upper):
        return min(upper), max(lower) + 1
    return min(lower), max(upper) + 1


def print_summary(model, line_length=None, positions=None, print_fn=None, expand_nested=False,
                  show_trainable=False, layer_range=None) -> None:
    """Print the summary to stdout, or pass it to `print_fn` as one string (Keras 3's behaviour)."""
    text = summary_text(model, line_length, positions, expand_nested, show_trainable, layer_range)
    if print_fn is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        print_fn(text)
