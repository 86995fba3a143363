"""EinsumDense's equation analysis (Keras 3's rules): from an equation, `bias_axes`, the input shape and the
partial `output_shape`, the kernel and bias shapes, the output shape, the kernel's fan axes, and the
equation with its ``...`` spelled out for a given input rank.

The three forms are ``ab,bc->ac``, ``...ab,bc->...ac`` (dims elided on the left, the batch among them) and
``ab...,bc->ac...`` (elided on the right). The output shape is the batch dim, then `output_shape`, with the
elided dims where the ellipsis stands. Two places where Keras 3.15's `compute_output_shape` is off are
right here: a dim shared by input and output that `output_shape` leaves None takes the input's size, and
two or more dims elided on the left keep their order (Keras reverses them); both are what the call gives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FORMS = (("", re.compile(r"([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)")),
          ("left", re.compile(r"0([a-zA-Z]+),([a-zA-Z]+)->0([a-zA-Z]+)")),
          ("right", re.compile(r"([a-zA-Z]{2,})0,([a-zA-Z]+)->([a-zA-Z]+)0")))


def parse(who: str, equation) -> tuple[str, str, str, str]:
    """(input, weight, output subscripts, where the ellipsis is: "", "left" or "right")."""
    text = re.sub(r"\.\.\.", "0", equation) if isinstance(equation, str) else ""
    for where, form in _FORMS:
        m = form.fullmatch(text)
        if m:
            return m.group(1), m.group(2), m.group(3), where
    raise ValueError(f"{who}: Invalid einsum equation '{equation}'. Equations must be in the form [X],[Y]->[Z], "
                     f"...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")


@dataclass(frozen=True)
class EinsumPlan:
    """What an EinsumDense equation means for one input shape."""

    input_spec: str
    weight_spec: str
    output_spec: str
    ellipsis: str  # "", "left" or "right"
    elided: int  # how many input dims the ellipsis stands for
    kernel_shape: tuple[int, ...]
    bias_shape: tuple[int, ...] | None
    output_shape: tuple[int | None, ...]
    input_axes: tuple[int, ...]  # the kernel's axes contracted with the input (its fan-in)
    output_axes: tuple[int, ...]  # the kernel's axes that reach the output (its fan-out)

    def subscripts(self) -> tuple[str, str, str]:
        """(input, kernel, output) subscripts with the elided dims given letters of their own."""
        used = set(self.input_spec + self.weight_spec + self.output_spec)
        spare = "".join(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in used)
        extra = spare[:self.elided]
        if self.ellipsis == "left":
            return extra + self.input_spec, self.weight_spec, extra + self.output_spec
        if self.ellipsis == "right":
            return self.input_spec + extra, self.weight_spec, self.output_spec + extra
        return self.input_spec, self.weight_spec, self.output_spec


def analyze(who: str, equation, bias_axes, input_shape, partial_output_shape) -> EinsumPlan:
    """The `EinsumPlan` of `equation` for inputs of `input_shape` (Keras 3's `_analyze_einsum_string`)."""
    in_spec, w_spec, out_spec, where = parse(who, equation)
    input_shape = tuple(input_shape)
    elided = len(input_shape) - len(in_spec)
    if elided < 0 or (elided and not where):
        form = {"": "exactly", "left": "at least", "right": "at least"}[where]
        raise ValueError(f"{who}: the equation '{equation}' gives the input {len(in_spec)} dims, so it expects "
                         f"inputs of {form} rank {len(in_spec)}; received input shape {input_shape}.")
    partial = list(partial_output_shape)
    if where == "left":
        full = [input_shape[0]] + list(input_shape[1:elided]) + partial
        in_pos = {c: i + elided for i, c in enumerate(in_spec)}
        out_pos = {c: i + elided for i, c in enumerate(out_spec)}
    else:
        full = [input_shape[0]] + partial + (list(input_shape[len(input_shape) - elided:]) if elided else [])
        in_pos = {c: i for i, c in enumerate(in_spec)}
        out_pos = {c: i for i, c in enumerate(out_spec)}
    if max(out_pos.values(), default=-1) >= len(full):
        raise ValueError(f"{who}: output_shape={tuple(partial_output_shape)} is too short for the output "
                         f"'{out_spec}' of '{equation}': give one size (or None) per output dim after the batch.")
    for c in in_spec:
        if c in out_pos and full[out_pos[c]] is not None and full[out_pos[c]] != input_shape[in_pos[c]]:
            raise ValueError(f"{who}: Input shape and output shape do not match at shared dimension '{c}'. Input "
                             f"shape is {input_shape[in_pos[c]]}, and output shape is {full[out_pos[c]]}.")
    for c in out_spec:
        if c not in in_spec and c not in w_spec:
            raise ValueError(f"{who}: Dimension '{c}' was specified in the output '{out_spec}' but has no "
                             f"corresponding dim in the input spec '{in_spec}' or weight spec '{w_spec}'.")
    kernel, in_axes, out_axes = [], [], []
    for i, c in enumerate(w_spec):
        if c in out_pos:
            kernel.append(full[out_pos[c]])
            out_axes.append(i)
        elif c in in_pos:
            kernel.append(input_shape[in_pos[c]])
            in_axes.append(i)
        else:
            raise ValueError(f"{who}: Weight dimension '{c}' did not have a match in either the input spec "
                             f"'{in_spec}' or the output spec '{out_spec}'. For this layer, the weight must be "
                             f"fully specified.")
        if kernel[-1] is None:
            raise ValueError(f"{who}: the kernel's dim '{c}' of '{equation}' has no known size (input shape "
                             f"{input_shape}, output_shape={tuple(partial_output_shape)}); give its size in "
                             f"output_shape.")
    bias = None if bias_axes is None else _bias_shape(who, bias_axes, out_spec, full, out_pos, where, elided)
    true_out = list(full)
    for c in in_spec:  # shared dims left None in output_shape are the input's
        if c in out_pos and true_out[out_pos[c]] is None:
            true_out[out_pos[c]] = input_shape[in_pos[c]]
    true_out[0] = input_shape[0]
    return EinsumPlan(in_spec, w_spec, out_spec, where, elided, tuple(kernel), bias, tuple(true_out),
                      tuple(in_axes), tuple(out_axes))


def _bias_shape(who, bias_axes, out_spec, full, out_pos, where, elided) -> tuple[int, ...]:
    """The bias: the output's dims from the first bias axis on, 1 where a dim takes no bias (Keras 3)."""
    for c in bias_axes:
        if c not in out_spec:
            raise ValueError(f"{who}: Bias dimension '{c}' was requested, but is not part of the output spec "
                             f"'{out_spec}'.")
    if not bias_axes:
        raise ValueError(f"{who}: bias_axes='' names no output dim; pass None for no bias, or output dims such "
                         f"as '{out_spec[-1]}'.")
    first = min(out_spec.find(c) for c in bias_axes)
    shape = []
    for c in out_spec[first:]:
        size = full[out_pos[c]] if c in bias_axes else 1
        if size is None:
            raise ValueError(f"{who}: the bias's dim '{c}' has no known size (output_shape gives None there); "
                             f"give its size in output_shape.")
        shape.append(size)
    if where != "left":
        shape += [1] * elided
    return tuple(shape)
