"""TensorBoard: the event files read back with TensorBoard's own loader hold Keras 3's tags and our
values (epoch and batch scalars, learning rate, validation, weight histograms, the model JSON); the
missing-package error names what to install."""

import json
import os
import sys
import types

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras import callbacks
from flexflow_keras.errors import FlexFlowKerasError

pytest.importorskip("tensorboard")
if "tensorflow" not in sys.modules:  # read as a TensorBoard without TensorFlow does (its stub; no 10 s import)
    sys.modules.setdefault("tensorboard.compat.notf", types.ModuleType("tensorboard.compat.notf"))
from tensorboard.backend.event_processing import event_accumulator as ea  # noqa: E402

L = keras.layers
rng = np.random.default_rng(2)
X = rng.random((40, 5), dtype=np.float32)
Y = (X.sum(axis=1) > 2.5).astype("int64")


@pytest.fixture(autouse=True, scope="module")
def _one_processor():
    """One data-parallel processor: no strategy search (its measurements would dominate these tiny fits)."""
    keras.config.set(data_parallel_degree=1)
    yield
    keras.config.reset()


def _model(lr=0.05):
    m = keras.Sequential([keras.Input((5,)), L.Dense(6, activation="relu"), L.Dense(2, activation="softmax")])
    m.compile(optimizer=keras.optimizers.SGD(lr), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return m


def _load(path):
    acc = ea.EventAccumulator(str(path), size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0})
    acc.Reload()
    return acc


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("tb")
    m = _model()
    lr_cb = callbacks.LearningRateScheduler(lambda epoch: 0.05 / (epoch + 1))
    hist = m.fit(X[:32], Y[:32], batch_size=8, epochs=3, verbose=0, shuffle=False,
                 validation_data=(X[32:], Y[32:]),
                 callbacks=[lr_cb, callbacks.TensorBoard(log_dir, histogram_freq=2, update_freq=3,
                                                         write_steps_per_second=True)])
    return m, hist, log_dir


def test_epoch_scalars_and_learning_rate(run):
    m, hist, log_dir = run
    train = _load(log_dir / "train")
    for key in ("loss", "accuracy"):
        events = train.Scalars(f"epoch_{key}")
        assert [e.step for e in events] == [0, 1, 2]
        np.testing.assert_allclose([e.value for e in events], hist.history[key], rtol=1e-6)
    lrs = [e.value for e in train.Scalars("epoch_learning_rate")]
    np.testing.assert_allclose(lrs, [0.05, 0.025, 0.05 / 3], rtol=1e-6)
    assert len(train.Scalars("epoch_steps_per_second")) == 3


def test_batch_scalars_follow_update_freq(run):
    _, _, log_dir = run
    train = _load(log_dir / "train")
    steps = [e.step for e in train.Scalars("batch_loss")]
    assert steps == [3, 6, 9, 12]  # 4 batches x 3 epochs, every 3rd global batch
    assert [e.step for e in train.Scalars("batch_steps_per_second")] == steps


def test_validation_folder(run):
    _, hist, log_dir = run
    val = _load(log_dir / "validation")
    np.testing.assert_allclose([e.value for e in val.Scalars("epoch_loss")], hist.history["val_loss"], rtol=1e-6)
    assert [e.step for e in val.Scalars("evaluation_loss_vs_iterations")] == [4, 8, 12]
    assert "epoch_val_loss" not in val.Tags()["scalars"]


def test_histograms_every_histogram_freq_epochs(run):
    m, _, log_dir = run
    train = _load(log_dir / "train")
    tags = train.Tags()["histograms"]
    kernel = [t for t in tags if t.endswith("kernel/histogram")]
    assert len(kernel) == 2 and len(tags) == 4
    events = train.Histograms(kernel[-1])
    assert [e.step for e in events] == [0, 2]
    last = events[-1].histogram_value
    w = m.layers[-1].get_weights()[0]
    assert last.num == w.size
    assert last.sum == pytest.approx(float(w.sum()), rel=1e-5, abs=1e-6)
    assert last.min == pytest.approx(float(w.min())) and last.max == pytest.approx(float(w.max()))
    assert sum(last.bucket) == w.size


def test_model_json_for_the_graphs_tab(run):
    m, _, log_dir = run
    train = _load(log_dir / "train")
    tensor = train.Tensors("keras")[0].tensor_proto
    config = json.loads(tensor.string_val[0])
    assert config["class_name"] == "Sequential"
    assert config == json.loads(m.to_json())


def test_evaluate_writes_evaluation_scalars(tmp_path):
    m = _model()
    m.fit(X, Y, batch_size=8, epochs=1, verbose=0)
    result = m.evaluate(X, Y, verbose=0, return_dict=True, callbacks=[callbacks.TensorBoard(tmp_path)])
    val = _load(tmp_path / "validation")
    [event] = val.Scalars("evaluation_loss_vs_iterations")
    assert event.step == 5 and event.value == pytest.approx(result["loss"], rel=1e-6)


def test_argument_errors():
    with pytest.raises(ValueError, match="write_images"):
        callbacks.TensorBoard(write_images=True)
    with pytest.raises(ValueError, match="profile_batch"):
        callbacks.TensorBoard(profile_batch=2)
    with pytest.raises(ValueError, match="update_freq"):
        callbacks.TensorBoard(update_freq="sometimes")


def test_missing_package_names_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard.summary.writer.record_writer", None)
    with pytest.raises(ImportError, match="pip install tensorboard") as info:
        callbacks.TensorBoard(os.devnull)
    assert isinstance(info.value, FlexFlowKerasError)  # one clean block on the command line


def test_epoch_logging_keeps_fit_pipelined(tmp_path):
    from flexflow_keras.models.step_window import passive as _passive

    epoch_only = callbacks.TensorBoard(tmp_path, histogram_freq=1)
    batches = callbacks.TensorBoard(tmp_path, update_freq="batch")
    assert isinstance(batches, callbacks.TensorBoard) and batches.update_freq == 1
    assert _passive(callbacks.CallbackList([epoch_only]))
    assert not _passive(callbacks.CallbackList([batches]))
    assert _passive(callbacks.CallbackList([callbacks.BackupAndRestore(tmp_path / "b")]))
    assert not _passive(callbacks.CallbackList([callbacks.BackupAndRestore(tmp_path / "b", save_freq=2)]))
