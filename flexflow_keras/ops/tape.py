"""Eager gradients: `GradientTape` records the ops that run on arrays while it is open, and `gradient`
runs each recorded op's own backward (the kernels training runs) in reverse order.

This is `tf.GradientTape` for the scripts that compute gradients themselves: custom training loops
(``tape.gradient(loss, model.trainable_weights)`` then ``optimizer.apply_gradients``), GANs with two
tapes, gradients with respect to inputs (adversarial examples) or to activations (Grad-CAM). Every op that
runs eagerly goes through `apply_op` (layers, models called on arrays, `keras.ops`, losses, the TensorFlow
math that `tf_compat` maps), and arithmetic on `EagerTensor`s while a tape records is routed to those ops,
so the tape sees the whole computation.

A value is known by its buffer (address, shape, strides, dtype), not by its Python object, so
``np.asarray(t)`` of a recorded tensor and a Variable's ``value`` are the same value to the tape. The tape
holds every value it recorded until its gradient has been taken (a persistent tape: until it is dropped),
so no buffer is reused while it is open.

What TensorFlow does, this does: the gradient of a non-scalar target is that of its sum; a source the
target does not depend on gets None (or zeros with ``unconnected_gradients="zero"``); a tensor computed
before the tape opened is a source only once ``tape.watch(t)`` was called; a non-persistent tape gives
one gradient.

Gradients of gradients (WGAN-GP's gradient penalty, a PINN's d2u/dx2): when `gradient` runs while another
tape records (an outer one, or this one, persistent, still inside its block), each op's backward runs as
ops (its rule in ops/backward_ops.py: Dense's ``dy @ W.T``, Conv2D's transposed convolution, tanh's
``dy * (1 - y**2)``, ...), which the recording tapes record like any other; a Variable's copy kept by an
entry is known to them by the Variable's key (`_ALIASES`). Otherwise (the ordinary case) the kernels run, as
before. An op without a rule gets its kernels' gradient, marked on the recording tapes, so only a target that
depends on its second derivative is an error naming the layer and the op, never a silently missing term.
`jacobian` and `batch_jacobian` take one gradient per target element from the kept recording.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import numpy as np

from flexflow_keras.errors import GraphError, TapeUsedError
from flexflow_keras.ops import eager_split

_ACTIVE: list[GradientTape] = []  # open tapes, innermost last
_ALIASES: dict = {}  # while a gradient runs as ops: key of a Variable's kept copy -> the Variable's key


@dataclass
class _Entry:
    op: object
    in_keys: list  # per input: its buffer key
    arrays: list  # the arrays the forward read
    weight_keys: list
    wvals: list
    outs: list
    saved: list
    stats: list
    ctx: object
    name: str | None
    layer: str | None = None  # the layer whose weights the op read (for errors), from a weight's path


def _is_variable(value) -> bool:
    from flexflow_keras.ops.graph import Variable

    return isinstance(value, Variable)


def key(value) -> tuple | None:
    """The tape's name for an array value (a Variable's value buffer for a Variable); None for others."""
    if _is_variable(value):
        value = value.value
    if not isinstance(value, np.ndarray):
        return None
    info = value.__array_interface__
    return info["data"][0], value.shape, value.strides, value.dtype.str


def recording() -> bool:
    """Whether an open tape records (ops on arrays are then worth routing through `apply_op`)."""
    return any(t._recording for t in _ACTIVE)


def read_variable(variable) -> None:
    """Called where an eager op reads a Variable's value (`keras.ops` on a Variable, a layer's weight):
    the recording tapes list it in `watched_variables`."""
    k = key(variable)
    for t in _ACTIVE:
        if t._recording:
            t._variables.setdefault(k, variable)


def record(op, inputs, arrays, weights, wvals, outs, saved, stats, ctx, name) -> None:
    """Called by `apply_op` after an eager forward: note it on every recording tape."""
    tapes = [t for t in _ACTIVE if t._recording]
    if not tapes:
        return
    for w in weights:
        if _is_variable(w):
            read_variable(w)
    # A Variable's buffer changes in place later (assign, an optimizer step, BatchNorm's moving statistics):
    # the entry keeps a copy of the values the forward read, under the Variable's own key.
    variables = set().union(*(t._variables for t in tapes))
    in_keys, w_keys = [key(a) for a in arrays], [key(w) for w in wvals]
    arrays = [a.copy() if k in variables else a for k, a in zip(in_keys, arrays, strict=True)]
    wvals = [w.copy() if k in variables else w for k, w in zip(w_keys, wvals, strict=True)]
    if _ALIASES:  # a backward-as-ops reads a Variable's kept copy: it is the Variable to the tapes
        in_keys, w_keys = [_ALIASES.get(k, k) for k in in_keys], [_ALIASES.get(k, k) for k in w_keys]
    paths = [w.path for w in weights if _is_variable(w) and "/" in str(w.path)]
    entry = _Entry(op, in_keys, arrays, w_keys, wvals, [np.asarray(o) for o in outs], list(saved), list(stats),
                   ctx, name, paths[0].rsplit("/", 1)[0] if paths else None)
    for t in tapes:
        t._entries.append(entry)


def tracked(value) -> bool:
    """Whether a recording tape can differentiate through `value`: a watched value, a Variable it read, or
    the output of an op it recorded."""
    k = key(value)
    if k is None:
        return False
    for t in _ACTIVE:
        if t._recording and (k in t._watched or k in t._variables
                             or any(key(o) == k for e in t._entries for o in e.outs)):
            return True
    return False


def note_untracked(inputs, result, what: str) -> None:
    """A NumPy computation on values while a tape records (``np.sinh(x)``, ``x[mask]``): its float results
    are marked, so that a gradient depending on them is an error naming `what` rather than a silent zero
    (a result no recorded value reaches is never asked about)."""
    from flexflow_keras.utils import tree

    tapes = [t for t in _ACTIVE if t._recording]
    if not tapes:
        return
    in_keys = [key(a) for a in inputs if isinstance(a, np.ndarray)]
    outs = [np.asarray(r) for r in tree.flatten(result) if isinstance(r, np.ndarray) and r.dtype.kind in "fc"]
    outs = [o for o in outs if key(o) not in in_keys]  # a view that is the input itself is that input
    if not in_keys or not outs:
        return
    entry = _Entry(_Untracked(what), in_keys, [], [], [], outs, [], [], None, what)
    for t in tapes:
        t._entries.append(entry)


def _floating(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind in "fc"


class GradientTape:
    """Record eager ops; ``gradient(target, sources)`` differentiates `target` with respect to `sources`.

    Args:
        persistent: allow more than one `gradient` call (the recording is kept until the tape is dropped).
        watch_accessed_variables: with False, only what `watch` named is a source (TensorFlow's rule);
            the default makes every Variable a source.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True):
        self.persistent = bool(persistent)
        self.watch_accessed_variables = bool(watch_accessed_variables)
        self._entries: list[_Entry] = []
        self._watched: set = set()
        self._keep: list = []  # watched values, held so their buffers stay theirs
        self._variables: dict = {}  # key -> Variable read while recording (`watched_variables`)
        self._recording = False
        self._used = False
        self._looping = False  # a jacobian's gradients: the recording is kept until the last

    def __enter__(self):
        self._recording = True
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc):
        self._recording = False
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        return False

    def watch(self, tensor) -> None:
        """Make `tensor` (an array, a Variable, or a list or dict of them) a source for `gradient`."""
        from flexflow_keras.utils import tree

        for t in tree.flatten(tensor):
            k = key(t)
            if k is None:
                raise GraphError(f"GradientTape.watch: expected an array or a Variable, received "
                                 f"{type(t).__name__}. Convert it first (keras.ops.convert_to_tensor or np.asarray) "
                                 f"and pass the converted value to the model.")
            self._watched.add(k)
            self._keep.append(t)
            if _is_variable(t):
                self._variables.setdefault(k, t)

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops run inside this block are not recorded."""
        was, self._recording = self._recording, False
        try:
            yield
        finally:
            self._recording = was

    def reset(self) -> None:
        """Forget everything recorded so far."""
        self._entries.clear()
        self._variables.clear()

    def watched_variables(self) -> list:
        """The trainable Variables the recorded ops read (and the watched ones), in first-read order."""
        return [v for k, v in self._variables.items()
                if (v.trainable and self.watch_accessed_variables) or k in self._watched]

    def gradient(self, target, sources, output_gradients=None, unconnected_gradients=None):
        """d(sum of `target`)/d`source` for each source, in the structure of `sources`."""
        from flexflow_keras.utils import tree

        if self._used and not self.persistent:
            raise TapeUsedError("GradientTape.gradient can only be called once on a non-persistent tape. "
                             "Create the tape with tf.GradientTape(persistent=True) to take several gradients "
                             "from one recording.")
        if unconnected_gradients not in (None, "none", "zero") and str(unconnected_gradients).lower() not in (
                "unconnectedgradients.none", "unconnectedgradients.zero"):
            raise GraphError(f"GradientTape.gradient: unconnected_gradients must be 'none' or 'zero', received "
                             f"{unconnected_gradients!r}.")
        zero_unconnected = "zero" in str(unconnected_gradients).lower()
        targets = [t for t in tree.flatten(target) if t is not None]
        seeds = tree.flatten(output_gradients) if output_gradients is not None else [None] * len(targets)
        if len(seeds) != len(targets):
            raise GraphError(f"GradientTape.gradient: {len(targets)} targets but {len(seeds)} output_gradients.")
        # Another open tape (or this one, persistent, still recording) records this gradient: it runs as
        # differentiable ops (ops/backward_ops.py) so that tape can differentiate it; otherwise the kernels.
        as_ops = any(t._recording and (t is not self or self.persistent) for t in _ACTIVE)
        grads: dict = {}
        for t, s in zip(targets, seeds, strict=True):
            arr = t.value if _is_variable(t) else np.asarray(t)
            if arr.dtype.kind not in "fc":
                continue
            if as_ops and s is not None and np.shape(s) == arr.shape and np.asarray(s).dtype == arr.dtype:
                g = np.asarray(s)  # a recorded seed stays itself (a vector-Jacobian product's vector)
            else:
                g = np.ones_like(arr) if s is None else np.array(np.broadcast_to(np.asarray(s, arr.dtype), arr.shape))
            k = key(arr)
            grads[k] = _accumulate(grads[k], g, as_ops) if k in grads else g
        flat_sources = tree.flatten(sources)
        source_keys = [key(s) for s in flat_sources]
        reach = self._sources(flat_sources, source_keys)
        seeded = set(grads)
        lookups = self._backward(grads, reach, as_ops)
        out = []
        for s, k in zip(flat_sources, source_keys, strict=True):
            g = grads.get(k) if k in reach else None
            if g is None and zero_unconnected and k is not None:
                like = s.value if _is_variable(s) else np.asarray(s)
                g = np.zeros(like.shape, like.dtype)
            g = None if g is None else _as_eager(g)
            if g is not None and lookups.get(k) and k not in seeded:
                # a table only lookups read: TensorFlow's IndexedSlices, which optimizer.apply_gradients
                # reads per lookup (execution/sparse_moments.py); arithmetic on g gives a plain tensor
                g._ff_lookups = SparseRows(lookups[k], g)
            out.append(g)
        if not self.persistent and not self._looping:
            self._used = True
            self._entries = []
        return tree.pack_as(sources, out)

    def jacobian(self, target, sources, unconnected_gradients=None, parallel_iterations=None,
                 experimental_use_pfor=True):
        """d`target`/d`source` for each source: shape ``target.shape + source.shape``, one gradient per element
        of `target` (a loop, not TensorFlow's vectorised pfor; the result is a value, not itself recorded).

        Example:
            >>> with GradientTape() as tape:
            ...     tape.watch(x)
            ...     y = x * x
            >>> tape.jacobian(y, x)  # diag(2 x) for a vector x
        """
        return self._jacobian(target, sources, unconnected_gradients, batch=False)

    def batch_jacobian(self, target, source, unconnected_gradients=None, parallel_iterations=None,
                       experimental_use_pfor=True):
        """Per sample, d`target`[i]/d`source`[i]: shape ``(batch,) + target.shape[1:] + source.shape[1:]``,
        one gradient per element of a sample's target (samples must not depend on each other, as in
        TensorFlow)."""
        return self._jacobian(target, source, unconnected_gradients, batch=True)

    def _jacobian(self, target, sources, unconnected_gradients, batch: bool):
        from flexflow_keras.utils import tree

        if self._used and not self.persistent:
            self.gradient(target, sources)  # the same error as a second gradient
        t = target.value if _is_variable(target) else np.asarray(target)
        flat = tree.flatten(sources)
        shapes = [np.shape(s.value if _is_variable(s) else s) for s in flat]
        if batch and (t.ndim < 1 or any(len(sh) < 1 or sh[0] != t.shape[0] for sh in shapes)):
            raise GraphError(f"GradientTape.batch_jacobian: the target and the source need the same first (batch) "
                             f"dim, received target shape {t.shape} and source shape(s) {shapes}.")
        n = int(np.prod(t.shape[1:] if batch else t.shape, dtype=np.int64))
        rows = []
        self._looping = True
        try:
            for i in range(n):
                seed = np.zeros(t.shape, t.dtype)
                if batch:
                    seed.reshape(t.shape[0], -1)[:, i] = 1
                else:
                    seed.reshape(-1)[i] = 1
                rows.append(self.gradient(target, flat, output_gradients=seed,
                                          unconnected_gradients=unconnected_gradients))
        finally:
            self._looping = False
        if not self.persistent:
            self._used = True
            self._entries = []
        if n and any(t._recording and (t is not self or self.persistent) for t in _ACTIVE):
            return tree.pack_as(sources, self._recorded_jacobians(rows, t.shape, shapes, batch))
        out = []
        for j, shape in enumerate(shapes):
            if n and any(r[j] is None for r in rows):
                out.append(None)
            elif batch:
                stacked = np.stack([np.asarray(r[j]) for r in rows], axis=1) if n else np.zeros((t.shape[0], 0) + shape[1:], t.dtype)
                out.append(_as_eager(stacked.reshape(t.shape + shape[1:])))
            else:
                stacked = np.stack([np.asarray(r[j]) for r in rows]) if n else np.zeros((0,) + shape, t.dtype)
                out.append(_as_eager(stacked.reshape(t.shape + shape)))
        return tree.pack_as(sources, out)

    @staticmethod
    def _recorded_jacobians(rows, t_shape, shapes, batch: bool) -> list:
        """The Jacobians assembled from their rows (gradients written as recorded ops, another tape being
        open) by recorded stack and reshape, so that tape differentiates through them (a loss on a
        Jacobian, as physics-informed training takes)."""
        from flexflow_keras.ops import numpy_api as ops

        out = []
        for j, shape in enumerate(shapes):
            if any(r[j] is None for r in rows):
                out.append(None)
                continue
            stacked = ops.stack([r[j] for r in rows], axis=1 if batch else 0)
            out.append(ops.reshape(stacked, tuple(t_shape) + tuple(shape[1:] if batch else shape)))
        return out

    # --- internals -------------------------------------------------------------------------------------
    def _sources(self, flat_sources, source_keys) -> set:
        """Keys of the sources the tape can differentiate, and every recorded value that depends on them."""
        produced = {k for e in self._entries for k in map(key, e.outs)}
        ok = set()
        for s, k in zip(flat_sources, source_keys, strict=True):
            if k is None:
                raise GraphError(f"GradientTape.gradient: a source must be a Variable or an array, received "
                                 f"{type(s).__name__}.")
            auto = _is_variable(s) and s.trainable and self.watch_accessed_variables  # TensorFlow's rule
            if k in self._watched or k in produced or auto:
                ok.add(k)
        reach = set(ok)
        for e in self._entries:
            if any(k in reach for k in e.in_keys) or any(k in reach for k in e.weight_keys):
                reach.update(key(o) for o in e.outs)
        return reach

    def _backward(self, grads: dict, reach: set, as_ops: bool = False) -> dict:
        """Run the recorded ops' backward into `grads` (with `as_ops`, as recorded ops where the op has a
        rule); returns, per key of a weight whose gradient only lookups wrote (an Embedding's table), the
        (ids, gradient rows) of those lookups."""
        lookups: dict = {}
        dense: set = set()  # keys that some other op's gradient reached
        entries = list(self._entries)  # a persistent tape may record this very backward
        if as_ops:
            _ALIASES.update({key(a): k for e in entries for a, k in zip(e.arrays + e.wvals, e.in_keys + e.weight_keys,
                                                                        strict=True) if key(a) != k})
        try:
            for e in reversed(entries):
                out_keys = [key(o) for o in e.outs]
                if not any(k in grads for k in out_keys):
                    continue
                if isinstance(e.op, _SecondOrderOp):
                    if any(np.any(grads[k]) for k in out_keys if k in grads):
                        raise GraphError(e.op.message())
                    continue  # only zeros reach it (x + eps * sign(g), FGSM in adversarial training)
                gouts = [grads[k] if k in grads else np.zeros(o.shape, o.dtype)
                         for k, o in zip(out_keys, e.outs, strict=True)]
                if as_ops:
                    gouts = [g if np.asarray(g).dtype == o.dtype else _cast(g, o.dtype)
                             for g, o in zip(gouts, e.outs, strict=True)]
                else:
                    gouts = [np.asarray(g, dtype=o.dtype, order="C") for g, o in zip(gouts, e.outs, strict=True)]
                need_in = [k in reach and _floating(a) and e.op.is_differentiable(i)
                           for i, (k, a) in enumerate(zip(e.in_keys, e.arrays, strict=True))]
                need_w = [k in reach and _floating(w) for k, w in zip(e.weight_keys, e.wvals, strict=True)]
                if not any(need_in + need_w):
                    continue
                sparse = getattr(e.op, "sparse_weight_gradient", False)
                for j, (k, need) in enumerate(zip(e.weight_keys, need_w, strict=True)):
                    if need and sparse and j == 0 and k not in dense:  # ids and gradient rows, kept
                        lookups.setdefault(k, []).append((np.asarray(e.arrays[0]), gouts[0]))
                    elif need:
                        dense.add(k)
                        lookups.pop(k, None)
                dense.update(k for k, need in zip(e.in_keys, need_in, strict=True) if need)
                gin, gw = self._op_backward(e, gouts, need_in, need_w, as_ops)
                for k, g, a in zip(e.in_keys + e.weight_keys, gin + gw, e.arrays + e.wvals, strict=True):
                    if g is not None:
                        if as_ops and np.asarray(g).dtype != a.dtype:
                            g = _cast(g, a.dtype)
                        grads[k] = _accumulate(grads[k], g, as_ops) if k in grads else g
        finally:
            if as_ops:
                _ALIASES.clear()
        return {k: rows for k, rows in lookups.items() if k not in dense}

    @staticmethod
    def _op_backward(e: _Entry, gouts: list, need_in: list, need_w: list, as_ops: bool) -> tuple[list, list]:
        """One recorded op's input and weight gradients (None where not wanted): its rule's ops with `as_ops`
        (ops/backward_ops.py), else its kernels; an op without a rule gets its kernels' gradients marked on
        the recording tapes, so a target that depends on them is an error naming the op."""
        from flexflow_keras.ops import backward_ops

        rule = backward_ops.rule_for(e.op) if as_ops else None
        if rule is not None:
            try:
                gin, gw = rule(backward_ops.Args(e.op, e.arrays, e.wvals, e.outs, e.saved, gouts, need_in, need_w,
                                                 bool(e.ctx.training)))
            except backward_ops.NotTwiceDifferentiable as err:
                why = str(err)
            else:
                gin = [g if need else None for g, need in zip(list(gin) + [None] * len(need_in), need_in, strict=False)]
                gw = [g if need else None for g, need in zip(list(gw) + [None] * len(need_w), need_w, strict=False)]
                return gin, gw
        else:
            why = ""
        gin, gw = _kernel_backward(e, gouts, need_in, need_w)
        if as_ops:
            made = [np.asarray(g) for g in gin + gw if g is not None]
            read = [k for k in e.in_keys + e.weight_keys if k is not None] + [key(np.asarray(g)) for g in gouts]
            mark = _Entry(_NotTwiceDifferentiable(e.layer or e.name, e.op, why), read, [], [], [], made, [], [],
                          None, e.name)
            for t in _ACTIVE:
                if t._recording:
                    t._entries.append(mark)
        return gin, gw


# Op kinds whose backward kernels write every element of each gradient buffer they are handed (the tape
# asks them to overwrite, never to accumulate): their buffers start uninitialised, the others' at zero.
# Each is checked with NaN-filled buffers by tests/flexflow_keras/ops/test_tape_grad_buffers.py, which also
# lists every registered op kind as run by it or not reached by a tape. The kinds that scatter by index
# (gather, slice, embedding, top_k, ...) also passed, but stay zeroed: one of their variants could rely on
# it, and their buffers are small. Zeroing first cost keras.io's DCGAN a second pass over every
# convolution's input gradient (32x64x64x512 floats for the generator's last one).
OVERWRITING = frozenset({
    "activation", "activity_regularization", "add", "alpha_dropout", "batch_norm", "broadcast_to", "cast",
    "concatenate", "conv1d", "conv1d_transpose", "conv2d", "conv2d_transpose", "conv3d", "conv3d_transpose",
    "conv_lstm", "cumsum", "dense", "depthwise_conv1d", "depthwise_conv2d", "divide", "dropout", "einsum",
    "einsum_dense", "gaussian_noise", "global_pool2d", "image_resize", "image_value", "insert_axis",
    "layer_norm", "log_softmax", "loss", "matmul", "maximum", "minimum", "multiply", "pool1d", "pool2d", "pool3d",
    "power", "recurrent", "reduce", "regularization_penalty", "repeat", "reshape", "scalar", "softmax",
    "spatial_pad", "subtract", "tile", "transpose", "unary", "upsample", "weights_as_inputs", "where"})


def grad_buffers(e: _Entry, need_in: list, need_w: list) -> tuple[list, list]:
    """The input and weight gradient buffers of an entry's backward kernels (None where not wanted):
    uninitialised for the `OVERWRITING` op kinds, zeros for the others."""
    if e.op.type_name in OVERWRITING:
        fresh = np.empty_like
    else:  # calloc's zeroed pages for a C-ordered buffer, not zeros_like's extra pass over them
        def fresh(a):
            return np.zeros(a.shape, a.dtype) if a.flags.c_contiguous else np.zeros_like(a)
    return ([fresh(a) if need else None for a, need in zip(e.arrays, need_in, strict=True)],
            [fresh(w) if need else None for w, need in zip(e.wvals, need_w, strict=True)])


def run_backward(e: _Entry, gouts: list, gin: list, gw: list) -> None:
    """An entry's op's own backward kernels (the training step's), overwriting `gin` and `gw`."""
    from flexflow_keras.ops.base import KernelContext

    gouts = [np.asarray(g, dtype=o.dtype, order="C") for g, o in zip(gouts, e.outs, strict=True)]
    c, op = e.ctx, e.op
    ctx = KernelContext(backend="cpu", training=c.training, step=c.step, seed=c.seed, global_batch=c.global_batch,
                        accumulate_inputs=(False,) * len(gin), accumulate_weights=(False,) * len(gw))
    try:
        if op.two_stage_backward:
            op.backward_weights(ctx, e.arrays, e.wvals, e.outs, e.saved, e.stats, gouts, gw)
            op.backward_inputs(ctx, e.arrays, e.wvals, e.outs, e.saved, e.stats, gouts, gw, gin)
        else:
            eager_split.backward(op, ctx, e.arrays, e.wvals, e.outs, e.saved, e.stats, gouts, gin, gw)
    except NotImplementedError as err:
        raise GraphError(f"GradientTape.gradient: op '{e.name or op.type_name}' ({type(op).__name__}) "
                         f"has no gradient in flexflow_keras.") from err


def _kernel_backward(e: _Entry, gouts: list, need_in: list, need_w: list) -> tuple[list, list]:
    """An entry's gradients from its op's own backward kernels (the training step's)."""
    gin, gw = grad_buffers(e, need_in, need_w)
    run_backward(e, gouts, gin, gw)
    return gin, gw


def _accumulate(a, b, as_ops: bool):
    """a + b: a recorded add while the gradient runs as ops."""
    if not as_ops:
        return a + b
    from flexflow_keras.ops.base import apply_op
    from flexflow_keras.ops.math_ops import AddOp

    return apply_op(AddOp(), [a, b])


def _cast(g, dtype):
    from flexflow_keras.ops.base import apply_op
    from flexflow_keras.ops.math_ops import CastOp

    return apply_op(CastOp(str(np.dtype(dtype))), [g])


class SparseRows:
    """The lookups behind a table's gradient from `GradientTape.gradient` (TensorFlow's IndexedSlices): what
    an optimizer that squares the gradient per lookup reads (`Optimizer.sparse_moment_power`). The moment is
    computed only when asked, and only for the gradient as the tape returned it: a sample of its values is
    kept, and a gradient changed in place since (``g *= 0.5``) gets None (the update then squares the sum)."""

    _SAMPLES = 4096

    def __init__(self, pairs: list, grad):
        self.pairs = pairs
        self.sample = self._sample(grad)

    @classmethod
    def _sample(cls, grad) -> np.ndarray:
        flat = np.asarray(grad).reshape(-1)
        return flat[::max(1, flat.size // cls._SAMPLES)].copy()

    def moment(self, grad, power: int, dtype):
        """The sum over lookups of each one's gradient row squared (``power`` 1: absolute), or None when
        `grad` is no longer the gradient these lookups summed to."""
        from kernels.embedding import embedding_backward_moment_cpu

        if not np.array_equal(self._sample(grad), self.sample):
            return None
        q = np.zeros(np.shape(grad), dtype)
        for ids, rows in self.pairs:
            embedding_backward_moment_cpu(ids, np.asarray(rows, dtype), q, True, power=power)
        return q


class _SecondOrderOp:
    """Base of the marks a tape records for values it cannot differentiate (a gradient through an op with
    no backward as ops, a NumPy computation): a gradient that reaches one with a non-zero value is an
    error (`message`)."""

    type_name = "gradient"
    two_stage_backward = False

    def is_differentiable(self, i: int) -> bool:
        return True

    def message(self) -> str:
        raise NotImplementedError


class _NotTwiceDifferentiable(_SecondOrderOp):
    """Marks a gradient that an op's kernels computed while a tape recorded (see `GradientTape._op_backward`)."""

    def __init__(self, name: str | None, op, why: str = ""):
        self.name, self.op, self.why = name, op, why

    def message(self) -> str:
        what = f"'{self.name or self.op.type_name}' ({type(self.op).__name__}, op type '{self.op.type_name}')"
        why = f" ({self.why})" if self.why else ""
        return (f"GradientTape.gradient: the target depends on a gradient through {what} taken while this tape "
                f"recorded (a gradient penalty as in WGAN-GP, or a second derivative); second-order gradients "
                f"through {self.op.type_name}{why} are not supported in flexflow_keras. Differentiate a "
                f"model without this op twice, or leave the penalty out (weight clipping or a kernel_constraint "
                f"instead of WGAN-GP's penalty).")


class _Untracked(_SecondOrderOp):
    """Marks NumPy results computed from recorded values (see `note_untracked`)."""

    def __init__(self, what: str):
        self.what = what

    def message(self) -> str:
        return (f"GradientTape.gradient: the target depends on {self.what} computed with NumPy on a tensor the "
                f"tape records, which it cannot differentiate; use the keras.ops function of the same name (or "
                f"ops.take / ops.where for indexing with arrays).")


def _as_eager(a):
    from flexflow_keras.ops.eager_tensor import EagerTensor

    return np.asarray(a).view(EagerTensor)

