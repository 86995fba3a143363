"""Step overlap in fit (execution/overlap.py, models/step_window.py): training steps are issued without
waiting and read only where a value is needed, with the same results as the synchronous loop
(``FF_STEP_OVERLAP=0``): bit-identical histories and weights, every batch's logs for a callback with batch
hooks, a failing kernel's error, stop_training from a callback."""

import io
import re

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.callbacks.progress import FlexFlowLogger, ProgbarLogger, ProgressWriter
from flexflow_keras.execution import Engine
from flexflow_keras.models.step_window import IN_FLIGHT, LogDemand, passive
from runtime import TaskError

N, BATCH = 200, 16  # 13 steps an epoch, the last one short


def _data():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N, 12)).astype(np.float32)
    y = rng.integers(0, 4, N).astype(np.int32)
    sw = rng.uniform(0.5, 2.0, N).astype(np.float32)
    return x, y, sw


def _model(weights=None):
    keras.utils.set_random_seed(0)  # the Dropout's mask seed
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dropout(0.25), keras.layers.Dense(4, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    if weights is not None:
        model.set_weights(weights)
    return model


def _fit(monkeypatch, overlap: bool, weights, callbacks=None, epochs=2, **kwargs):
    monkeypatch.setenv("FF_STEP_OVERLAP", "1" if overlap else "0")
    model = _model(weights)
    x, y, sw = _data()
    np.random.seed(3)  # fit's seed (sample order, dropout) comes from NumPy's global generator
    history = model.fit(x, y, sample_weight=sw, batch_size=BATCH, epochs=epochs, verbose=0,
                        validation_split=0.2, callbacks=callbacks, **kwargs)
    return model, history


@pytest.fixture(autouse=True, scope="module")
def _one_processor():
    keras.config.set(data_parallel_degree=1)  # no strategy search for these tiny models
    yield
    keras.config.reset()


@pytest.fixture(scope="module")
def initial_weights(_one_processor):
    return _model().get_weights()


@pytest.mark.parametrize("degree", [1, 2])
def test_history_and_weights_are_bit_identical_with_and_without_overlap(monkeypatch, initial_weights, degree):
    keras.config.set(data_parallel_degree=degree)  # 2: two shards a step, partial sums folded
    on, h_on = _fit(monkeypatch, True, initial_weights)
    off, h_off = _fit(monkeypatch, False, initial_weights)
    assert set(h_on.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert h_on.history == h_off.history  # exact float equality
    for a, b in zip(on.get_weights(), off.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(on.optimizer.iterations) == int(off.optimizer.iterations) == 2 * 10
    keras.config.set(data_parallel_degree=1)


class _Events:
    """Records issue/collect calls of the engine, in order."""

    def __init__(self, monkeypatch):
        self.log: list = []
        issue, collect = Engine.issue_train, Engine.collect_train

        def issue_train(engine, sources, rows, step, seed, wait=False):
            handle = issue(engine, sources, rows, step, seed, wait=wait)
            self.log.append(("issue", step, wait))
            self.handles[id(handle)] = step
            return handle

        def collect_train(engine, handle):
            self.log.append(("collect", self.handles.pop(id(handle)), None))
            return collect(engine, handle)

        self.handles: dict = {}
        monkeypatch.setattr(Engine, "issue_train", issue_train)
        monkeypatch.setattr(Engine, "collect_train", collect_train)

    def unread_peak(self) -> int:
        unread = peak = 0
        for kind, _, _ in self.log:
            unread += 1 if kind == "issue" else -1
            peak = max(peak, unread)
        return peak


def test_steps_are_issued_ahead_without_waiting_and_read_in_order(monkeypatch, initial_weights):
    events = _Events(monkeypatch)
    _fit(monkeypatch, True, initial_weights, epochs=1)
    issued = [s for k, s, _ in events.log if k == "issue"]
    collected = [s for k, s, _ in events.log if k == "collect"]
    assert collected == issued and len(issued) == 10  # every step read once, in issue order
    assert all(w is False for k, _, w in events.log if k == "issue")
    assert events.unread_peak() == IN_FLIGHT + 1  # step k+1.. issued before step k is read, bounded
    events.log.clear()
    _fit(monkeypatch, False, initial_weights, epochs=1)
    assert events.log == [e for s in range(10) for e in (("issue", s, True), ("collect", s, None))]


class _BatchLogs(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen: list = []

    def on_train_batch_end(self, batch, logs=None):
        self.seen.append((batch, dict(logs)))


def test_a_batch_callback_gets_every_batchs_own_logs(monkeypatch, initial_weights):
    on, off = _BatchLogs(), _BatchLogs()
    _fit(monkeypatch, True, initial_weights, callbacks=[on])
    _fit(monkeypatch, False, initial_weights, callbacks=[off])
    assert [b for b, _ in on.seen] == list(range(10)) * 2
    assert on.seen == off.seen
    assert len({logs["loss"] for _, logs in on.seen}) == 20  # each batch's running mean, none repeated


def test_a_lambda_callbacks_batch_hook_gets_every_batchs_own_logs(monkeypatch, initial_weights):
    seen = {True: [], False: []}
    for overlap in (True, False):
        hook = keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs, s=seen[overlap]: s.append(logs))
        _fit(monkeypatch, overlap, initial_weights, callbacks=[hook], epochs=1)
    assert len(seen[True]) == 10 and seen[True] == seen[False]


def test_print_frequency_lines_show_the_values_of_the_synchronous_loop(monkeypatch, initial_weights):
    def lines(overlap):
        out = io.StringIO()
        logger = FlexFlowLogger(print_freq=3, batch_size=BATCH, writer=ProgressWriter(out), lines=True)
        _fit(monkeypatch, overlap, initial_weights, callbacks=[logger])
        return [re.sub(r" - [0-9.]+ samples/s.*", "", ln) for ln in out.getvalue().splitlines()
                if ln.startswith("iter ")]

    got = lines(True)
    assert len(got) == 6 and got[0].startswith("iter 3/20 (epoch 1/2, step 3/10) - accuracy:")
    assert got == lines(False)


def test_which_callbacks_need_every_batch():
    logger = FlexFlowLogger(print_freq=4, writer=ProgressWriter(io.StringIO()), lines=True)
    logger.set_params({"verbose": 1, "steps": 10, "epochs": 1})
    logger.on_train_begin()
    logger.on_epoch_begin(0)
    asks = []
    for b in range(8):
        asks.append(logger.needs_batch_logs(b))
        logger.on_train_batch_end(b, {})
    assert asks == [False, False, False, True] * 2

    class Counting(ProgbarLogger):  # overrides a batch hook without saying when it reads the logs
        def on_train_batch_end(self, batch, logs=None):
            super().on_train_batch_end(batch, logs)

    plain = keras.callbacks.CallbackList([ProgbarLogger(), FlexFlowLogger(3)], add_history=True)
    assert passive(plain) and not LogDemand(plain, every_batch=False).every_batch
    assert not passive(keras.callbacks.CallbackList([Counting()]))
    assert not passive(keras.callbacks.CallbackList([_BatchLogs()]))
    assert not passive(keras.callbacks.CallbackList([keras.callbacks.LambdaCallback(on_batch_end=print)]))
    assert passive(keras.callbacks.CallbackList([keras.callbacks.LambdaCallback(on_epoch_end=print)]))
    assert passive(keras.callbacks.CallbackList([keras.callbacks.ModelCheckpoint("m.weights.h5",
                                                                                 save_weights_only=True)]))


def test_a_kernel_failing_mid_epoch_raises_its_error(monkeypatch, initial_weights):
    import kernels.linear as kl

    real, calls = kl.linear_forward_cpu, [0]

    def flaky(*args, **kwargs):
        calls[0] += 1
        if calls[0] > 14:  # two Dense ops a step: fails in the 8th step, with later steps in flight
            raise FloatingPointError("kernel overflow in the custom matmul")
        return real(*args, **kwargs)

    monkeypatch.setattr(kl, "linear_forward_cpu", flaky)
    with pytest.raises(TaskError, match="kernel overflow in the custom matmul") as info:
        _fit(monkeypatch, True, initial_weights, epochs=1)
    err = info.value
    assert err.task == err.failed_task and err.failed_task.startswith("dense")  # the root failure itself
    assert isinstance(err.__cause__, FloatingPointError)


def test_a_failing_state_update_surfaces_mid_epoch(monkeypatch, initial_weights):
    import kernels.batchnorm as kbn

    real, calls = kbn.moving_average_update, [0]

    def flaky(*args, **kwargs):
        calls[0] += 1
        if calls[0] > 8:  # mean and variance a step: the 5th step's moving-statistics update fails
            raise FloatingPointError("moving average overflow")
        return real(*args, **kwargs)

    monkeypatch.setattr(kbn, "moving_average_update", flaky)
    monkeypatch.setenv("FF_STEP_OVERLAP", "1")
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(8), keras.layers.BatchNormalization(),
                              keras.layers.Dense(4, activation="softmax")])
    model.compile("sgd", "sparse_categorical_crossentropy")
    x, y, _ = _data()
    with pytest.raises(TaskError, match="moving average overflow") as info:
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # 13 steps
    err = info.value
    assert err.task == err.failed_task and "update_state" in err.failed_task
    assert int(model.optimizer.iterations) < 13  # raised when a later step was read, not at the end


def test_check_step_raises_a_failed_task_that_no_read_depends_on():
    import runtime as rt
    from flexflow_keras.execution import overlap

    @rt.task(privileges=[rt.RW])
    def inc(x):
        x += 1
        return float(x.sum())

    @rt.task(privileges=[rt.RW])
    def broken(x):
        raise ZeroDivisionError("unread task failed")

    with rt.Runtime(rt.Machine(cpus=2)) as rtm:
        a, b = rt.Region((3,), np.float64), rt.Region((3,), np.float64)
        rtm.fill(a, 0.0)
        rtm.fill(b, 0.0)
        for step in range(2):
            with rtm.trace(f"step{step}", wait=False) as scope:
                read = rtm.launch(inc, a)
                failing = rtm.launch(broken, b) if step == 1 else None
            assert read.get() == 3.0 * (step + 1)  # the value read does not depend on the failed task
            if failing is not None:
                failing.wait()  # (never raises) the failure has happened, on the other processor, by now
            if step == 0:
                overlap.check_step(rtm, scope.nodes)  # nothing failed: returns
        with pytest.raises(TaskError, match="unread task failed") as info:
            overlap.check_step(rtm, scope.nodes)
        assert info.value.failed_task == "broken"


class _StopAt(keras.callbacks.Callback):
    def __init__(self, batch=None, epoch=None):
        super().__init__()
        self.batch, self.epoch = batch, epoch

    def on_train_batch_end(self, batch, logs=None):
        if batch == self.batch:
            self.model.stop_training = True

    def on_epoch_end(self, epoch, logs=None):
        if epoch == self.epoch:
            self.model.stop_training = True


class _StopAtEpoch(keras.callbacks.Callback):  # no batch hook: the loop keeps steps in flight
    def on_epoch_end(self, epoch, logs=None):
        self.model.stop_training = True


def test_stop_training_from_a_callback_stops(monkeypatch, initial_weights):
    model, history = _fit(monkeypatch, True, initial_weights, callbacks=[_StopAt(batch=3)], epochs=3)
    assert history.epoch == [0] and int(model.optimizer.iterations) == 4
    model, history = _fit(monkeypatch, True, initial_weights, callbacks=[_StopAtEpoch()], epochs=3)
    assert history.epoch == [0] and int(model.optimizer.iterations) == 10


def test_an_update_failing_in_the_epochs_last_step_raises_from_fit(monkeypatch, initial_weights):
    """Unregularized updates' futures are not read (their penalty is 0): a failure of the last step's
    update is still fit's error (StepWindow.end_epoch waits for the step whole), not a later reader's."""
    monkeypatch.setenv("FF_STEP_OVERLAP", "1")
    model = _model(initial_weights)
    opt = model.optimizer
    real, calls = type(opt).apply, [0]
    steps = -(-N // BATCH)

    def flaky(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] == steps:  # one update task a step here: the last step's
            raise FloatingPointError("update overflow in the last step")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(type(opt), "apply", flaky)
    x, y, _ = _data()
    with pytest.raises(TaskError, match="update overflow in the last step"):
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
