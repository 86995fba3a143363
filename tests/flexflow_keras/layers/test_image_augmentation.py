"""Image augmentation and resizing layers (RandomFlip, RandomRotation, RandomZoom, RandomTranslation,
RandomContrast, RandomBrightness, RandomCrop, Resizing, CenterCrop): the affine kernel against TensorFlow's ImageProjectiveTransformV3 in every fill mode,
its backward as the exact transpose, the value shifts' gradients against finite differences; the layers
against Keras 3 where their range is a single value (so both draw the same transform); eager calls (new
draws per call, `training=False`, one image); in a model, augmentation in fit only, the same at data
parallelism x2 as x1, and the Keras 2 import path."""

import numpy as np
import pytest
from ff_layer_harness import tf_keras

import flexflow_keras as ff
from flexflow_keras import layers
from flexflow_keras.ops.augment import ImageAffineOp
from flexflow_keras.ops.base import KernelContext
from kernels import augment as kaug

X = np.random.default_rng(0).uniform(0, 255, (3, 9, 11, 2)).astype("float32")


@pytest.fixture(autouse=True)
def _no_search(request):
    ff.config.set(only_data_parallel=True)
    request.addfinalizer(ff.config.reset)


def _mats(rng, n):
    th, s = rng.uniform(-3, 3, n), rng.uniform(0.5, 2.5, n)
    return np.stack([s * np.cos(th), -s * np.sin(th), rng.uniform(-15, 15, n), s * np.sin(th), s * np.cos(th),
                     rng.uniform(-15, 15, n)], axis=1)


@pytest.mark.tf
@pytest.mark.parametrize("mode", kaug.FILL_MODES)
@pytest.mark.parametrize("interpolation", kaug.INTERPOLATIONS)
def test_affine_kernel_matches_tensorflow(mode, interpolation):
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(1)
    for _ in range(4):
        mats = _mats(rng, 3)
        ref = tf.raw_ops.ImageProjectiveTransformV3(
            images=X, transforms=np.concatenate([mats, np.zeros((3, 2))], 1).astype("float32"),
            output_shape=[9, 11], fill_value=7.0, interpolation=interpolation.upper(), fill_mode=mode.upper())
        got = np.empty_like(X)
        kaug.affine_forward_cpu(X, got, mats.astype("float32").astype(np.float64), interpolation == "bilinear",
                                kaug.FILL_MODES.index(mode), 7.0)
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("mode", range(len(kaug.FILL_MODES)))
@pytest.mark.parametrize("bilinear", [False, True])
def test_affine_backward_is_the_transpose_of_forward(mode, bilinear):
    rng = np.random.default_rng(2)
    x, g = rng.standard_normal((2, 6, 7, 3)), rng.standard_normal((2, 5, 8, 3))
    mats = _mats(rng, 2)
    y, dx = np.empty_like(g), np.empty_like(x)
    kaug.affine_forward_cpu(x, y, mats, bilinear, mode, 0.0)
    kaug.affine_backward_cpu(g, mats, dx, bilinear, mode)
    assert np.vdot(y, g) == pytest.approx(np.vdot(x, dx), rel=1e-10)
    before = np.full_like(x, 0.5)
    kaug.affine_backward_cpu(g, mats, before, bilinear, mode, accumulate=True)
    np.testing.assert_allclose(before, dx + 0.5)


@pytest.mark.parametrize("kind", ["contrast", "brightness"])
def test_value_shift_gradients_match_finite_differences(kind):
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, (2, 3, 4, 2))
    x[0, 0, 0, 0] = 0.999  # pushed above the range: the clip bites there
    g = rng.standard_normal(x.shape)
    p = np.array([1.4, 0.6]) if kind == "contrast" else np.array([0.05, -0.2])
    fwd, bwd = getattr(kaug, f"{kind}_forward_cpu"), getattr(kaug, f"{kind}_backward_cpu")

    def loss(a):
        y = np.empty_like(a)
        fwd(a, y, p, 0.0, 1.0)
        return np.vdot(y, g)

    dx = np.empty_like(x)
    bwd(x, g, p, dx, 0.0, 1.0)
    eps, num = 1e-6, np.empty_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        num[i] = (loss(x + d) - loss(x - d)) / (2 * eps)
    np.testing.assert_allclose(dx, num, rtol=1e-5, atol=1e-6)


FIXED = [
    ("RandomRotation", dict(factor=(0.1, 0.1)), {}),
    ("RandomRotation", dict(factor=(-0.3, -0.3), fill_mode="constant", fill_value=3.0, interpolation="nearest"), {}),
    ("RandomRotation", dict(factor=(0.2, 0.2), fill_mode="wrap"), {}),
    ("RandomZoom", dict(height_factor=(0.3, 0.3), width_factor=(-0.2, -0.2), fill_mode="nearest"), {}),
    ("RandomZoom", dict(height_factor=(-0.4, -0.4)), {}),
    ("RandomTranslation", dict(height_factor=(0.2, 0.2), width_factor=(-0.3, -0.3)), {}),
    ("RandomTranslation", dict(height_factor=(-0.1, -0.1), width_factor=(0.4, 0.4), fill_mode="constant"), {}),
    ("RandomBrightness", dict(factor=(0.1, 0.1)), {}),
    ("RandomBrightness", dict(factor=(-0.3, -0.3), value_range=(0, 1)), dict(scale=1 / 255)),
    ("RandomRotation", dict(factor=(0.1, 0.1), data_format="channels_first"), dict(channels_first=True)),
    ("Resizing", dict(height=5, width=7), {}),
    ("Resizing", dict(height=5, width=7, interpolation="nearest"), {}),
    ("Resizing", dict(height=17, width=20), {}),
    ("Resizing", dict(height=6, width=6, crop_to_aspect_ratio=True), {}),
    ("Resizing", dict(height=20, width=12, crop_to_aspect_ratio=True, interpolation="nearest"), {}),
    ("Resizing", dict(height=4, width=5, data_format="channels_first"), dict(channels_first=True)),
    ("CenterCrop", dict(height=5, width=7), {}),
    ("CenterCrop", dict(height=12, width=12), {}),
    ("CenterCrop", dict(height=9, width=4), {}),
    ("RandomCrop", dict(height=9, width=6), {}),  # as tall as the images: Keras' centred aspect window
]


@pytest.mark.tf
@pytest.mark.parametrize("name,kwargs,how", FIXED)
def test_a_single_valued_range_matches_keras_3(name, kwargs, how):
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    x = X * how.get("scale", 1.0)
    if how.get("channels_first"):
        x = x.transpose(0, 3, 1, 2).copy()
    if name.startswith("Random"):
        kwargs = dict(kwargs, seed=1)
    ours = np.asarray(getattr(layers, name)(**kwargs)(x, training=True))
    theirs = np.asarray(getattr(k.layers, name)(**kwargs)(x, training=True))
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=2e-3 * (how.get("scale", 1.0)))
    if name.startswith("Random"):
        inference = np.asarray(getattr(layers, name)(**kwargs)(x, training=False))
        np.testing.assert_array_equal(inference, x if name != "RandomCrop" else ours)


@pytest.mark.tf
@pytest.mark.parametrize("size", [(9, 12), (15, 20), (3, 20), (12, 4)])
def test_nearest_resizing_picks_tensorflows_pixels_where_the_source_is_a_tie(size):
    """6 -> 9: (j + 0.5) * 6 / 9 is an integer for j = 1, 4, 7; TensorFlow's float32 product floors to it,
    a float64 line rounds to the pixel before."""
    k = tf_keras()
    if k is None:
        pytest.skip("TensorFlow is not installed")
    x = np.random.default_rng(3).standard_normal((2, 6, 8, 3)).astype("float32")
    ours = np.asarray(layers.Resizing(*size, interpolation="nearest")(x))
    np.testing.assert_array_equal(ours, np.asarray(k.layers.Resizing(*size, interpolation="nearest")(x)))


@pytest.mark.tf
def test_nearest_resizing_picks_tensorflows_pixels_for_every_size_pair():
    """A sweep of input and output sizes against tf.image.resize (52 -> 22, 70 -> 15, 4 -> 82 once
    differed in a row: no affine line reproduces TensorFlow's float32 picks for every pair)."""
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(4)
    for h in (*range(1, 75, 3), 52, 70):
        x = rng.standard_normal((1, h, 4, 1)).astype("float32")
        for out in (*range(1, 100, 7), 22, 15, 57, 82, 94):
            ours = np.asarray(layers.Resizing(out, 3, interpolation="nearest")(x))
            np.testing.assert_array_equal(ours, tf.image.resize(x, (out, 3), method="nearest").numpy(),
                                          err_msg=f"{h} -> {out}")


def test_random_crop_takes_a_window_per_image_in_training_and_the_aspect_window_in_inference():
    x = np.random.default_rng(9).standard_normal((32, 9, 11, 2)).astype("float32")
    y = np.asarray(layers.RandomCrop(5, 7, seed=2)(x))
    offsets = set()
    for a, b in zip(x, y, strict=True):
        hit = [(i, j) for i in range(5) for j in range(5) if np.array_equal(a[i:i + 5, j:j + 7], b)]
        assert hit, "an output is no window of its input"
        offsets.add(hit[0])
    assert len(offsets) > 8
    window = np.asarray(layers.Resizing(5, 7, crop_to_aspect_ratio=True)(x))
    np.testing.assert_allclose(np.asarray(layers.RandomCrop(5, 7)(x, training=False)), window, rtol=1e-6)


@pytest.mark.parametrize("mode,choices", [("horizontal", 2), ("vertical", 2), ("horizontal_and_vertical", 4)])
def test_random_flip_flips_each_image_on_its_own(mode, choices):
    x = np.random.default_rng(4).standard_normal((64, 3, 4, 1)).astype("float32")
    y = np.asarray(layers.RandomFlip(mode, seed=5)(x))
    seen = set()
    for a, b in zip(x, y, strict=True):
        options = {(0, 0): a, (1, 0): a[:, ::-1], (0, 1): a[::-1], (1, 1): a[::-1, ::-1]}
        hit = [key for key, v in options.items() if np.array_equal(v, b)]
        assert hit, "an output is no flip of its input"
        seen.add(hit[0])
    assert len(seen) == choices


def test_random_contrast_scales_about_each_channels_mean_within_the_range():
    layer = layers.RandomContrast((0.3, 0.5), seed=6)
    y = np.asarray(layer(X))
    m = X.mean(axis=(1, 2), keepdims=True)
    unclipped = (y > 0) & (y < 255)
    for n in range(len(X)):
        u = unclipped[n] & (np.abs(X[n] - m[n]) > 1)
        f = ((y[n] - m[n]) / (X[n] - m[n]))[u]
        assert np.ptp(f) < 1e-3 and 0.7 - 1e-4 <= f.mean() <= 1.5 + 1e-4
    assert y.min() >= 0 and y.max() <= 255


def test_eager_calls_draw_anew_and_accept_one_image():
    layer = layers.RandomRotation(0.25, seed=7)
    a, b = np.asarray(layer(X)), np.asarray(layer(X))
    assert not np.allclose(a, b)
    one = np.asarray(layer(X[0]))
    assert one.shape == X[0].shape
    np.testing.assert_array_equal(np.asarray(layer(X, training=False)), X)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"RandomRotation.*factor.*\(lower, upper\)"):
        layers.RandomRotation("a lot")
    with pytest.raises(ValueError, match=r"unknown fill_mode 'mirror'"):
        layers.RandomZoom(0.1, fill_mode="mirror")
    with pytest.raises(ValueError, match=r"RandomTranslation.*width_factor within \[-1.0, 1.0\]"):
        layers.RandomTranslation(0.1, 1.5)
    with pytest.raises(ValueError, match=r"RandomContrast.*factor within \[0.0, 1.0\]"):
        layers.RandomContrast(1.5)
    with pytest.raises(ValueError, match=r"unknown mode 'diagonal'"):
        layers.RandomFlip("diagonal")
    with pytest.raises(ValueError, match=r"RandomFlip.*batch of images .* received shape \(None, 4\)"):
        layers.RandomFlip()(layers.Input((4,)))
    with pytest.raises(ValueError, match=r"Resizing.*interpolation='bicubic' is not implemented .* 'bilinear'"):
        layers.Resizing(4, 4, interpolation="bicubic")
    with pytest.raises(ValueError, match=r"Resizing.*pad_to_aspect_ratio=True is not implemented"):
        layers.Resizing(4, 4, pad_to_aspect_ratio=True)
    with pytest.raises(ValueError, match=r"CenterCrop.*height to be a positive integer"):
        layers.CenterCrop(0, 4)
    with pytest.raises((TypeError, ValueError), match="seed"):
        layers.Resizing(4, 4, seed=1)


def _model(seed=3):
    ff.utils.set_random_seed(seed)
    return ff.Sequential([layers.Input((8, 8, 3)), layers.RandomFlip(seed=1), layers.RandomRotation(0.2, seed=2),
                          layers.RandomZoom(0.1, seed=3), layers.RandomContrast(0.2, seed=4),
                          layers.Conv2D(4, 3, activation="relu"), layers.RandomTranslation(0.1, 0.1, seed=5),
                          layers.Flatten(), layers.Dense(2)])


def _data():
    rng = np.random.default_rng(8)
    return rng.uniform(0, 255, (16, 8, 8, 3)).astype("float32"), rng.integers(0, 2, 16).astype("int32")


def _fit(model, degree):
    ff.config.set(only_data_parallel=True, cpus=2, data_parallel_degree=degree)
    model.compile(optimizer="sgd", loss=ff.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = _data()
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return model


def test_in_a_model_fit_augments_and_predict_does_not():
    x, _ = _data()
    model = _fit(_model(), 1)
    plain = ff.Sequential([layers.Input((8, 8, 3)), layers.Conv2D(4, 3, activation="relu"), layers.Flatten(),
                           layers.Dense(2)])
    plain.set_weights(model.get_weights())
    np.testing.assert_allclose(model.predict(x, verbose=0), plain.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    unaugmented = _fit(plain, 1)
    again = _fit(_model(), 1)
    for a, b in zip(again.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)  # the same seeds give the same augmentation
    assert any(not np.allclose(a, b) for a, b in zip(model.get_weights(), unaugmented.get_weights(), strict=True))


def test_data_parallel_pieces_augment_each_image_as_the_whole_batch():
    one, two = _fit(_model(), 1), _fit(_model(), 2)
    assert "[2" in two._engine.strategy.describe()
    for a, b in zip(one.get_weights(), two.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)


def test_config_round_trip_and_the_keras_2_path():
    layer = layers.RandomZoom((0.1, 0.2), (-0.1, 0.0), fill_mode="constant", fill_value=2.0, seed=9)
    again = layers.RandomZoom.from_config(layer.get_config())
    np.testing.assert_array_equal(np.asarray(again(X)), np.asarray(layers.RandomZoom.from_config(
        layer.get_config())(X)))
    assert again.get_config() == layer.get_config()
    assert layers.experimental.preprocessing.RandomFlip is layers.RandomFlip


def test_resizing_in_a_model_and_under_data_parallelism():
    def build():
        ff.utils.set_random_seed(1)
        return ff.Sequential([layers.Input((9, 11, 3)), layers.Resizing(12, 12), layers.RandomCrop(8, 8, seed=4),
                              layers.CenterCrop(6, 6), layers.Conv2D(2, 3), layers.Flatten(), layers.Dense(2)])

    x = np.random.default_rng(3).uniform(0, 1, (8, 9, 11, 3)).astype("float32")
    y = np.arange(8, dtype="int32") % 2
    out = []
    for degree in (1, 2):
        model = build()  # set_random_seed also fixes the run's seed, which the crops' draws use
        assert model.output_shape == (None, 2) and model.layers[1].output.shape == (None, 8, 8, 3)
        ff.config.set(only_data_parallel=True, cpus=2, data_parallel_degree=degree)
        model.compile(optimizer="sgd", loss=ff.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        out.append(model.predict(x, verbose=0))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-6)


def test_the_resize_backward_is_the_transpose_of_its_forward():
    from flexflow_keras.ops.augment import ImageResizeOp

    rng = np.random.default_rng(5)
    x, g = rng.standard_normal((2, 9, 13, 2)), rng.standard_normal((2, 6, 6, 2))
    for kind in ("resize", "center_crop", "random_crop"):
        for crop in (False, True):
            op = ImageResizeOp(kind=kind, size=(6, 6), crop_to_aspect_ratio=crop, seed=1)
            ctx = KernelContext(training=True, step=3)
            y, dx = np.empty_like(g), np.empty_like(x)
            op.forward(ctx, [x], [], [y], [], [])
            op.backward(ctx, [x], [], [y], [], [], [g], [dx], [])
            # a resize's forward takes TensorFlow's float32 taps (kernels.augment.resize_forward_cpu), its
            # backward the float64 affine transpose: equal to float32 rounding; the crops (this image is
            # larger than 6x6) exactly
            assert np.vdot(y, g) == pytest.approx(np.vdot(x, dx), rel=1e-6 if kind == "resize" else 1e-10)


def test_the_op_draws_per_global_image():
    op = ImageAffineOp(kind="rotation", seed=3, ranges=((-0.5, 0.5),))
    whole = op.matrices(KernelContext(training=True, seed=1, step=4), 6, 10, 10)
    half = op.matrices(KernelContext(training=True, seed=1, step=4, batch_offset=3), 3, 10, 10)
    np.testing.assert_array_equal(whole[3:], half)
    assert not np.array_equal(whole, op.matrices(KernelContext(training=True, seed=1, step=5), 6, 10, 10))
