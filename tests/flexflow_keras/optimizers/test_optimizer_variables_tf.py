"""``optimizer.variables`` as Keras 3.15 lists them: iteration, learning rate (not for a schedule), then the
slots of every trainable variable in Keras' order and names (``d1_kernel_momentum``, paths under the
optimizer's name, which is Keras' snake case: ``sgd``, ``rm_sprop``), after fit and after apply_gradients.
We returned [] after fit (the slots live in the engine) and only the bare slot arrays after
apply_gradients; SGD was named ``s_g_d``."""

import numpy as np
import pytest

import flexflow_keras

rng = np.random.default_rng(0)
X = rng.normal(size=(20, 4)).astype("float32")
Y = rng.normal(size=(20, 2)).astype("float32")
W = [rng.normal(size=s).astype("float32") for s in [(4, 3), (3,), (3, 2), (2,)]]

OPTIMIZERS = {
    "adam": lambda lib: lib.optimizers.Adam(0.01),
    "sgd_momentum": lambda lib: lib.optimizers.SGD(0.1, momentum=0.9),
    "sgd": lambda lib: lib.optimizers.SGD(0.1),
    "rmsprop_centered": lambda lib: lib.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
    "adagrad": lambda lib: lib.optimizers.Adagrad(0.1),
    "nadam": lambda lib: lib.optimizers.Nadam(0.01),  # its u_product: Keras' unnamed 'variable'
    "adam_schedule": lambda lib: lib.optimizers.Adam(lib.optimizers.schedules.ExponentialDecay(0.01, 2, 0.5)),
}


def _described(opt):
    return ([(v.name, v.path, tuple(v.shape)) for v in opt.variables],
            [np.asarray(v, np.float64) for v in opt.variables])


def _after_fit(lib, key):
    lib.backend.clear_session()
    inp = lib.Input((4,))
    out = lib.layers.Dense(2, name="d2")(lib.layers.Dense(3, name="d1")(inp))
    model = lib.Model(inp, out)
    model.set_weights(W)
    opt = OPTIMIZERS[key](lib)
    model.compile(opt, "mse")
    before = len(opt.variables)
    model.fit(X, Y, epochs=2, batch_size=8, verbose=0, shuffle=False)
    return before, int(np.asarray(opt.iterations)), opt.name, _described(opt)


def test_variables_after_fit():
    before, iterations, name, (described, values) = _after_fit(flexflow_keras, "adam")
    assert before == 2 and iterations == 6 and name == "adam"
    assert [d[0] for d in described[:4]] == ["iteration", "learning_rate", "d1_kernel_momentum", "d1_kernel_velocity"]
    assert len(described) == 10 and described[2][1] == "adam/d1_kernel_momentum"


@pytest.mark.parametrize("key", sorted(OPTIMIZERS))
def test_variables_after_fit_as_tf_keras(key):
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _after_fit(flexflow_keras, key), _after_fit(keras, key)
    assert ours[:3] == theirs[:3]
    assert ours[3][0] == theirs[3][0]
    for a, b, (name, _, _) in zip(ours[3][1], theirs[3][1], theirs[3][0], strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6, err_msg=name)


def _after_apply(lib):
    lib.backend.clear_session()
    variables = [lib.Variable(w, name=n) for w, n in zip(W[:2], ["kernel", "bias"], strict=True)]
    opt = lib.optimizers.SGD(0.1, momentum=0.9)
    for step in range(2):
        opt.apply_gradients(zip([np.full(w.shape, step + 1.0, "float32") for w in W[:2]], variables, strict=True))
    return [v.name for v in opt.variables], [np.asarray(v, np.float64) for v in opt.variables]


def test_variables_after_apply_gradients_as_tf_keras():
    keras = pytest.importorskip("keras")
    pytest.importorskip("tensorflow")
    ours, theirs = _after_apply(flexflow_keras), _after_apply(keras)
    assert ours[0] == theirs[0]
    for a, b in zip(ours[1], theirs[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)
