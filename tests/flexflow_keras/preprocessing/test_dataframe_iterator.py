"""ImageDataGenerator.flow_from_dataframe (Keras 2): file names and labels from a table's columns, every
class_mode, invalid rows dropped, subsets, sample weights, training through fit, and parity with Keras'
own legacy generator (same files, same batches) where it is installed."""

import numpy as np
import pytest
from PIL import Image

import flexflow_keras as keras
from flexflow_keras.preprocessing.image import ImageDataGenerator

pd = pytest.importorskip("pandas")

CLASSES = ["cat", "dog", "cat", "bird", "dog", "cat"]


@pytest.fixture
def table(tmp_path):
    for i in range(len(CLASSES)):
        Image.fromarray(np.full((12, 10, 3), 30 * i + 5, np.uint8)).save(tmp_path / f"img{i}.png")
    (tmp_path / "notes.txt").write_text("not an image")
    df = pd.DataFrame({"filename": [f"img{i}.png" for i in range(len(CLASSES))] + ["notes.txt", "gone.png"],
                       "class": CLASSES + ["cat", "dog"],
                       "score": np.arange(8, dtype=np.float32) / 10,
                       "extra": np.arange(8, dtype=np.float32),
                       "w": np.linspace(1, 2, 8, dtype=np.float32)})
    return df, tmp_path


def test_categorical_drops_invalid_rows_and_orders_classes(table, caplog):
    df, root = table
    it = ImageDataGenerator(rescale=1 / 255).flow_from_dataframe(df, str(root), target_size=(6, 5), batch_size=4,
                                                                 shuffle=False)
    assert "2 invalid image filename(s)" in caplog.text
    assert it.samples == 6 and it.class_indices == {"bird": 0, "cat": 1, "dog": 2} and len(it) == 2
    assert it.filenames == [f"img{i}.png" for i in range(6)]
    x, y = it[0]
    assert x.shape == (4, 6, 5, 3) and y.shape == (4, 3)
    np.testing.assert_allclose(x[1, 0, 0, 0], 35 / 255, rtol=1e-6)
    np.testing.assert_array_equal(y.argmax(1), [1, 2, 1, 0])
    np.testing.assert_array_equal(it.classes, [1, 2, 1, 0, 2, 1])


def test_sparse_binary_raw_multi_output_and_weights(table):
    df, root = table
    gen = ImageDataGenerator()
    common = dict(directory=str(root), target_size=(6, 5), batch_size=6, shuffle=False)
    _, ys = gen.flow_from_dataframe(df, class_mode="sparse", **common)[0]
    np.testing.assert_array_equal(ys, [1, 2, 1, 0, 2, 1])
    two = df[df["class"] != "bird"]
    _, yb = gen.flow_from_dataframe(two, class_mode="binary", batch_size=5, directory=str(root),
                                    target_size=(6, 5), shuffle=False)[0]
    np.testing.assert_array_equal(yb, [0, 1, 0, 1, 0])
    _, yr = gen.flow_from_dataframe(df, y_col="score", class_mode="raw", **common)[0]
    np.testing.assert_allclose(yr, np.arange(6) / 10, rtol=1e-6)
    _, yr2 = gen.flow_from_dataframe(df, y_col=["score", "extra"], class_mode="raw", **common)[0]
    assert yr2.shape == (6, 2)
    _, ym = gen.flow_from_dataframe(df, y_col=["score", "extra"], class_mode="multi_output", **common)[0]
    assert isinstance(ym, list) and len(ym) == 2 and ym[1].tolist() == list(range(6))
    x, y, w = gen.flow_from_dataframe(df, weight_col="w", class_mode="sparse", **common)[0]
    np.testing.assert_allclose(w, np.linspace(1, 2, 8)[:6], rtol=1e-6)
    assert gen.flow_from_dataframe(df, class_mode=None, **common)[0].shape == (6, 6, 5, 3)


def test_multi_label_lists_subsets_and_absolute_paths(table):
    df, root = table
    multi = pd.DataFrame({"filename": [str(root / f"img{i}.png") for i in range(4)],
                          "tags": [["cat"], ["cat", "dog"], ["dog"], []]})
    _, y = ImageDataGenerator().flow_from_dataframe(multi, y_col="tags", target_size=(6, 5), batch_size=4,
                                                    shuffle=False)[0]
    np.testing.assert_array_equal(y, [[1, 0], [1, 1], [0, 1], [0, 0]])
    gen = ImageDataGenerator(validation_split=0.5)
    val = gen.flow_from_dataframe(df, str(root), target_size=(6, 5), subset="validation", shuffle=False)
    train = gen.flow_from_dataframe(df, str(root), target_size=(6, 5), subset="training", shuffle=False)
    assert val.filenames == ["img0.png", "img1.png", "img2.png"] and train.samples == 3


def test_errors_name_the_column_and_the_fix(table):
    df, root = table
    gen = ImageDataGenerator()
    with pytest.raises(KeyError, match="no column 'file'"):
        gen.flow_from_dataframe(df, str(root), x_col="file")
    with pytest.raises(TypeError, match="must be strings.*class_mode='raw'"):
        gen.flow_from_dataframe(df, str(root), y_col="score", class_mode="sparse")
    with pytest.raises(ValueError, match="exactly 2 classes, found 3"):
        gen.flow_from_dataframe(df, str(root), class_mode="binary")
    with pytest.raises(ValueError, match="class_mode in"):
        gen.flow_from_dataframe(df, str(root), class_mode="onehot")


def test_trains_through_fit(table):
    df, root = table
    keras.config.set(only_data_parallel=True)
    try:
        it = ImageDataGenerator(rescale=1 / 255).flow_from_dataframe(df, str(root), target_size=(6, 5), batch_size=3)
        model = keras.Sequential([keras.Input((6, 5, 3)), keras.layers.Flatten(),
                                  keras.layers.Dense(3, activation="softmax")])
        model.compile("sgd", "categorical_crossentropy", metrics=["accuracy"])
        hist = model.fit(it, epochs=2, verbose=0)
        assert len(hist.history["loss"]) == 2 and np.isfinite(hist.history["loss"]).all()
    finally:
        keras.config.reset()


@pytest.mark.tf
def test_matches_keras_legacy_generator(table):
    legacy = pytest.importorskip("keras.src.legacy.preprocessing.image")
    df, root = table
    for mode, y_col in (("categorical", "class"), ("sparse", "class"), ("raw", ["score", "extra"])):
        kw = dict(directory=str(root), y_col=y_col, target_size=(6, 5), batch_size=4, shuffle=False,
                  class_mode=mode)
        ours = ImageDataGenerator(rescale=1 / 255).flow_from_dataframe(df, **kw)
        theirs = legacy.ImageDataGenerator(rescale=1 / 255).flow_from_dataframe(df, **kw)
        assert ours.filenames == list(theirs.filenames) and ours.samples == theirs.samples
        assert ours.class_indices == getattr(theirs, "class_indices", {})
        for b in range(len(ours)):
            (xo, yo), (xt, yt) = ours[b], theirs[b]
            np.testing.assert_allclose(xo, xt, rtol=1e-6)
            np.testing.assert_allclose(yo, yt, rtol=1e-6)
