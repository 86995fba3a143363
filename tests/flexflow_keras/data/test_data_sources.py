"""ArraySource, NpzSource (-d), SyntheticSource, validation_split, and the data checks."""

import numpy as np
import pytest

from flexflow_keras import losses
from flexflow_keras.data import (
    ArraySource,
    NpzSource,
    SyntheticSource,
    check_finite,
    validation_split,
)
from flexflow_keras.errors import DataError
from flexflow_keras.ops.graph import TensorSpec


def test_array_source_lists_and_describe():
    x = [np.zeros((10, 3), np.float32), np.zeros((10, 2), np.int32)]
    src = ArraySource(x, np.zeros(10), sample_weight=np.ones(10))
    assert src.num_samples == 10 and len(src.x) == 2 and len(src.y) == 1
    assert src.describe() == ("arrays passed to fit(): 10 samples (inputs (3,) float32, (2,) int32; labels () "
                              "float64)")
    with pytest.raises(DataError, match=r"same number of samples.*x\[0\]: 10, x\[1\]: 9"):
        ArraySource([np.zeros((10, 3)), np.zeros((9, 2))], np.zeros(10))
    with pytest.raises(DataError, match="scalar"):
        ArraySource(np.float32(3.0))


def test_validation_split_takes_the_last_fraction_in_order():
    src = ArraySource(np.arange(10)[:, None], np.arange(10), sample_weight=np.arange(10))
    train, val = validation_split(src, 0.25)
    assert train.num_samples == 7 and val.num_samples == 3  # floor(10 * 0.75) = 7, as Keras
    np.testing.assert_array_equal(val.y[0], [7, 8, 9])
    np.testing.assert_array_equal(val.sample_weight, [7, 8, 9])
    assert "validation_split=0.25" in val.describe()
    with pytest.raises(ValueError, match="not sufficient"):
        validation_split(ArraySource(np.zeros((1, 1))), 0.5)
    with pytest.raises(ValueError, match=r"\(0, 1\)"):
        validation_split(src, 1.0)


def test_npz_source_keras_keys_and_errors(tmp_path):
    path = tmp_path / "mnist_like.npz"
    np.savez(path, x_train=np.zeros((6, 4), np.uint8), y_train=np.arange(6), x_test=np.ones((2, 4)),
             y_test=np.arange(2))
    src = NpzSource(path)
    assert src.num_samples == 6 and src.x[0].dtype == np.uint8
    assert src.describe().startswith(f"dataset {path} (x_train, y_train): 6 train samples")
    test = src.test_source()
    assert test.num_samples == 2 and test.split == "test"
    plain = tmp_path / "xy.npz"
    np.savez(plain, x=np.zeros((3, 2)), y=np.zeros(3))
    assert NpzSource(plain).num_samples == 3 and NpzSource(plain).test_source() is None
    multi = tmp_path / "multi.npz"
    np.savez(multi, x_train_0=np.zeros((3, 2)), x_train_1=np.zeros((3, 5)), y_train=np.zeros(3))
    assert [a.shape for a in NpzSource(multi).x] == [(3, 2), (3, 5)]

    with pytest.raises(DataError, match="does not exist") as e:
        NpzSource(tmp_path / "missing.npz")
    assert "missing.npz" in str(e.value)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(DataError, match="Cannot read dataset file .*bad.npz"):
        NpzSource(bad)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, images=np.zeros(3))
    with pytest.raises(DataError, match=r"keys \['images'\] but needs x_train/y_train"):
        NpzSource(wrong)
    with pytest.raises(DataError, match="is a directory"):
        NpzSource(tmp_path)
    ragged = tmp_path / "ragged.npz"
    np.savez(ragged, x=np.array([[1, 2], [3]], dtype=object), y=np.zeros(2))
    with pytest.raises(DataError, match="object"):
        NpzSource(ragged)


def _least_squares_accuracy(x_tr, ids_tr, x_te, ids_te, classes):
    a = np.c_[x_tr.reshape(len(x_tr), -1), np.ones(len(x_tr))]
    w, *_ = np.linalg.lstsq(a, np.eye(classes)[ids_tr], rcond=None)
    pred = np.c_[x_te.reshape(len(x_te), -1), np.ones(len(x_te))] @ w
    return float(np.mean(pred.argmax(1) == ids_te))


@pytest.mark.parametrize("loss_name,out_shape", [("sparse_categorical_crossentropy", (None, 10)),
                                                 ("categorical_crossentropy", (None, 10)),
                                                 ("binary_crossentropy", (None, 1)),
                                                 ("mse", (None, 3))])
def test_synthetic_labels_follow_the_loss_and_validate(loss_name, out_shape):
    loss = losses.get(loss_name)
    src = SyntheticSource([TensorSpec((None, 8, 8, 1))], [TensorSpec(out_shape)], 200, loss=loss, seed=3)
    y = src.y[0]
    loss.validate(y, out_shape, "out")  # the labels fit the loss
    if loss_name.startswith("sparse"):
        assert y.dtype == np.int32 and y.shape == (200,) and set(np.unique(y)) <= set(range(10))
    elif loss_name.startswith("categorical"):
        assert y.shape == (200, 10) and np.all(y.sum(1) == 1)
    elif loss_name.startswith("binary"):
        assert set(np.unique(y)) <= {0.0, 1.0}
    else:
        assert y.dtype == np.float32 and y.shape == (200, 3)
    again = SyntheticSource([TensorSpec((None, 8, 8, 1))], [TensorSpec(out_shape)], 200, loss=loss, seed=3)
    np.testing.assert_array_equal(again.x[0], src.x[0])
    assert "synthetic data" in src.describe() and "200 samples" in src.describe()


def test_synthetic_data_is_learnable_and_multi_input():
    loss = losses.get("sparse_categorical_crossentropy")
    specs = [TensorSpec((None, 16)), TensorSpec((None, 6), "int32")]
    src = SyntheticSource(specs, [TensorSpec((None, 10))], 2000, loss=loss, seed=0, int_ranges=[None, 50])
    assert src.x[1].dtype == np.int32 and src.x[1].min() >= 0 and src.x[1].max() < 50
    acc = _least_squares_accuracy(src.x[0][:1500], src.y[0][:1500], src.x[0][1500:], src.y[0][1500:], 10)
    assert acc > 0.9
    chance_x = np.random.default_rng(0).standard_normal(src.x[0].shape)
    assert _least_squares_accuracy(chance_x[:1500], src.y[0][:1500], chance_x[1500:], src.y[0][1500:], 10) < 0.3


def test_check_finite_names_the_array_and_index():
    a = np.ones((4, 3), np.float32)
    a[2, 1] = np.inf
    with pytest.raises(DataError, match=r"x\[1\] contains 1 NaN or infinite.*index \(2, 1\)"):
        check_finite([np.ones(3), a], "x")
    with pytest.raises(DataError, match="image contains"):
        check_finite([a], "x", names=["image"])
    check_finite([np.arange(5)], "y")
