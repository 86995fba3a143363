"""fit/evaluate options against tf.keras on copied weights: class_weight, sample_weight (per output and
per timestep), loss/metric dicts and lists with loss_weights for a two-output functional model, metrics
versus weighted_metrics, and one weighted SGD step (the gradient of the weighted loss)."""

import numpy as np
import pytest

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402

pytestmark = pytest.mark.tf

rng = np.random.default_rng(7)
N = 24
X = rng.standard_normal((N, 5)).astype(np.float32)
YC = rng.integers(0, 3, N)
YR = rng.standard_normal((N, 1)).astype(np.float32)
SW = rng.uniform(0.2, 2.0, N).astype(np.float32)


@pytest.fixture(autouse=True, scope="module")
def _one_processor():
    ff.config.set(data_parallel_degree=1)  # no strategy search for these tiny models
    yield
    ff.config.reset()


def _two_outputs(lib):
    inp = lib.Input((5,), name="x")
    h = lib.layers.Dense(6, activation="tanh", name="hidden")(inp)
    cls = lib.layers.Dense(3, activation="softmax", name="cls")(h)
    reg = lib.layers.Dense(1, name="reg")(h)
    return lib.Model(inp, [cls, reg])


def _pair(compile_kwargs):
    ours, theirs = _two_outputs(ff), _two_outputs(keras)
    theirs.set_weights(ours.get_weights())
    ours.compile(optimizer=ff.optimizers.SGD(0.1), **compile_kwargs)
    theirs.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=True, **compile_kwargs)  # no tracing: faster
    return ours, theirs


def _close(a: dict, b: dict):
    assert set(a) == set(b), (sorted(a), sorted(b))
    for k in a:
        np.testing.assert_allclose(a[k], float(b[k]), rtol=2e-5, atol=1e-6, err_msg=k)


COMPILES = {
    "dicts": dict(loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"}, loss_weights={"cls": 1.0, "reg": 0.3},
                  metrics={"cls": ["accuracy"], "reg": ["mae"]}, weighted_metrics={"cls": ["accuracy"]}),
    "lists": dict(loss=["sparse_categorical_crossentropy", "mse"], loss_weights=[0.5, 2.0],
                  metrics=[["accuracy"], ["mae", "mse"]]),
}


@pytest.mark.parametrize("kind", sorted(COMPILES))
@pytest.mark.parametrize("weights", ["none", "shared", "per-output"])
def test_two_output_evaluate_matches_keras(kind, weights):
    ours, theirs = _pair(COMPILES[kind])
    per_output = {"cls": SW, "reg": SW[::-1].copy()}
    sw = {"none": None, "shared": SW, "per-output": per_output}[weights]
    y = {"cls": YC, "reg": YR}
    if kind == "lists":  # lists of labels and weights, in the outputs' order
        y, sw = list(y.values()), (list(sw.values()) if isinstance(sw, dict) else sw)
    got = ours.evaluate(X, y, sample_weight=sw, batch_size=N, verbose=0, return_dict=True)
    # Keras 3.15 resolves dicts of weights (and of labels with weights) only for dict-output models: it gets
    # the same values as lists
    ky = list(y.values()) if isinstance(y, dict) else y
    ksw = list(sw.values()) if isinstance(sw, dict) else sw
    want = theirs.evaluate(X, ky, sample_weight=ksw, batch_size=N, verbose=0, return_dict=True)
    _close(got, want)


def test_weighted_train_step_matches_keras():
    ours, theirs = _pair(COMPILES["dicts"])
    sw = {"cls": SW, "reg": SW[::-1].copy()}
    ours.train_on_batch(X, {"cls": YC, "reg": YR}, sample_weight=sw)
    theirs.train_on_batch(X, [YC, YR], sample_weight=list(sw.values()))
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def _classifier(lib):
    return lib.Sequential([lib.Input((5,)), lib.layers.Dense(3, activation="softmax")])


def _compiled_classifiers():
    """(ours, tf.keras') classifiers with the same weights, compiled alike (SGD, accuracy weighted too)."""
    ours, theirs = _classifier(ff), _classifier(keras)
    theirs.set_weights(ours.get_weights())
    kw = dict(loss="sparse_categorical_crossentropy", metrics=["accuracy"], weighted_metrics=["accuracy"])
    ours.compile(optimizer=ff.optimizers.SGD(0.2), **kw)
    theirs.compile(optimizer=keras.optimizers.SGD(0.2), run_eagerly=True, **kw)
    return ours, theirs


def test_class_weight_fit_step_and_logs_match_keras():
    ours, theirs = _compiled_classifiers()
    cw = {0: 0.5, 1: 2.0, 2: 1.0}
    h1 = ours.fit(X, YC, batch_size=N, epochs=2, class_weight=cw, shuffle=False, verbose=0)
    h2 = theirs.fit(X, YC, batch_size=N, epochs=2, class_weight=cw, shuffle=False, verbose=0)
    assert set(h1.history) == set(h2.history) == {"loss", "accuracy", "weighted_accuracy"}
    for k in h1.history:
        np.testing.assert_allclose(h1.history[k], h2.history[k], rtol=2e-5, atol=1e-6, err_msg=k)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_class_weight_leaves_the_validation_split_unweighted_as_keras():
    ours, theirs = _compiled_classifiers()
    cw = {0: 10.0, 1: 1.0, 2: 1.0}
    fit = dict(batch_size=N, epochs=1, class_weight=cw, validation_split=0.25, shuffle=False, verbose=0)
    h1, h2 = ours.fit(X, YC, **fit).history, theirs.fit(X, YC, **fit).history
    assert list(h1) == list(h2)  # Keras 3's order too: sorted
    for k in h1:
        np.testing.assert_allclose(h1[k], h2[k], rtol=2e-5, atol=1e-6, err_msg=k)
    cut = int(len(X) * 0.75)
    np.testing.assert_allclose(h1["val_loss"], [ours.evaluate(X[cut:], YC[cut:], verbose=0)[0]], rtol=1e-5)


def _temporal(lib):
    return lib.Sequential([lib.Input((4, 5)), lib.layers.Dense(3, activation="softmax")])


def test_temporal_sample_weight_matches_keras():
    x = rng.standard_normal((N, 4, 5)).astype(np.float32)
    y = rng.integers(0, 3, (N, 4))
    sw = rng.uniform(0, 2, (N, 4)).astype(np.float32)
    ours, theirs = _temporal(ff), _temporal(keras)
    theirs.set_weights(ours.get_weights())
    kw = dict(loss="sparse_categorical_crossentropy", weighted_metrics=["accuracy"])
    ours.compile(optimizer=ff.optimizers.SGD(0.2), **kw)
    theirs.compile(optimizer=keras.optimizers.SGD(0.2), run_eagerly=True, **kw)
    _close(ours.evaluate(x, y, sample_weight=sw, batch_size=N, verbose=0, return_dict=True),
           theirs.evaluate(x, y, sample_weight=sw, batch_size=N, verbose=0, return_dict=True))
    ours.train_on_batch(x, y, sample_weight=sw)
    theirs.train_on_batch(x, y, sample_weight=sw)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("loss_weights", [{"cls": 1.0, "reg": 0.3}, {"cls": 2.0, "reg": 0.0}], ids=["0.3", "0"])
def test_loss_weights_scale_the_gradient_as_keras(loss_weights):
    kw = dict(loss={"cls": "sparse_categorical_crossentropy", "reg": "mse"}, loss_weights=loss_weights)
    ours, theirs = _pair(kw)
    _close(ours.evaluate(X, [YC, YR], batch_size=N, verbose=0, return_dict=True),
           theirs.evaluate(X, [YC, YR], batch_size=N, verbose=0, return_dict=True))
    got = ours.train_on_batch(X, [YC, YR], return_dict=True)
    want = theirs.train_on_batch(X, [YC, YR], return_dict=True)
    _close(got, want)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_one_output_lists_of_loss_and_loss_weights_match_keras():
    # loss=["mse"], loss_weights=[0.5] on a one-output model: per-output lists of one (a raw TypeError before)
    def build(k):
        inp = k.Input((5,))
        return k.Model(inp, k.layers.Dense(1, name="reg")(inp))

    ours, theirs = build(ff), build(keras)
    ours.set_weights(theirs.get_weights())
    for m in (ours, theirs):
        m.compile(optimizer="sgd", loss=["mse"], loss_weights=[0.5])
    _close(ours.evaluate(X, YR, batch_size=N, verbose=0, return_dict=True),
           theirs.evaluate(X, YR, batch_size=N, verbose=0, return_dict=True))
    ours.train_on_batch(X, YR)
    theirs.train_on_batch(X, YR)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_multi_hot_targets_of_a_softmax_train_as_keras():
    # categorical_crossentropy on a softmax with targets that do not sum to 1 (a multi-label misuse public
    # scripts make): tf.keras backprops softmax - y through softmax_cross_entropy_with_logits
    y = rng.integers(0, 2, (N, 4)).astype(np.float32)

    def build(k):
        inp = k.Input((5,))
        return k.Model(inp, k.layers.Dense(4, activation="softmax")(inp))

    ours, theirs = build(ff), build(keras)
    ours.set_weights(theirs.get_weights())
    ours.compile(optimizer=ff.optimizers.SGD(0.05), loss="categorical_crossentropy")
    theirs.compile(optimizer=keras.optimizers.SGD(0.05), loss="categorical_crossentropy")  # traced, as scripts run
    got = ours.fit(X, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    want = theirs.fit(X, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
