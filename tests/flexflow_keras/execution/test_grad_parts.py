"""Replicated weights' gradients written in parts and summed in tiles (execution/grad_parts.py) give the
numbers of the `Reduce("+")` they replace: its bits under data parallelism on two processors, with the
optimizer variants that update in tiles or whole (momentum SGD, Adam with an L2 regularizer, a
constraint, global clipnorm), and within rounding under random strategies (every weight eligible)."""

import numpy as np
import pytest
from strategy_cases import MODELS, graph_of, random_strategy, train

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.execution import grad_parts, updates

NEVER = 1 << 62


@pytest.fixture
def sums(monkeypatch):
    """Counts the sums of parts planned (so a test knows the parts path ran)."""
    planned = []
    real = grad_parts.sum_launch

    def spy(prog, lay, w):
        planned.append(w.path)
        return real(prog, lay, w)

    monkeypatch.setattr(grad_parts, "sum_launch", spy)
    return planned


def both(monkeypatch, run):
    """(with the reduction, with parts for every replicated weight) results of `run()`."""
    monkeypatch.setattr(grad_parts, "PARTS_MIN_ELEMENTS", NEVER)
    ref = run()
    monkeypatch.setattr(grad_parts, "PARTS_MIN_ELEMENTS", 1)
    return ref, run()


def assert_bits(got, want):
    (l1, w1), (l0, w0) = got, want
    assert l1 == l0
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_strategies_with_parts_match_the_reduction(name, seed, monkeypatch, sums):
    """Within rounding: with three processors the reduction's folds run in the order they get ready."""
    strategy = random_strategy(graph_of(name), np.random.default_rng(seed), 3)
    (l0, w0), (l1, w1) = both(monkeypatch, lambda: train(name, strategy, cpus=3))
    np.testing.assert_allclose(l1, l0, rtol=1e-5, atol=1e-6)
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


def wide_model(variant: str):
    keras.backend.clear_session()
    keras.utils.set_random_seed(11)
    reg = keras.regularizers.L2(1e-3) if variant == "adam_l2" else None
    con = keras.constraints.MaxNorm(1.5) if variant == "constraint" else None
    model = keras.Sequential([keras.Input((6, 6, 3)), layers.Conv2D(8, 3, activation="relu"),
                              layers.BatchNormalization(), layers.Flatten(),
                              layers.Dense(24, activation="relu", kernel_regularizer=reg, kernel_constraint=con),
                              layers.Dense(4, activation="softmax")])
    opt = {"sgd": keras.optimizers.SGD(0.05, momentum=0.9), "adam_l2": keras.optimizers.Adam(1e-2),
           "constraint": keras.optimizers.Adam(1e-2), "clip": keras.optimizers.Adam(1e-2, global_clipnorm=0.5)}
    model.compile(optimizer=opt[variant], loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def fit_data_parallel(variant: str):
    config.set(cpus=2, data_parallel_degree=2)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((32, 6, 6, 3)).astype("float32")
    y = rng.integers(0, 4, 32)
    model = wide_model(variant)
    hist = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    return hist.history["loss"], model.get_weights()


@pytest.mark.parametrize("variant", ["sgd", "adam_l2", "constraint", "clip"])
def test_data_parallel_parts_give_the_reductions_bits(variant, monkeypatch, sums):
    ref, got = both(monkeypatch, lambda: fit_data_parallel(variant))
    assert sums, "no gradient was written in parts"
    assert_bits(got, ref)


def test_large_weights_only_by_default(sums):
    fit_data_parallel("sgd")
    assert sums == []  # 24 * 72 elements: below PARTS_MIN_ELEMENTS, the reduction stays


def test_the_update_of_a_summed_gradient_runs_in_its_tiles(monkeypatch):
    monkeypatch.setattr(grad_parts, "PARTS_MIN_ELEMENTS", 1)
    tiled = []
    real = updates._tiled_update

    def spy(prog, v, boxes, procs):
        tiled.append((v.path, len(boxes), len({p.uid for p in procs})))
        return real(prog, v, boxes, procs)

    monkeypatch.setattr(updates, "_tiled_update", spy)
    fit_data_parallel("sgd")
    assert any(n == 2 and p == 2 for _, n, p in tiled), tiled
