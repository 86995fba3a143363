"""Loss API: get/resolve, config, reductions, the symbolic seam to ops.loss, and label validation."""

import numpy as np
import pytest

from flexflow_keras import losses, losses_core
from flexflow_keras.errors import DataError
from flexflow_keras.ops.graph import KerasTensor


def test_get_names_aliases_functions_and_objects():
    assert isinstance(losses.get("categorical_crossentropy"), losses.CategoricalCrossentropy)
    assert isinstance(losses.get("SparseCategoricalCrossentropy"), losses.SparseCategoricalCrossentropy)
    assert isinstance(losses.get("mse"), losses.MeanSquaredError)
    assert isinstance(losses.get("mae"), losses.MeanAbsoluteError)
    assert isinstance(losses.get(losses.binary_crossentropy), losses.BinaryCrossentropy)
    obj = losses.BinaryCrossentropy(from_logits=True)
    assert losses.get(obj) is obj
    assert losses.get(None) is None
    d = losses.get({"class_name": "CategoricalCrossentropy", "config": {"from_logits": True}})
    assert d.from_logits is True

    def my_loss(y_true, y_pred):
        return np.mean((y_true - y_pred) ** 4, axis=-1)

    wrapped = losses.get(my_loss)
    assert isinstance(wrapped, losses.LossFunctionWrapper) and wrapped.name == "my_loss"
    assert float(wrapped(np.zeros((2, 1)), np.ones((2, 1)))) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="Valid losses: .*categorical_crossentropy.*mse"):
        losses.get("categorical_crosentropy")


def test_resolve_crossentropy_from_shapes():
    assert isinstance(losses.resolve("crossentropy", (None,), (None, 10)), losses.SparseCategoricalCrossentropy)
    assert isinstance(losses.resolve("ce", (None, 1), (None, 10)), losses.SparseCategoricalCrossentropy)
    assert isinstance(losses.resolve("crossentropy", (None, 10), (None, 10)), losses.CategoricalCrossentropy)
    assert isinstance(losses.resolve("crossentropy", (None, 1), (None, 1)), losses.BinaryCrossentropy)
    with pytest.raises(ValueError, match="shapes"):
        losses.resolve("crossentropy")


def test_config_round_trip():
    for obj in [losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1),
                losses.SparseCategoricalCrossentropy(from_logits=True), losses.MeanAbsoluteError(reduction="sum")]:
        again = type(obj).from_config(obj.get_config())
        assert again.get_config() == obj.get_config()
        assert losses.deserialize(losses.serialize(obj)).get_config() == obj.get_config()


def test_reductions():
    y, p = np.zeros((4, 1), np.float32), np.arange(4, dtype=np.float32)[:, None]
    assert float(losses.MeanAbsoluteError()(y, p)) == pytest.approx(1.5)
    assert float(losses.MeanAbsoluteError(reduction="sum")(y, p)) == pytest.approx(6.0)
    np.testing.assert_allclose(losses.MeanAbsoluteError(reduction="none")(y, p), [0, 1, 2, 3])
    sw = np.array([1, 1, 0, 0], np.float32)
    assert float(losses.MeanAbsoluteError()(y, p, sample_weight=sw)) == pytest.approx(0.25)
    assert float(losses.MeanAbsoluteError(reduction="mean_with_sample_weight")(y, p, sample_weight=sw)) == 0.5
    with pytest.raises(ValueError, match="reduction"):
        losses.MeanSquaredError(reduction="avg")


def test_per_sample_on_keras_tensors_records_ops_loss(monkeypatch):
    calls = []

    def fake(name, y_true, y_pred, **kwargs):
        calls.append((name, kwargs))
        return KerasTensor((None,))

    monkeypatch.setattr(losses_core, "_loss_op", fake)  # the seam of the five fused losses (losses_core.py)
    yt, yp = KerasTensor((None, 10)), KerasTensor((None, 10))
    out = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1).per_sample(yt, yp)
    assert isinstance(out, KerasTensor)
    losses.SparseCategoricalCrossentropy().per_sample(KerasTensor((None,), "int32"), yp)
    losses.get("mse").per_sample(yt, yp)
    assert calls == [("categorical_crossentropy", {"from_logits": True, "label_smoothing": 0.1}),
                     ("sparse_categorical_crossentropy", {"from_logits": False}),
                     ("mean_squared_error", {})]


def test_user_function_is_called_on_keras_tensors():
    seen = []

    def custom(y_true, y_pred):
        seen.append((type(y_true), type(y_pred)))
        return y_pred

    yt, yp = KerasTensor((None, 3)), KerasTensor((None, 3))
    assert losses.get(custom).per_sample(yt, yp) is yp
    assert seen == [(KerasTensor, KerasTensor)]


def test_validate_integer_labels_for_categorical():
    y = np.random.default_rng(0).integers(0, 10, 100)
    for labels in (y, y[:, None]):
        with pytest.raises(DataError, match=r"sparse_categorical_crossentropy.*to_categorical\(y, 10\)") as e:
            losses.get("categorical_crossentropy").validate(labels, (None, 10), "dense_2")
        assert "'dense_2'" in str(e.value) and "(N, 10)" in str(e.value)
    losses.get("categorical_crossentropy").validate(np.eye(10)[y], (None, 10), "dense_2")


def test_validate_sparse_labels():
    sparse = losses.get("sparse_categorical_crossentropy")
    with pytest.raises(DataError, match="look one-hot.*categorical_crossentropy.*argmax"):
        sparse.validate(np.eye(10)[[1, 2, 3]], (None, 10), "out")
    with pytest.raises(DataError, match=r"\[0, 10\).*10 at index \(2,\)"):
        sparse.validate(np.array([0, 9, 10, 3]), (None, 10), "out")
    sparse.validate(np.array([0.5, 1.0]), (None, 10), "out")  # truncated, as Keras 3 (a warning: see _tf test)
    with pytest.raises(DataError, match=r"\[0, 10\)"):
        sparse.validate(np.array([0.5, 10.5]), (None, 10), "out")  # 10.5 truncates to 10: out of range
    sparse.validate(np.array([[0], [9]]), (None, 10), "out")
    sparse.validate(np.array([0.0, 9.0]), (None, 10), "out")


def test_validate_nan_binary_and_regression():
    y = np.ones((5, 1), np.float32)
    y[3, 0] = np.nan
    with pytest.raises(DataError, match=r"NaN.*index \(3, 0\)"):
        losses.get("mse").validate(y, (None, 1), "price")
    with pytest.raises(DataError, match=r"\[0, 1\].*sparse_categorical_crossentropy"):
        losses.get("binary_crossentropy").validate(np.array([0, 1, 2, 3]), (None, 1), "out")
    losses.get("binary_crossentropy").validate(np.array([0, 1, 1]), (None, 1), "out")
    with pytest.raises(DataError, match=r"shape \(N, 3\).*\(4, 2\)"):
        losses.get("mae").validate(np.zeros((4, 2)), (None, 3), "out")
    losses.get("mse").validate(np.zeros(4), (None, 1), "out")
