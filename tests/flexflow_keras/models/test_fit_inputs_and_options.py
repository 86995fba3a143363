"""fit/evaluate/predict inputs and options as a user writes them: keras.utils.PyDataset / Sequence
(on_epoch_end, shuffled batch order, workers in threads and processes), generators with
steps_per_epoch/validation_steps, validation_freq (int and list), initial_epoch, *_on_batch
(return_dict, reset_metrics), evaluate(return_dict=True), and metrics unweighted while weighted_metrics
see the sample weights."""

import numpy as np
import pytest

import flexflow_keras as keras

L = keras.layers
rng = np.random.default_rng(11)
X = rng.standard_normal((48, 4)).astype(np.float32)
Y = rng.integers(0, 3, 48)


@pytest.fixture(autouse=True, scope="module")
def _one_processor():
    keras.config.set(data_parallel_degree=1)  # no strategy search for these tiny models
    yield
    keras.config.reset()


def _model(metrics=("accuracy",), **kw):
    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((4,)), L.Dense(3, activation="softmax")])
    m.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=list(metrics), **kw)
    return m


class Batches(keras.utils.PyDataset):
    def __init__(self, batch=12, **kwargs):
        super().__init__(**kwargs)
        self.batch, self.seen, self.begins, self.ends = batch, [], 0, 0

    def __len__(self):
        return len(X) // self.batch

    def __getitem__(self, i):
        self.seen.append(i)
        s = slice(i * self.batch, (i + 1) * self.batch)
        return X[s], Y[s]

    def on_epoch_begin(self):
        self.begins += 1

    def on_epoch_end(self):
        self.ends += 1


def test_pydataset_matches_arrays_and_calls_the_epoch_hooks():
    data = Batches()
    a, b = _model(), _model()
    h1 = a.fit(data, epochs=2, shuffle=False, verbose=0)
    h2 = b.fit(X, Y, batch_size=12, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-6)
    # tf.keras 3.15 (recorded): one end more than begins, its reset after the signature reads
    assert data.begins == 2 and data.ends == 3
    assert data.seen[-8:] == [0, 1, 2, 3] * 2
    ev = a.evaluate(data, verbose=0, return_dict=True)
    assert data.ends == 5 and ev == pytest.approx(a.evaluate(X, Y, batch_size=12, verbose=0, return_dict=True))
    np.testing.assert_allclose(a.predict(data, verbose=0), a.predict(X, verbose=0), rtol=1e-6)


def test_pydataset_shuffle_and_steps_per_epoch():
    data = Batches()
    _model().fit(data, epochs=2, shuffle=True, steps_per_epoch=3, verbose=0)
    # seen[:2]: tf.keras' signature reads (test_pydataset_spec_reads_tf.py); epoch 2 finishes the pass (Keras 3)
    first_pass = data.seen[2:6]
    assert sorted(first_pass) == [0, 1, 2, 3] and first_pass != [0, 1, 2, 3] and len(data.seen) == 6
    assert data.ends == 3  # an epoch cut short by steps_per_epoch still ends (and fit's first reset)


@pytest.mark.parametrize("kwargs", [{"workers": 3}, {"workers": 2, "use_multiprocessing": True}],
                         ids=["threads", "processes"])
def test_workers_load_ahead_and_keep_the_order(kwargs):
    data = Batches(batch=6, max_queue_size=3, **kwargs)
    batches = list(data)
    assert len(batches) == 8 and data.ends == 1
    for i, (bx, by) in enumerate(batches):
        np.testing.assert_array_equal(bx, X[i * 6:(i + 1) * 6])
        np.testing.assert_array_equal(by, Y[i * 6:(i + 1) * 6])
    a, b = _model(), _model()
    h1 = a.fit(data, epochs=1, shuffle=False, verbose=0)
    h2 = b.fit(X, Y, batch_size=6, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-6)


def test_pydataset_argument_errors():
    with pytest.raises(ValueError, match="workers"):
        Batches(workers=0)
    assert keras.utils.Sequence is keras.utils.PyDataset


def test_generators_with_steps_and_validation_steps():
    def gen():
        while True:
            for i in range(0, 48, 16):
                yield X[i:i + 16], Y[i:i + 16]

    m = _model()
    h = m.fit(gen(), steps_per_epoch=3, epochs=2, validation_data=gen(), validation_steps=2, verbose=0)
    assert len(h.history["loss"]) == 2 and len(h.history["val_loss"]) == 2
    want = m.evaluate(X[:32], Y[:32], batch_size=16, verbose=0)
    assert h.history["val_loss"][-1] == pytest.approx(want[0], rel=1e-6)


@pytest.mark.parametrize("freq,epochs_validated", [(2, [2, 4]), ([1, 4], [1, 4])])
def test_validation_freq(freq, epochs_validated):
    seen = []
    cb = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append((e + 1, "val_loss" in logs)))
    _model().fit(X, Y, epochs=4, validation_data=(X, Y), validation_freq=freq, callbacks=[cb], verbose=0)
    assert [e for e, v in seen if v] == epochs_validated
    with pytest.raises(ValueError, match="validation_freq"):
        _model().fit(X, Y, epochs=1, validation_data=(X, Y), validation_freq="often", verbose=0)


def test_initial_epoch_runs_the_remaining_epochs():
    epochs = []
    cb = keras.callbacks.LambdaCallback(on_epoch_begin=lambda e, logs: epochs.append(e))
    h = _model().fit(X, Y, epochs=4, initial_epoch=2, callbacks=[cb], verbose=0)
    assert epochs == [2, 3] and len(h.history["loss"]) == 2


def test_on_batch_calls():
    m = _model()
    loss, acc = m.train_on_batch(X, Y)
    logs = m.test_on_batch(X, Y, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    assert logs == pytest.approx(m.evaluate(X, Y, batch_size=48, verbose=0, return_dict=True))
    # reset_metrics=False (Keras 2) accumulates over calls: two halves give the whole
    m.test_on_batch(X[:24], Y[:24])
    both = m.test_on_batch(X[24:], Y[24:], reset_metrics=False, return_dict=True)
    assert both["accuracy"] == pytest.approx(logs["accuracy"])
    assert both["loss"] == pytest.approx(logs["loss"], rel=1e-6)
    np.testing.assert_allclose(m.predict_on_batch(X[:5]), m.predict(X[:5], verbose=0), rtol=1e-6)


def test_metrics_ignore_sample_weight_weighted_metrics_use_it():
    m = _model(weighted_metrics=["accuracy"])
    sw = (Y == 0).astype(np.float32)  # only class-0 samples count
    logs = m.evaluate(X, Y, sample_weight=sw, batch_size=48, verbose=0, return_dict=True)
    pred = m.predict(X, verbose=0).argmax(-1)
    assert logs["accuracy"] == pytest.approx(np.mean(pred == Y))
    assert logs["weighted_accuracy"] == pytest.approx(np.mean(pred[Y == 0] == 0))


def test_generator_batches_with_temporal_sample_weights_match_arrays():
    x = rng.standard_normal((16, 4, 5)).astype(np.float32)
    y = rng.integers(0, 3, (16, 4))
    sw = rng.uniform(0, 2, (16, 4)).astype(np.float32)

    def make():
        keras.utils.set_random_seed(0)
        m = keras.Sequential([keras.Input((4, 5)), L.Dense(3, activation="softmax")])
        m.compile("sgd", "sparse_categorical_crossentropy", weighted_metrics=["accuracy"])
        return m

    def gen():
        while True:
            for i in range(0, 16, 8):
                yield x[i:i + 8], y[i:i + 8], sw[i:i + 8]

    a, b = make(), make()
    b.set_weights(a.get_weights())
    h1 = a.fit(gen(), steps_per_epoch=2, epochs=2, verbose=0)
    h2 = b.fit(x, y, sample_weight=sw, batch_size=8, epochs=2, shuffle=False, verbose=0)
    for k in ("loss", "accuracy"):
        np.testing.assert_allclose(h1.history[k], h2.history[k], rtol=1e-6)
    assert a.evaluate(gen(), steps=2, verbose=0) == pytest.approx(b.evaluate(x, y, sample_weight=sw, batch_size=8,
                                                                             verbose=0))


@pytest.mark.parametrize("steps,pattern", [
    (3, [0, 1, 2, "|", 0, "|", 0, 1, 2, "|"]),  # a pass continues into the next epoch, which then runs out
    (6, [0, 1, 2, 3, "|"] * 3),  # more steps than batches: the epoch ends with the data
    (4, [0, 1, 2, 3, "|"] * 3),
])
def test_steps_per_epoch_over_arrays_follows_keras_3(steps, pattern):
    """The batches Keras 3.15 runs for 32 samples in batches of 8 (recorded with tf.keras)."""
    seen = []
    cb = keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b),
                                        on_epoch_end=lambda e, logs: seen.append("|"))
    _model().fit(X[:32], Y[:32], batch_size=8, epochs=3, steps_per_epoch=steps, callbacks=[cb], verbose=0)
    assert seen == pattern


def test_pydataset_pass_continues_across_epochs_with_steps_per_epoch():
    """Keras 3: 3 steps an epoch over 4 batches run batches 0-2, then 3 alone, then a new pass; the epoch
    hooks run once per epoch."""
    data = Batches()
    seen = []
    cb = keras.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append("|"))
    _model().fit(data, epochs=3, steps_per_epoch=3, shuffle=False, callbacks=[cb], verbose=0)
    assert data.seen == [0, 1] + [0, 1, 2, 3, 0, 1, 2]  # first tf.keras' two signature reads
    assert data.begins == 3 and data.ends == 4 and seen == ["|"] * 3  # tf.keras: its reset ends one more


def test_fit_without_batch_size_says_which_batch_it_uses(caplog):
    # the -b default (64, FlexFlow's) fills in, not Keras' 32: the log says so, with the way to Keras' steps
    import logging

    m = _model()
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        m.fit(X, Y, epochs=1, verbose=0)
    assert "no batch_size given, so batches of 64 (the -b/--batch-size default; Keras' own default is 32" \
        in caplog.text
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        m.fit(X, Y, epochs=1, batch_size=16, verbose=0)
    assert "no batch_size given" not in caplog.text


def test_a_pandas_series_is_a_column_as_in_keras():
    # the TensorFlow regression tutorial fits on one DataFrame column: Keras makes a Series (N, 1)
    pd = pytest.importorskip("pandas")
    x = pd.Series(np.linspace(0, 1, 32, dtype=np.float32))
    y = pd.Series(2 * np.linspace(0, 1, 32, dtype=np.float32))
    m = keras.Sequential([L.Dense(1)])  # built from the data: the Series must arrive as (N, 1)
    m.compile("sgd", "mse")
    m.fit(x, y, epochs=1, batch_size=8, verbose=0)
    assert m.layers[0].kernel.shape == (1, 1)
    assert m.predict(x[:5], verbose=0).shape == (5, 1)
    assert np.isfinite(m.evaluate(x, y, verbose=0))


def test_a_dataframe_with_bool_columns_is_cast_to_float32_as_in_keras():
    # the TensorFlow regression tutorial's get_dummies gives bool columns beside float64 ones (pandas 2+);
    # Keras 3 casts such a frame to float32 whole, where NumPy made an object array ("data type 'string'")
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"hp": np.linspace(50, 200, 16), "usa": [True, False] * 8, "cyl": np.arange(16) % 3})
    y = pd.Series(np.linspace(0, 1, 16))
    m = keras.Sequential([L.Dense(1, kernel_initializer="ones")])  # built from the data
    got = m.predict(frame, verbose=0)
    want = frame.astype("float32").to_numpy().sum(axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    m.compile("sgd", "mse")
    assert np.isfinite(m.fit(frame / 200, y, epochs=1, batch_size=8, verbose=0).history["loss"]).all()
    ints = pd.DataFrame({"a": [1, 2], "b": [3, 4]})  # no float column: kept as it is, as Keras keeps it
    assert keras.Sequential([L.Dense(1)]).predict(ints, verbose=0).shape == (2, 1)


@pytest.mark.parametrize("first_dtype", ["int64", "float32"])
def test_a_dataframe_mixing_into_objects_is_refused_naming_the_dtypes(first_dtype):
    # int or float32 columns beside bool ones make NumPy's array one of objects, and Keras 3 refuses such a
    # frame ("Failed to convert a NumPy array to a Tensor"); here the error names the columns' dtypes
    pd = pytest.importorskip("pandas")
    from flexflow_keras.errors import DataError

    frame = pd.DataFrame({"a": np.arange(8, dtype=first_dtype), "b": np.arange(8) % 2 == 0})
    m = keras.Sequential([keras.Input((2,)), L.Dense(1)])
    m.compile("sgd", "mse")
    with pytest.raises(DataError, match=r"'a': (int64|float32), 'b': bool.*df.astype\('float32'\)"):
        m.fit(frame, np.ones(8), epochs=1, verbose=0)
    assert m.predict(frame.astype("float32"), verbose=0).shape == (8, 1)


@pytest.mark.parametrize(("metrics", "keys"), [
    (["mse", "acc"], ["a_loss", "a_mse", "b_acc", "b_loss", "loss"]),  # as long as the outputs: one each (Keras 3)
    ([["mse", "mae"], "acc"], ["a_loss", "a_mae", "a_mse", "b_acc", "b_loss", "loss"]),
    (["mse"], ["a_loss", "a_mse", "b_loss", "b_mse", "loss"]),  # another length: every output (Keras 2)
])
def test_a_metrics_list_on_two_outputs(metrics, keys):
    i = keras.Input((3,))
    model = keras.Model(i, [keras.layers.Dense(1, name="a")(i), keras.layers.Dense(1, name="b")(i)])
    model.compile(optimizer="sgd", loss="mse", metrics=metrics)
    hist = model.fit(np.ones((8, 3)), [np.ones((8, 1)), np.ones((8, 1))], epochs=1, verbose=0)
    assert sorted(hist.history) == keys
