"""Conv2D with dilation_rate != 1 (atrous convolution, as DeepLabV3+'s ASPP uses it): the layer harness
against tf.keras, an ASPP-style model's outputs and SGD steps against tf.keras at data-parallel degree 2,
a height-split strategy against one processor, and .keras / .h5 round trips."""

import numpy as np
import pytest
from ff_layer_harness import run_layer_test

import flexflow_keras as keras
from flexflow_keras import config, layers


@pytest.mark.parametrize("kwargs,input_shape,out_shape", [
    (dict(filters=4, kernel_size=3, dilation_rate=2, padding="same", activation="relu"), (2, 9, 8, 3),
     (None, 9, 8, 4)),
    (dict(filters=3, kernel_size=(2, 3), dilation_rate=(2, 3), activation="gelu"), (2, 9, 11, 2), (None, 7, 5, 3)),
    (dict(filters=2, kernel_size=3, dilation_rate=6, padding="same", use_bias=False), (2, 7, 9, 3),
     (None, 7, 9, 2)),  # the rate spans past the image: most taps read the padding
    (dict(filters=3, kernel_size=3, dilation_rate=(1, 2), groups=3, padding="same"), (2, 6, 7, 3),
     (None, 6, 7, 3)),  # one group per channel: the depthwise op, dilated
    (dict(filters=4, kernel_size=3, dilation_rate=2, activation="softmax"), (2, 8, 8, 3), (None, 4, 4, 4)),
])
def test_dilated_conv2d(kwargs, input_shape, out_shape, parity):
    layer, _, _ = run_layer_test(layers.Conv2D, kwargs, input_shape=input_shape, expected_output_shape=out_shape,
                                 expected_num_weights=1 + kwargs.get("use_bias", True), compare_tf=parity,
                                 tf_layer="Conv2D", randomize_weights=True, atol=2e-5)
    assert layer.get_config()["dilation_rate"] == tuple(np.broadcast_to(kwargs["dilation_rate"], 2))


def test_dilated_conv2d_channels_first():
    """channels_first is the channels_last result transposed (TensorFlow's CPU has no NCHW convolution to
    compare with)."""
    layer, out, data = run_layer_test(layers.Conv2D, dict(filters=2, kernel_size=3, dilation_rate=(2, 1),
                                                          padding="same", data_format="channels_first"),
                                      input_shape=(2, 3, 7, 6), expected_output_shape=(None, 2, 7, 6),
                                      expected_num_weights=2)
    last = layers.Conv2D(2, 3, dilation_rate=(2, 1), padding="same")
    x = np.moveaxis(data[0], 1, -1)
    last(x)
    last.set_weights(layer.get_weights())
    np.testing.assert_allclose(np.moveaxis(np.asarray(last(x)), -1, 1), out, rtol=1e-5, atol=1e-5)


def aspp(k, shape=(12, 11, 3)):
    """A small DeepLabV3+-style atrous spatial pyramid pooling head, built with `k` (ours or tf.keras)."""
    L = k.layers
    inp = L.Input(shape)
    h = L.Conv2D(4, 3, padding="same", activation="relu")(inp)
    branches = [L.Conv2D(3, 1, activation="relu")(h),
                L.Conv2D(3, 3, padding="same", dilation_rate=2, activation="relu")(h),
                L.Conv2D(3, 3, padding="same", dilation_rate=(3, 2), activation="gelu")(h),
                L.Conv2D(3, 3, padding="same", dilation_rate=6, use_bias=False)(h)]
    h = L.Concatenate()(branches)
    h = L.Conv2D(4, 1, activation="relu")(h)
    h = L.Conv2D(3, (2, 3), dilation_rate=(2, 1), activation="tanh")(h)
    h = L.GlobalAveragePooling2D()(h)
    return k.Model(inp, L.Dense(3, activation="softmax")(h))


def _data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 12, 11, 3)).astype("float32"), rng.integers(0, 3, n)


def _ours():
    keras.backend.clear_session()
    keras.utils.set_random_seed(11)
    return aspp(keras)


@pytest.mark.tf
def test_aspp_outputs_and_training_steps_match_tf_keras():
    """Three SGD (momentum) steps of the ASPP head at data-parallel degree 2 give tf.keras' losses and
    weights: forward and backward of every dilated convolution, split over the batch."""
    tf = pytest.importorskip("tensorflow")
    x, y = _data()
    ours, theirs = _ours(), aspp(tf.keras)
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    ours.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="sparse_categorical_crossentropy")
    theirs.compile(optimizer=tf.keras.optimizers.SGD(0.1, momentum=0.9), loss="sparse_categorical_crossentropy")
    config.set(only_data_parallel=True, data_parallel_degree=2)
    try:
        got = ours.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    finally:
        config.reset()
    want = theirs.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5)


def _train(strategy, cpus):
    config.set(cpus=cpus, executor="threaded", data_parallel_degree=1)
    try:
        model = _ours()
        model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="sparse_categorical_crossentropy",
                      strategy=strategy)
        x, y = _data()
        losses = [float(np.asarray(model.train_on_batch(x[k:k + 4], y[k:k + 4]))) for k in range(0, 12, 4)]
        return losses, model.get_weights()
    finally:
        config.reset()


def test_height_split_trains_like_one_processor():
    """Every dilated convolution split in two along the image height (halos of the dilated window) and the
    rest by the expert's rules: the same losses and weights as one processor."""
    from flexflow_keras.execution import LossSpec, build_training_graph
    from flexflow_keras.ops.graph import TensorSpec
    from flexflow_keras.ops.naming import node_names
    from flexflow_keras.search.experts import conv_spatial_split

    model = _ours()
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    g = model._graph_for([_data()[0]])
    loss = keras.losses.get("sparse_categorical_crossentropy")
    graph = build_training_graph(g.inputs, g.outputs, [LossSpec(0, loss, 1.0, TensorSpec((None,), "int64"))]).graph
    strategy = conv_spatial_split(graph, 2)
    names, configs = node_names(graph), dict(strategy.configs)
    split = [n for n in graph.nodes if n.op.type_name == "conv2d" and n.op.dilation != (1, 1)
             and configs[names[n.uid]].degrees[1] == 2]
    assert len(split) == 4
    want_losses, want_weights = _train(None, cpus=1)
    losses, weights = _train(strategy, cpus=2)
    np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
    for a, b in zip(weights, want_weights, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("suffix", ["keras", "h5"])
def test_file_round_trips_keep_the_dilation(tmp_path, suffix):
    if suffix == "h5":
        pytest.importorskip("h5py")
    model = _ours()
    x = _data(3, seed=1)[0]
    model.save(tmp_path / f"m.{suffix}")
    again = keras.models.load_model(tmp_path / f"m.{suffix}")
    rates = [layer.dilation_rate for layer in again.layers if isinstance(layer, layers.Conv2D)]
    assert rates == [(1, 1), (1, 1), (2, 2), (3, 2), (6, 6), (1, 1), (2, 1)]
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6, atol=1e-6)


@pytest.mark.tf
@pytest.mark.filterwarnings("ignore:__array__ implementation doesn't accept a copy keyword:DeprecationWarning")
def test_keras_files_interchange_with_tf_keras(tmp_path):
    tf = pytest.importorskip("tensorflow")
    x = _data(3, seed=2)[0]
    ours = _ours()
    ours.save(tmp_path / "ours.keras")
    theirs = tf.keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(np.asarray(theirs(x)), ours.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    tf_model = aspp(tf.keras)
    tf_model.save(tmp_path / "theirs.keras")
    back = keras.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(back.predict(x, verbose=0), np.asarray(tf_model(x)), rtol=1e-4, atol=1e-5)
