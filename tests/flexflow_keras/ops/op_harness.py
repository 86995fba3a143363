"""Test one op forward and backward: against a reference, a numerical gradient, the accumulate flags,
and a data-parallel split that must reproduce the single-shard numbers.

Most op tests are one line: ``check_op(SomeOp(...), [x], [w], ref=lambda x, w: ...)``.
"""

from __future__ import annotations

import numpy as np

from flexflow_keras.ops.base import KernelContext
from flexflow_keras.ops.graph import TensorSpec
from kernels.reference import numerical_grad


def specs(arrays):
    return [TensorSpec(a.shape, str(a.dtype)) for a in arrays]


def concrete(spec, batch):
    return tuple(batch if s is None else s for s in spec.shape)


def _alloc(spec_list, batch, fill=np.nan):
    out = []
    for s in spec_list:
        dt = np.dtype(s.dtype)
        a = np.empty(concrete(s, batch), dt)
        a[...] = fill if dt.kind == "f" else 0
        out.append(a)
    return out


def run_forward(op, inputs, weights, training=False, step=3, seed=11, batch_offset=0, global_batch=None,
                stats=None):
    """Allocate outputs/saved/stats from the op's specs and run forward_stats (when stats) and forward.
    Returns (outputs, saved, stats, ctx)."""
    batch = inputs[0].shape[0] if inputs and inputs[0].ndim else 1
    ins, ws = specs(inputs), specs(weights)
    outs = _alloc(op.output_specs(ins, ws), batch)
    saved = _alloc(op.saved_specs(ins, ws), batch, 0)
    ctx = KernelContext(backend="cpu", training=training, step=step, seed=seed, batch_offset=batch_offset,
                        global_batch=global_batch or batch)
    if stats is None:
        stats = [np.zeros(concrete(s, batch), s.dtype) for s in op.stats_specs(ins, ws, training)]
        if stats:
            op.forward_stats(ctx, inputs, weights, stats)
    op.forward(ctx, inputs, weights, outs, saved, stats)
    return outs, saved, stats, ctx


def _wants(op, inputs, weights):
    gi = [op.is_differentiable(i) and np.asarray(x).dtype.kind == "f" for i, x in enumerate(inputs)]
    n_train = op.n_trainable_weights if op.n_trainable_weights is not None else len(weights)
    gw = [np.asarray(w).dtype.kind == "f" and j < n_train for j, w in enumerate(weights)]
    return gi, gw


def run_backward(op, inputs, weights, outs, saved, stats, dys, training=False, grad_inputs=None, grad_weights=None,
                 accumulate=False, want=None):
    """Run backward (or the two stages) into fresh buffers (NaN-filled unless `accumulate`, then ones).
    Returns (grad_inputs, grad_weights)."""
    gi_want, gw_want = want or _wants(op, inputs, weights)
    fill = 1.0 if accumulate else np.nan
    gin = grad_inputs or [np.full(x.shape, fill, x.dtype) if w else None for x, w in zip(inputs, gi_want, strict=True)]
    gw = grad_weights or [np.full(w.shape, fill, w.dtype) if k else None for w, k in zip(weights, gw_want, strict=True)]
    ctx = KernelContext(backend="cpu", training=training, step=3, seed=11, global_batch=inputs[0].shape[0],
                        accumulate_inputs=tuple([accumulate] * len(inputs)),
                        accumulate_weights=tuple([accumulate] * len(weights)))
    if op.two_stage_backward:
        op.backward_weights(ctx, inputs, weights, outs, saved, stats, dys, gw)
        op.backward_inputs(ctx, inputs, weights, outs, saved, stats, dys, gw, gin)
    else:
        op.backward(ctx, inputs, weights, outs, saved, stats, dys, gin, gw)
    return gin, gw


def check_op(op, inputs, weights=(), ref=None, training=False, grad=True, rtol=1e-6, atol=1e-8, shards=0,
             h=1e-6, grad_rtol=1e-5, grad_atol=1e-7):
    """Check `op` on float64 `inputs`/`weights`; returns the forward outputs.

    - forward output shapes and dtypes equal `output_specs`; `ref(*inputs, *weights)` (a value or tuple)
      matches when given;
    - backward matches a central-difference gradient of ``sum(output * dy)`` for every float input the op
      differentiates and every float weight, through both backward APIs the op has;
    - accumulate=True adds into the buffers (pre-filled with ones);
    - with `shards`, splitting the batch (stats folded across shards, two-stage backward with reduced weight
      gradients) reproduces the unsharded outputs and gradients.
    """
    inputs, weights = [np.asarray(x) for x in inputs], [np.asarray(w) for w in weights]
    outs, saved, stats, _ = run_forward(op, inputs, weights, training)
    for o, s in zip(outs, op.output_specs(specs(inputs), specs(weights)), strict=True):
        assert o.shape == concrete(s, inputs[0].shape[0]) and o.dtype == np.dtype(s.dtype), (o.shape, s)
    if ref is not None:
        want = ref(*inputs, *weights)
        want = want if isinstance(want, tuple) else (want,)
        for o, w in zip(outs, want, strict=True):
            np.testing.assert_allclose(o, w, rtol=rtol, atol=atol)
    if not grad or outs[0].dtype.kind != "f":
        return outs
    rng = np.random.default_rng(0)
    dys = [rng.standard_normal(o.shape) for o in outs]
    gin, gw = run_backward(op, inputs, weights, outs, saved, stats, dys, training)
    pool = inputs + weights
    for k, g in enumerate(gin + gw):
        if g is None:
            continue

        def f(v, k=k):
            args = list(pool)
            args[k] = v
            return run_forward(op, args[:len(inputs)], args[len(inputs):], training)[0][0]
        num = numerical_grad(f, pool[k], dys[0], h=h)
        np.testing.assert_allclose(g, num, rtol=grad_rtol, atol=grad_atol, err_msg=f"gradient {k} of {op}")
    # accumulate adds into the buffers (pre-filled with ones). A two-stage op's input stage reads the
    # weight-gradient buffers as the reduced sums, so those start at zero, as the execution zeroes them.
    gw0 = None
    if op.two_stage_backward:
        gw0 = [np.zeros_like(g) if g is not None else None for g in gw]
    gin2, gw2 = run_backward(op, inputs, weights, outs, saved, stats, dys, training, grad_weights=gw0,
                             accumulate=True)
    for a, b, base in zip(gin + gw, gin2 + gw2, [1.0] * len(gin) + [0.0 if gw0 else 1.0] * len(gw), strict=True):
        if a is not None:
            np.testing.assert_allclose(b, a + base, rtol=1e-9, atol=1e-9, err_msg=f"accumulate of {op}")
    if shards:
        check_sharded(op, inputs, weights, shards, training, outs, dys, gin, gw)
    return outs


def check_sharded(op, inputs, weights, shards, training, outs, dys, gin, gw):
    """Split every batched input along dim 0 as the data-parallel execution does and compare."""
    n = inputs[0].shape[0]
    pieces = np.array_split(np.arange(n), shards)
    batched = [x.ndim > 0 and x.shape[0] == n for x in inputs]

    def part(arrs, idx):
        return [a[idx] if b else a for a, b in zip(arrs, batched, strict=True)]

    ins, ws = specs(inputs), specs(weights)
    stats = [np.zeros(concrete(s, n), s.dtype) for s in op.stats_specs(ins, ws, training)]
    for idx in pieces:
        ctx = KernelContext(backend="cpu", training=training, step=3, seed=11, batch_offset=int(idx[0]),
                            global_batch=n)
        if stats:
            op.forward_stats(ctx, part(inputs, idx), weights, stats)
    results = []
    for idx in pieces:
        o, s, _, _ = run_forward(op, part(inputs, idx), weights, training, batch_offset=int(idx[0]), global_batch=n,
                                 stats=stats)
        results.append((idx, o, s))
    for k, o in enumerate(outs):
        np.testing.assert_allclose(np.concatenate([r[1][k] for r in results]), o, rtol=1e-10, atol=1e-12)
    gi_want, gw_want = _wants(op, inputs, weights)
    shared = [np.zeros_like(w) if k else None for w, k in zip(weights, gw_want, strict=True)]
    parts_gin = []
    for idx, o, s in results:
        d = [dy[idx] for dy in dys]
        ctx = KernelContext(backend="cpu", training=training, step=3, seed=11, global_batch=n,
                            accumulate_weights=tuple([True] * len(weights)))
        g_in = [np.full(x.shape, np.nan) if w else None for x, w in zip(part(inputs, idx), gi_want, strict=True)]
        if op.two_stage_backward:
            op.backward_weights(ctx, part(inputs, idx), weights, o, s, stats, d, shared)
            parts_gin.append((ctx, idx, o, s, d, g_in))
        else:
            op.backward(ctx, part(inputs, idx), weights, o, s, stats, d, g_in, shared)
            parts_gin.append((None, idx, o, s, d, g_in))
    for ctx, idx, o, s, d, g_in in parts_gin:
        if ctx is not None:
            op.backward_inputs(ctx, part(inputs, idx), weights, o, s, stats, d, shared, g_in)
    for i, g in enumerate(gin):
        if g is not None and batched[i]:
            np.testing.assert_allclose(np.concatenate([p[5][i] for p in parts_gin]), g, rtol=1e-9, atol=1e-10)
    for j, g in enumerate(gw):
        if g is not None:
            np.testing.assert_allclose(shared[j], g, rtol=1e-9, atol=1e-10)
