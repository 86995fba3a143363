"""keras.applications against Keras 3 itself: every model has Keras' layers (names, types, output shapes,
weight shapes) in Keras' order, so Keras' ImageNet files load by position; the same weights give the same
predictions; ImageNet weights come from the Keras cache only (a file written by Keras' own legacy writer
loads; a missing one is a clear error); preprocess_input and decode_predictions give Keras' numbers; and a
frozen pretrained base with a new head trains as in tf.keras."""

import json

import h5py
import numpy as np
import pytest

pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import flexflow_keras as ff  # noqa: E402
from flexflow_keras.errors import MissingFileError  # noqa: E402

pytestmark = pytest.mark.tf

# Left out for time (building the Keras twins takes 7-16 s each on 2 cores): ConvNeXtLarge/XLarge (200M and
# 350M weights) differ from Tiny/Small/Base only in widths; NASNetLarge (85M) from NASNetMobile only in
# widths and depth; EfficientNetB5-B7 from B0-B4 only in their width and depth coefficients (B1-B4 check
# the rounding of both); EfficientNetV2L from V2S/V2M only in its block table's repeats and widths;
# ResNet152V2 from ResNet152 (its stack depths, checked there) and ResNet101V2 only in the block kind.
LEFT_OUT = ("ConvNeXtLarge", "ConvNeXtXLarge", "NASNetLarge", "EfficientNetB5", "EfficientNetB6", "EfficientNetB7",
            "EfficientNetV2L", "ResNet152V2")
MODELS = [n for n in ff.applications.__all__ if n[0].isupper() and n not in LEFT_OUT]
MIN_SIZE = {"InceptionV3": 75, "InceptionResNetV2": 75, "Xception": 71, "NASNetMobile": 64}


def _describe(model):
    return [(layer.name, type(layer).__name__, tuple(layer.output.shape), [tuple(w.shape) for w in layer.weights])
            for layer in model.layers if type(layer).__name__ != "InputLayer"]


def _fresh():
    keras.backend.clear_session()
    ff.backend.clear_session()


def _keras_predict(model, x):
    """tf.keras's inference outputs, as `predict` gives them for one batch, by an eager call: `predict`
    first traces and optimises a graph (9.6 of the 11.4 s of InceptionResNetV2's, equal outputs)."""
    out = model(x, training=False)
    return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else np.asarray(out)


def _random_weights(model, seed=0):
    """Small random weights (positive variances) that keep activations finite through deep nets."""
    rng = np.random.default_rng(seed)
    out = []
    for w in model.weights:
        v = np.asarray(w.numpy())
        if v.dtype.kind != "f":
            out.append(v)
        elif "variance" in w.path:
            out.append((np.abs(rng.standard_normal(v.shape)) + 0.5).astype(v.dtype))
        else:
            out.append((rng.standard_normal(v.shape) * 0.05).astype(v.dtype))
    return out


@pytest.mark.parametrize("name", MODELS)
def test_layers_names_and_order_are_keras(name):
    _fresh()
    size = MIN_SIZE.get(name, 32)
    kwargs = dict(weights=None, input_shape=(size, size, 3), classes=5)
    theirs = getattr(keras.applications, name)(**kwargs)
    ours = getattr(ff.applications, name)(**kwargs)
    assert _describe(ours) == _describe(theirs)
    assert ours.name == theirs.name
    assert ours.count_params() == theirs.count_params()


@pytest.mark.parametrize("name, kwargs, size", [
    ("VGG16", dict(include_top=False, pooling="max"), 32),
    ("ResNet50", dict(classifier_activation=None), 64),
    ("ResNet50V2", dict(include_top=False), 64),
    ("MobileNet", dict(alpha=0.5, classifier_activation=None, classes=7), 64),
    ("MobileNetV2", dict(include_top=False, alpha=1.4), 65),
    ("DenseNet121", dict(include_top=False, pooling="avg"), 64),
    ("InceptionV3", dict(classifier_activation=None), 75),
    ("Xception", dict(include_top=False), 71),
    ("EfficientNetB0", dict(classifier_activation=None), 64),
    ("EfficientNetV2B0", dict(classifier_activation=None), 64),
    ("MobileNetV3Small", dict(classifier_activation=None), 64),
    ("MobileNetV3Large", dict(include_top=False, alpha=0.75), 65),
    ("InceptionResNetV2", dict(include_top=False, pooling="avg"), 75),
    ("ConvNeXtTiny", dict(classifier_activation=None), 64),
    ("ConvNeXtTiny", dict(include_top=False, pooling="max"), 32),
    ("NASNetMobile", dict(classifier_activation=None), 64),
])
def test_same_weights_give_keras_predictions(name, kwargs, size):
    _fresh()
    kwargs = dict(weights=None, input_shape=(size, size, 3), **kwargs)
    theirs = getattr(keras.applications, name)(**kwargs)
    ours = getattr(ff.applications, name)(**kwargs)
    weights = _random_weights(theirs)
    theirs.set_weights(weights)
    ours.set_weights(weights)
    x = (np.random.default_rng(1).random((2, size, size, 3)) * 255).astype(np.float32)
    want = _keras_predict(theirs, x)
    got = ours.predict(x, verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def _write_keras_legacy_weights(model, path):
    from keras.src.legacy.saving import legacy_h5_format

    with h5py.File(path, "w") as f:
        legacy_h5_format.save_weights_to_hdf5_group(f, model)


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.keras of the machine
    (tmp_path / "models").mkdir()
    return tmp_path


def test_imagenet_weights_load_from_the_keras_cache(keras_home):
    _fresh()
    kwargs = dict(alpha=0.35, input_shape=(96, 96, 3), include_top=False)
    theirs = keras.applications.MobileNetV2(weights=None, **kwargs)
    theirs.set_weights(_random_weights(theirs, seed=3))
    _write_keras_legacy_weights(
        theirs, keras_home / "models" / "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96_no_top.h5")
    ours = ff.applications.MobileNetV2(weights="imagenet", **kwargs)
    x = (np.random.default_rng(2).random((2, 96, 96, 3)) * 255).astype(np.float32)
    x = ff.applications.mobilenet_v2.preprocess_input(x)
    np.testing.assert_allclose(ours.predict(x, verbose=0), _keras_predict(theirs, x), rtol=1e-4, atol=1e-6)


def test_efficientnet_imagenet_weights_bring_the_input_normalization(keras_home):
    """EfficientNet's files hold its Normalization layer's mean and variance (the variance column is the
    standard deviation, so Keras divides once more by its square root; ours too)."""
    _fresh()
    theirs = keras.applications.EfficientNetB0(weights=None, include_top=False, input_shape=(64, 64, 3))
    weights = _random_weights(theirs, seed=4)
    norm = [i for i, w in enumerate(theirs.weights) if w.path.startswith("normalization/")]
    mean, var = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32) ** 2
    weights[norm[0]], weights[norm[1]] = mean, var
    theirs.set_weights(weights)
    _write_keras_legacy_weights(theirs, keras_home / "models" / "efficientnetb0_notop.h5")
    ours = ff.applications.EfficientNetB0(weights="imagenet", include_top=False, input_shape=(64, 64, 3))
    # the same computation in Keras' model built without the extra rescaling: variance * stddev
    weights[norm[1]] = var * np.sqrt(var)
    theirs.set_weights(weights)
    x = (np.random.default_rng(5).random((2, 64, 64, 3)) * 255).astype(np.float32)
    want = _keras_predict(theirs, x)
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_missing_imagenet_file_says_where_to_put_it(keras_home):
    with pytest.raises(MissingFileError, match="resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5") as e:
        ff.applications.ResNet50(weights="imagenet", include_top=False, input_shape=(64, 64, 3))
    assert str(keras_home / "models") in str(e.value) and "never downloads" in str(e.value)
    assert isinstance(e.value, FileNotFoundError)
    with pytest.raises(MissingFileError):  # a linear classifier passes Keras' check, then needs the file
        ff.applications.ResNet50(weights="imagenet", classifier_activation="linear")


def test_a_weights_path_loads_and_a_wrong_one_is_an_error(tmp_path):
    _fresh()
    theirs = keras.applications.MobileNet(weights=None, alpha=0.25, include_top=False, input_shape=(32, 32, 3))
    theirs.set_weights(_random_weights(theirs, seed=6))
    path = tmp_path / "mine.h5"
    _write_keras_legacy_weights(theirs, path)
    ours = ff.applications.MobileNet(weights=str(path), alpha=0.25, include_top=False, input_shape=(32, 32, 3))
    x = np.random.default_rng(7).random((2, 32, 32, 3)).astype(np.float32)
    np.testing.assert_allclose(ours.predict(x, verbose=0), _keras_predict(theirs, x), rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="does not fit this model"):
        ff.applications.MobileNet(weights=str(path), alpha=0.5, include_top=False, input_shape=(32, 32, 3))
    with pytest.raises(MissingFileError, match="does not exist"):
        ff.applications.MobileNet(weights=str(tmp_path / "nope.h5"), include_top=False, input_shape=(32, 32, 3))


@pytest.mark.parametrize("module, mode", [("vgg16", "caffe"), ("resnet", "caffe"), ("resnet_v2", "tf"),
                                          ("mobilenet_v2", "tf"), ("densenet", "torch"), ("efficientnet", None)])
def test_preprocess_input_as_keras(module, mode):
    x = (np.random.default_rng(8).random((2, 5, 6, 3)) * 255).astype(np.float32)
    want = getattr(keras.applications, module).preprocess_input(x.copy())
    got = getattr(ff.applications, module).preprocess_input(x.copy())
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-6, atol=1e-4)
    ints = x.astype(np.uint8)  # integer images become float32 first, as in Keras
    np.testing.assert_allclose(getattr(ff.applications, module).preprocess_input(ints),
                               np.asarray(getattr(keras.applications, module).preprocess_input(ints)), atol=1e-4)
    if mode is not None:  # inside a model (keras-io's transfer learning: x = preprocess_input(inputs))
        inputs = ff.Input((5, 6, 3))
        model = ff.Model(inputs, getattr(ff.applications, module).preprocess_input(inputs))
        np.testing.assert_allclose(model.predict(x, verbose=0), np.asarray(want), rtol=1e-5, atol=1e-4)


def test_decode_predictions_reads_the_class_index_from_the_cache(keras_home, monkeypatch):
    from flexflow_keras.applications import imagenet_utils

    monkeypatch.setattr(imagenet_utils, "_class_index", None)
    preds = np.random.default_rng(9).random((2, 1000)).astype(np.float32)
    with pytest.raises(MissingFileError, match="imagenet_class_index.json"):
        ff.applications.resnet50.decode_predictions(preds)
    index = {str(i): [f"n{i:08d}", f"class_{i}"] for i in range(1000)}
    (keras_home / "models" / "imagenet_class_index.json").write_text(json.dumps(index))
    top = ff.applications.resnet50.decode_predictions(preds, top=3)
    best = np.argsort(preds[1])[::-1][:3]
    assert [(t[0], t[1]) for t in top[1]] == [(f"n{i:08d}", f"class_{i}") for i in best]
    assert [t[2] for t in top[1]] == list(preds[1][best])
    with pytest.raises(ValueError, match=r"shape \(samples, 1000\)"):
        ff.applications.resnet50.decode_predictions(preds[:, :10])


def test_argument_errors():
    with pytest.raises(ValueError, match="classes` should be 1000"):
        ff.applications.ResNet50(weights="imagenet", classes=10)
    with pytest.raises(ValueError, match="input size must be at least 75x75"):
        ff.applications.InceptionV3(weights=None, include_top=False, input_shape=(64, 64, 3))
    with pytest.raises(ValueError, match=r"should be \(224, 224, 3\)"):
        ff.applications.VGG16(weights="imagenet", input_shape=(64, 64, 3))
    with pytest.raises(ValueError, match="classifier_activation"):
        ff.applications.MobileNetV2(weights="imagenet", classifier_activation="sigmoid")
    with pytest.raises(ValueError, match="pooling"):
        ff.applications.DenseNet121(weights=None, include_top=False, pooling="mean")
    assert sorted(n for n in dir(keras.applications) if n[0].isupper()) == sorted(
        n for n in ff.applications.__all__ if n[0].isupper())  # every Keras application is built


def test_input_tensor_keeps_the_layers_before_it():
    inputs = ff.Input((32, 32, 3))
    x = ff.layers.Rescaling(1 / 255.0)(inputs)
    base = ff.applications.MobileNetV2(weights=None, include_top=False, input_tensor=x, alpha=0.35)
    assert base.input == [inputs] and base.layers[1].name.startswith("rescaling")  # a list, as in Keras
    assert base.output.shape == (None, 1, 1, 1280)
    # the tensor sets MobileNetV2's default size only: without the top the size in its name is open, as Keras'
    assert base.name == "mobilenetv2_0.35_None"
    assert ff.applications.MobileNetV2(weights=None, input_tensor=ff.Input((96, 96, 3))).name == "mobilenetv2_1.00_96"


def test_frozen_pretrained_base_with_a_new_head_trains_as_tf_keras():
    """The transfer-learning recipe: base.trainable = False (its BatchNorm layers then run in inference
    mode), a pooling and Dense head, fit. Losses and the base's unchanged weights match tf.keras."""
    _fresh()
    rng = np.random.default_rng(10)
    x = (rng.random((32, 32, 32, 3)) * 255).astype(np.float32)
    y = rng.integers(0, 3, 32)

    def build(lib):
        base = lib.applications.MobileNetV2(weights=None, include_top=False, input_shape=(32, 32, 3), alpha=0.35)
        base.trainable = False
        inputs = lib.Input((32, 32, 3))
        h = lib.applications.mobilenet_v2.preprocess_input(inputs)
        h = base(h, training=False)
        h = lib.layers.GlobalAveragePooling2D()(h)
        outputs = lib.layers.Dense(3, activation="softmax")(h)
        return lib.Model(inputs, outputs), base

    theirs, their_base = build(keras)
    ours, our_base = build(ff)
    weights = _random_weights(theirs, seed=11)
    theirs.set_weights(weights)
    ours.set_weights(weights)
    for lib, model in ((keras, theirs), (ff, ours)):
        model.compile(lib.optimizers.Adam(1e-3), "sparse_categorical_crossentropy", metrics=["accuracy"])
    h1 = ours.fit(x, y, epochs=3, batch_size=8, shuffle=False, verbose=0).history
    h2 = theirs.fit(x, y, epochs=3, batch_size=8, shuffle=False, verbose=0).history
    np.testing.assert_allclose(h1["loss"], h2["loss"], rtol=1e-4)
    np.testing.assert_allclose(h1["accuracy"], h2["accuracy"])
    for a, b in zip(our_base.get_weights(), their_base.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_classic_recipe_on_base_output_trains_as_tf_keras():
    """tf.keras 2's recipe: x = base.output, a new head, Model(base.input, ...), the base's layers frozen one
    by one (its BatchNorm layers then use their moving statistics), fit."""
    _fresh()
    rng = np.random.default_rng(12)
    x = (rng.random((24, 32, 32, 3)) * 255).astype(np.float32)
    y = np.eye(4, dtype=np.float32)[rng.integers(0, 4, 24)]

    def build(lib):
        base = lib.applications.ResNet50V2(weights=None, include_top=False, input_shape=(32, 32, 3))
        h = lib.layers.Flatten()(base.output)
        h = lib.layers.Dense(16, activation="relu")(h)
        model = lib.Model(inputs=base.input, outputs=lib.layers.Dense(4, activation="softmax")(h))
        for layer in base.layers[:150]:
            layer.trainable = False
        return model

    theirs, ours = build(keras), build(ff)
    weights = _random_weights(theirs, seed=13)
    theirs.set_weights(weights)
    ours.set_weights(weights)
    assert len(ours.trainable_weights) == len(theirs.trainable_weights)
    for lib, model in ((keras, theirs), (ff, ours)):
        model.compile(lib.optimizers.SGD(1e-3, momentum=0.9), "categorical_crossentropy")
    h1 = ours.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=1e-4)


def test_get_source_inputs_finds_the_inputs_behind_a_tensor():
    a, b = ff.Input((3,)), ff.Input((3,))
    joined = ff.layers.Add()([ff.layers.Dense(3)(a), b])
    out = ff.layers.Dense(2)(ff.layers.Dense(2)(joined))
    assert ff.utils.get_source_inputs(out) == [a, b]  # in the order of the graph's inputs, as Keras
    assert ff.utils.get_source_inputs(a) == [a]


@pytest.mark.parametrize("module", ["mobilenet_v2", "resnet50", "densenet"])
def test_a_model_that_preprocesses_its_input_saves_and_loads(module, tmp_path):
    """The TensorFlow tutorial's model: preprocess_input inside the model, then model.save (.keras and .h5)."""
    inputs = ff.Input((32, 32, 3))
    x = getattr(ff.applications, module).preprocess_input(inputs)
    model = ff.Model(inputs, ff.layers.Dense(2)(ff.layers.GlobalAveragePooling2D()(x)))
    x = (np.random.default_rng(14).random((2, 32, 32, 3)) * 255).astype(np.float32)
    want = model.predict(x, verbose=0)
    for name in ("m.keras", "m.h5"):
        model.save(tmp_path / name)
        np.testing.assert_array_equal(ff.models.load_model(tmp_path / name).predict(x, verbose=0), want)


def test_ops_on_symbolic_tensors_save_as_keras_does(tmp_path):
    """MobileNetV3's hard sigmoid is `ReLU(6)(x + 3.0) * (1 / 6)`: ops on symbolic tensors, which a .keras
    config holds as Keras 3's op entries (Add, Multiply, ...). A file from Keras loads here, ours in Keras."""
    _fresh()
    x = (np.random.default_rng(15).random((2, 32, 32, 3)) * 255).astype(np.float32)
    theirs = keras.applications.MobileNetV3Small(weights=None, input_shape=(32, 32, 3), classes=3)
    theirs.save(tmp_path / "theirs.keras")
    ours = ff.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), _keras_predict(theirs, x), atol=1e-6)
    inputs = ff.Input((4,))
    h = 1.0 - ff.layers.Dense(3)(inputs) * 2.0
    out = ff.ops.maximum(ff.layers.Dense(2)(h) / 3.0, ff.layers.Dense(2)(inputs)) + ff.layers.Dense(2)(inputs)
    model = ff.Model(inputs, out)
    model.save(tmp_path / "ours.keras")
    xs = np.random.default_rng(16).random((3, 4)).astype(np.float32)
    np.testing.assert_allclose(_keras_predict(keras.models.load_model(tmp_path / "ours.keras"), xs),
                               model.predict(xs, verbose=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ff.models.load_model(tmp_path / "ours.keras").predict(xs, verbose=0),
                                  model.predict(xs, verbose=0))
    ids = ff.Input((3,), dtype="int32")  # `ids + 1` on integers: the 1 is saved as an int, as Keras writes it
    shifted = ff.Model(ids, ff.layers.Embedding(10, 2)(ids + 1))
    shifted.save(tmp_path / "ids.keras")
    import zipfile

    layers_cfg = json.loads(zipfile.ZipFile(tmp_path / "ids.keras").read("config.json"))["config"]["layers"]
    op_args = [e["inbound_nodes"][0]["args"] for e in layers_cfg if e["module"].startswith("keras.src.ops")]
    assert len(op_args) == 1 and op_args[0][1] == 1 and isinstance(op_args[0][1], int)
    idx = np.array([[1, 2, 8]])
    np.testing.assert_allclose(_keras_predict(keras.models.load_model(tmp_path / "ids.keras"), idx),
                               shifted.predict(idx, verbose=0), atol=1e-7)
    k_in = keras.Input((3,))  # an op as the output: its saved name stays the output's name
    op_out = keras.Model(k_in, keras.layers.Dense(2)(k_in) * 2.0 + 1.0)
    op_out.save(tmp_path / "op_out.keras")
    assert ff.models.load_model(tmp_path / "op_out.keras").output_names == op_out.output_names  # 'add...'


def test_stochastic_depth_drops_whole_samples_in_training_only():
    inputs = ff.Input((4, 4, 2))
    model = ff.Model(inputs, ff.applications.convnext.StochasticDepth(0.5)(inputs))
    x = np.ones((64, 4, 4, 2), np.float32)
    np.testing.assert_array_equal(model.predict(x, verbose=0), x)
    y = np.asarray(model(x, training=True))
    per_sample = y.reshape(64, -1)
    assert set(np.unique(per_sample)) <= {0.0, 2.0} and 10 < (per_sample[:, 0] == 0).sum() < 54
    assert (per_sample == per_sample[:, :1]).all()  # one draw per sample
