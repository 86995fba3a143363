"""fit's validation pass calls fit's callbacks' test hooks, as Keras 3 does (evaluate with fit's own
CallbackList): arrays and a PyDataset; the progress bar stays quiet inside fit."""

import numpy as np

import flexflow_keras as keras


class Recorder(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_test_begin(self, logs=None):
        self.calls.append("test_begin")

    def on_test_batch_end(self, batch, logs=None):
        self.calls.append(f"test_batch_end {batch}")

    def on_test_end(self, logs=None):
        self.calls.append(("test_end", sorted(logs)))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("epoch_end", sorted(logs)))


class Batches(keras.utils.PyDataset):
    def __init__(self, x, y, size):
        super().__init__()
        self.x, self.y, self.size = x, y, size

    def __len__(self):
        return len(self.x) // self.size

    def __getitem__(self, i):
        s = slice(i * self.size, (i + 1) * self.size)
        return self.x[s], self.y[s]


def _model():
    m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    m.compile(optimizer="sgd", loss="mse")
    return m


def test_fit_validation_calls_the_test_hooks_of_fits_callbacks(capsys):
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 4), dtype=np.float32), rng.random((64, 1), dtype=np.float32)
    keras.config.set(data_parallel_degree=1)
    try:
        for val in ({"validation_split": 0.5}, {"validation_data": Batches(x[:32], y[:32], 16)}):
            rec = Recorder()
            _model().fit(x, y, batch_size=16, epochs=2, callbacks=[rec], verbose=0, **val)
            one_epoch = ["test_begin", "test_batch_end 0", "test_batch_end 1", ("test_end", ["loss"]),
                         ("epoch_end", ["loss", "val_loss"])]
            assert rec.calls == one_epoch * 2, val
        rec = Recorder()
        _model().fit(x, y, batch_size=16, epochs=1, callbacks=[rec], verbose=1, validation_split=0.25)
        assert capsys.readouterr().out.count("/step") == 1  # one line for the epoch: no bar for validation
    finally:
        keras.config.reset()
