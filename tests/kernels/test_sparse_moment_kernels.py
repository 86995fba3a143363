"""The per-lookup moment kernels (CPU): the embedding's scatter of squared (or absolute) gradient rows,
and every optimizer update that reads such a moment in place of the square of the summed gradient
(kernels/optimizers.py's `moment_args`)."""

import numpy as np
import pytest

from flexflow_keras import optimizers
from kernels import embedding as E


def _reference(ids, dy, rows, row_offset, power):
    out = np.zeros((rows, dy.shape[-1]), np.float64)
    flat = dy.reshape(-1, dy.shape[-1]).astype(np.float64)
    for r, k in enumerate(ids.reshape(-1)):
        t = int(k) - row_offset
        if 0 <= t < rows:
            out[t] += np.abs(flat[r]) if power == 1 else flat[r] ** 2
    return out


@pytest.mark.parametrize("power", [1, 2])
@pytest.mark.parametrize("row_offset,rows", [(0, 9), (3, 4)])
def test_embedding_moment_matches_reference(power, row_offset, rows):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 9, (4, 6))
    ids[:, :3] = 2  # a token looked up many times: the sum of squares, not the square of the sum
    dy = rng.standard_normal((4, 6, 5)).astype(np.float32)
    got = np.full((rows, 5), 7.0, np.float32)
    E.embedding_backward_moment_cpu(ids, dy, got, row_offset=row_offset, power=power)
    want = _reference(ids, dy, rows, row_offset, power)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    E.embedding_backward_moment_cpu(ids.astype(np.float32), dy, got, True, row_offset=row_offset, power=power)
    np.testing.assert_allclose(got, 2 * want, rtol=1e-5, atol=1e-6)
    if row_offset == 0:
        g = np.zeros((rows, 5), np.float32)
        E.embedding_backward_cpu(ids, dy, g)
        assert not np.allclose(got / 2, np.abs(g) if power == 1 else g * g)


def test_embedding_moment_rejects_other_powers():
    with pytest.raises(ValueError, match="power must be 1 or 2"):
        E.embedding_backward_moment_cpu(np.zeros(2, np.int64), np.zeros((2, 3), np.float32),
                                        np.zeros((4, 3), np.float32), power=3)


MAKERS = {
    "adam": lambda: optimizers.Adam(0.01),
    "amsgrad": lambda: optimizers.Adam(0.01, amsgrad=True, weight_decay=0.01),
    "rmsprop": lambda: optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adagrad": lambda: optimizers.Adagrad(0.05),
    "nadam": lambda: optimizers.Nadam(0.01),
    "adamax": lambda: optimizers.Adamax(0.01),
    "adadelta": lambda: optimizers.Adadelta(1.0),
    "ftrl": lambda: optimizers.Ftrl(0.1, l1_regularization_strength=0.05, l2_shrinkage_regularization_strength=0.02),
}


def _train(make, moments_of, steps=4):
    opt = make()
    rng = np.random.default_rng(4)
    w = rng.standard_normal((6, 3)).astype(np.float32)
    slots = [np.full(w.shape, v, np.float32) for _, v in opt.slot_specs(w.shape)]
    for it in range(steps):
        g = rng.standard_normal(w.shape).astype(np.float32)
        q = moments_of(opt, g)
        opt.apply("cpu", it, opt.learning_rate_at(it), [w], [g], [slots], moments=None if q is None else [q])
    return w, slots


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_a_moment_equal_to_the_dense_one_gives_the_dense_update(name):
    # one lookup per row: the per-lookup moment is the square (Adamax: the absolute value) of the gradient
    dense = _train(MAKERS[name], lambda opt, g: None)
    same = _train(MAKERS[name], lambda opt, g: np.abs(g) if opt.sparse_moment_power == 1 else g * g)
    for a, b in zip([dense[0], *dense[1]], [same[0], *same[1]], strict=True):
        np.testing.assert_allclose(b, a, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_the_update_reads_the_moment(name):
    dense = _train(MAKERS[name], lambda opt, g: None)
    other = _train(MAKERS[name], lambda opt, g: 4.0 * (np.abs(g) if opt.sparse_moment_power == 1 else g * g))
    assert np.abs(other[0] - dense[0]).max() > 1e-5


def test_adam_second_moment_is_the_given_moment():
    opt = optimizers.Adam(0.01)
    w = np.ones((2, 2), np.float32)
    g = np.array([[1.0, -2.0], [0.5, 0.0]], np.float32)
    q = np.array([[3.0, 4.0], [0.25, 1.0]], np.float32)  # not g * g: a token looked up several times
    m, v = (np.zeros_like(w) for _ in range(2))
    opt.apply("cpu", 0, 0.01, [w], [g], [[m, v]], moments=[q])
    np.testing.assert_allclose(v, 0.001 * q, rtol=1e-6)
    np.testing.assert_allclose(m, 0.1 * g, rtol=1e-6)
    alpha = 0.01 * np.sqrt(1 - 0.999) / (1 - 0.9)
    np.testing.assert_allclose(w, 1 - alpha * m / (np.sqrt(v) + 1e-7), rtol=1e-6)


def test_moments_must_match_the_weights():
    opt = optimizers.Adam()
    w = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match="one moment"):
        opt.apply("cpu", 0, 0.01, [w, w], [w, w], [[w, w], [w, w]], moments=[w])
    with pytest.raises(ValueError, match="the weight's shape"):
        opt.apply("cpu", 0, 0.01, [w], [w], [[w.copy(), w.copy()]], moments=[np.zeros(4, np.float32)])
