"""`tf.distribute` under `python -m flexflow_keras` answers as TensorFlow 2.21's does: the default strategy,
OneDeviceStrategy (keras.io's AODNet builds and compiles in ``OneDeviceStrategy("/gpu:0").scope()``, which
TensorFlow runs on a CPU-only host too) and MirroredStrategy, their replica counts, class names, and what
get_strategy / has_strategy / in_cross_replica_context say inside and outside their scopes. Before, every
tf.distribute call was refused."""

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from flexflow_keras import keras_alias  # noqa: E402
from flexflow_keras.keras_alias import RawTensorFlowError  # noqa: E402

pytestmark = pytest.mark.tf
FFTF = keras_alias._TensorFlow("tensorflow")


def _answers(t, make):
    strategy = make(t)
    out = {"class": type(strategy).__name__, "replicas": strategy.num_replicas_in_sync,
           "outside": (t.distribute.has_strategy(), t.distribute.in_cross_replica_context(),
                       t.distribute.get_strategy() is strategy)}
    with strategy.scope():
        out["inside"] = (t.distribute.has_strategy(), t.distribute.in_cross_replica_context(),
                         t.distribute.get_strategy() is strategy)
        out["run"] = int(strategy.run(lambda a, b=0: a + b, args=(2,), kwargs={"b": 3}))
    out["after"] = (t.distribute.has_strategy(), t.distribute.get_strategy() is strategy)
    return out


MAKERS = {
    "default": lambda t: t.distribute.get_strategy(),
    "one_device_gpu": lambda t: t.distribute.OneDeviceStrategy("/gpu:0"),
    "one_device_cpu": lambda t: t.distribute.OneDeviceStrategy("/cpu:0"),
    "mirrored": lambda t: t.distribute.MirroredStrategy(),
}


@pytest.mark.skipif(bool(tf.config.list_physical_devices("GPU")), reason="compares CPU-only answers")
@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_strategies_answer_as_tensorflow(kind):
    assert _answers(FFTF, MAKERS[kind]) == _answers(tf, MAKERS[kind])


def test_model_compiled_in_a_one_device_scope_trains_as_tensorflow():
    import flexflow_keras

    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(32, 4)).astype("float32"), rng.normal(size=(32, 1)).astype("float32")
    weights = [rng.normal(size=(4, 3)).astype("float32"), np.zeros(3, "float32"),
               rng.normal(size=(3, 1)).astype("float32"), np.zeros(1, "float32")]
    losses = []
    for t, keras in ((tf, tf.keras), (FFTF, flexflow_keras)):
        with t.distribute.OneDeviceStrategy("/gpu:0").scope():
            model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"),
                                      keras.layers.Dense(1)])
            model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
        model.set_weights(weights)
        losses.append(model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0).history["loss"])
    np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5)


def test_per_replica_run_is_refused_by_name():
    strategy = FFTF.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
    assert strategy.num_replicas_in_sync == 2
    with pytest.raises(RawTensorFlowError, match=r"tf\.distribute\.MirroredStrategy\.run: with 2 replicas"):
        strategy.run(lambda: 1)
