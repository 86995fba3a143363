"""keras.preprocessing.image: ImageDataGenerator transforms (seeded, deterministic), normalization,
flow / flow_from_directory as training input, the file helpers, and parity with Keras' own legacy
ImageDataGenerator and Tokenizer (shipped inside Keras 3) where it is installed."""

import numpy as np
import pytest

from flexflow_keras.preprocessing.image import ImageDataGenerator, apply_affine_transform

RNG = np.random.default_rng(3)
X = (RNG.random((10, 8, 6, 3)) * 255).astype(np.float32)
Y = np.arange(10)


def test_flow_is_deterministic_for_a_seed_and_covers_every_sample():
    gen = ImageDataGenerator(rotation_range=30, width_shift_range=0.2, height_shift_range=2, shear_range=10,
                             zoom_range=0.2, horizontal_flip=True, vertical_flip=True, channel_shift_range=5.0)
    a, b, c = (gen.flow(X, Y, batch_size=4, seed=s) for s in (5, 5, 6))
    assert len(a) == 3
    xa, ya = a[0]
    xb, yb = b[0]
    xc, _ = c[0]
    np.testing.assert_array_equal(xa, xb)
    np.testing.assert_array_equal(ya, yb)
    assert not np.array_equal(xa, xc)
    seen = np.concatenate([next(a)[1] for _ in range(3)])
    assert sorted(seen.tolist()) == list(range(10))  # one shuffled pass, last batch of 2
    assert next(a)[0].shape == (4, 8, 6, 3)  # endless, as Keras 2's iterator


def test_apply_transform_flips_shifts_and_identity():
    gen = ImageDataGenerator()
    x = X[0]
    np.testing.assert_array_equal(gen.apply_transform(x, {"flip_horizontal": True}), x[:, ::-1])
    np.testing.assert_array_equal(gen.apply_transform(x, {"flip_vertical": True}), x[::-1])
    np.testing.assert_array_equal(gen.apply_transform(x, {}), x)
    # (tx, ty) is an (x, y) offset, as keras-preprocessing 1.1.2: tx moves the columns, ty the rows
    shifted = apply_affine_transform(x, tx=2, fill_mode="constant", cval=-1.0)
    np.testing.assert_allclose(shifted[:, :-2], x[:, 2:], atol=1e-4)
    assert (shifted[:, -2:] == -1).all()
    shifted = apply_affine_transform(x, ty=-1, fill_mode="constant", cval=-1.0)
    np.testing.assert_allclose(shifted[1:], x[:-1], atol=1e-4)
    assert (shifted[:1] == -1).all()
    np.testing.assert_allclose(gen.apply_transform(x, {"brightness": 0.5}), np.clip(x * 0.5, 0, 255))


def test_fit_learns_featurewise_statistics_and_standardize_uses_them():
    gen = ImageDataGenerator(featurewise_center=True, featurewise_std_normalization=True, rescale=0.5)
    gen.fit(X)
    np.testing.assert_allclose(gen.mean.reshape(-1), (X * 0.5).mean(axis=(0, 1, 2)), rtol=1e-5)  # after rescale
    batch, _ = gen.flow(X, Y, batch_size=10, shuffle=False)[0]
    expected = (X * 0.5 - gen.mean) / (gen.std + 1e-6)
    np.testing.assert_allclose(batch, expected, rtol=1e-4, atol=1e-4)
    sample = ImageDataGenerator(samplewise_center=True, samplewise_std_normalization=True)
    out = sample.standardize(X[0].copy())
    assert abs(out.mean()) < 1e-4 and abs(out.std() - 1) < 1e-3


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="fill_mode"):
        ImageDataGenerator(fill_mode="mirror")
    with pytest.raises(ValueError, match="rank 4"):
        ImageDataGenerator().flow(X[0], Y[:1])
    with pytest.raises(ValueError, match="same length"):
        ImageDataGenerator().flow(X, Y[:3])
    with pytest.raises(ValueError, match="validation_split"):
        ImageDataGenerator().flow(X, Y, subset="validation")


def test_validation_subset_splits_the_front():
    gen = ImageDataGenerator(validation_split=0.3)
    val = gen.flow(X, Y, batch_size=10, shuffle=False, subset="validation")
    train = gen.flow(X, Y, batch_size=10, shuffle=False, subset="training")
    assert val[0][1].tolist() == [0, 1, 2] and train[0][1].tolist() == list(range(3, 10))


def test_flow_from_directory_and_file_helpers(tmp_path):
    from PIL import Image

    from flexflow_keras.preprocessing.image import img_to_array, load_img
    for c, name in enumerate(["cats", "dogs"]):
        (tmp_path / name).mkdir()
        for i in range(3):
            Image.fromarray(np.full((12, 10, 3), 40 * (c + 1) + i, np.uint8)).save(tmp_path / name / f"{i}.png")
    it = ImageDataGenerator(rescale=1 / 255).flow_from_directory(str(tmp_path), target_size=(6, 5), batch_size=4,
                                                                 shuffle=False)
    assert it.class_indices == {"cats": 0, "dogs": 1} and it.samples == 6 and len(it) == 2
    x, y = it[0]
    assert x.shape == (4, 6, 5, 3) and y.shape == (4, 2)
    np.testing.assert_allclose(x[0, 0, 0, 0], 40 / 255, rtol=1e-6)
    np.testing.assert_array_equal(y.argmax(1), [0, 0, 0, 1])
    sparse = ImageDataGenerator().flow_from_directory(str(tmp_path), target_size=(6, 5), class_mode="sparse",
                                                      color_mode="grayscale", batch_size=6, shuffle=False)
    xs, ys = sparse[0]
    assert xs.shape == (6, 6, 5, 1) and ys.tolist() == [0, 0, 0, 1, 1, 1]
    img = load_img(tmp_path / "dogs" / "2.png", target_size=(3, 4))
    arr = img_to_array(img)
    assert arr.shape == (3, 4, 3) and arr.dtype == np.float32 and arr[0, 0, 0] == 82


def test_flow_trains_through_fit_and_fit_generator():
    import flexflow_keras as keras

    x = RNG.random((24, 8, 8, 1)).astype(np.float32)
    y = keras.utils.to_categorical(RNG.integers(0, 2, 24), 2)
    model = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(2, activation="softmax")])
    model.compile(keras.optimizers.SGD(lr=0.1), "categorical_crossentropy", metrics=["accuracy"])
    gen = ImageDataGenerator(horizontal_flip=True)
    with pytest.warns(UserWarning, match="fit_generator.* is deprecated"):
        hist = model.fit_generator(gen.flow(x, y, batch_size=8, seed=1), epochs=2, verbose=0)
    assert len(hist.history["loss"]) == 2
    hist = model.fit(gen.flow(x, y, batch_size=8, seed=1), epochs=1, verbose=0)
    assert np.isfinite(hist.history["loss"][0])
    flow = gen.flow(x, y, batch_size=8, shuffle=False)
    loss = model.evaluate_generator(flow)  # stops after len(flow) batches
    assert np.isfinite(loss[0])
    preds = model.predict_generator(gen.flow(x, batch_size=8, shuffle=False))
    assert preds.shape == (24, 2)
    assert model.predict_classes(x).shape == (24,) and model.predict_proba(x).shape == (24, 2)


@pytest.mark.tf
def test_transforms_and_normalization_match_keras_legacy_generator():
    legacy = pytest.importorskip("keras.src.legacy.preprocessing.image")
    params = {"theta": 17.0, "tx": 1.5, "ty": -2.0, "shear": 8.0, "zx": 0.9, "zy": 1.2, "flip_horizontal": True,
              "flip_vertical": False, "channel_shift_intensity": 3.0, "brightness": None}
    for fill in ("nearest", "constant", "reflect", "wrap"):
        ours = ImageDataGenerator(fill_mode=fill, cval=7.0).apply_transform(X[1].copy(), params)
        theirs = legacy.ImageDataGenerator(fill_mode=fill, cval=7.0).apply_transform(X[1].copy(), params)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-3, err_msg=fill)
    kw = dict(featurewise_center=True, featurewise_std_normalization=True, rescale=1 / 255.0)
    ours, theirs = ImageDataGenerator(**kw), legacy.ImageDataGenerator(**kw)
    ours.fit(X)
    theirs.fit(X)
    np.testing.assert_allclose(ours.standardize(X[2].copy()), theirs.standardize(X[2].copy()), rtol=1e-5, atol=1e-5)
    zo, zt = ImageDataGenerator(zca_whitening=True), legacy.ImageDataGenerator(zca_whitening=True)
    small = X[:, :4, :4]
    zo.fit(small)
    zt.fit(small)
    np.testing.assert_allclose(zo.principal_components, zt.zca_whitening_matrix, rtol=1e-3, atol=1e-3)


@pytest.mark.tf
def test_tokenizer_matches_keras_legacy_tokenizer():
    legacy = pytest.importorskip("keras.src.legacy.preprocessing.text")
    from flexflow_keras.preprocessing.text import Tokenizer

    texts = ["The cat sat on the mat.", "The dog ate my homework!", "the Cat, the dog", "a b c d e f g"]
    for kwargs in ({}, {"num_words": 5}, {"num_words": 5, "oov_token": "<u>"}, {"char_level": True}):
        ours, theirs = Tokenizer(**kwargs), legacy.Tokenizer(**kwargs)
        ours.fit_on_texts(texts)
        theirs.fit_on_texts(texts)
        assert ours.word_index == theirs.word_index
        probe = texts + ["an unseen cat"]
        assert ours.texts_to_sequences(probe) == theirs.texts_to_sequences(probe)
        for mode in ("binary", "count", "freq", "tfidf"):
            np.testing.assert_allclose(ours.texts_to_matrix(probe, mode), theirs.texts_to_matrix(probe, mode))
