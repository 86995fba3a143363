"""A short fit's first steps choose its data-parallel degree (execution/trial.py): the decision follows the
step times with its margin, partial batches are not timed, every step trains, and the choice is cached."""

import logging

import numpy as np

from flexflow_keras.execution import trial as T


class _Engine:
    def __init__(self):
        self.set, self.strategy, self.trial = [], None, None

    def data_parallel(self, d):
        return _Strategy(d)

    def set_strategy(self, s):
        self.set.append(s.degree)
        self.strategy = s
        return s


class _Strategy:
    def __init__(self, degree, source=""):
        self.degree, self.source = degree, source

    def with_source(self, source):
        return _Strategy(self.degree, source)


def _run(times, batches=None, planned=100):
    """Drive a trial of degrees 1 and 2 at batch 32 with `times` per step; (engine, choices)."""
    engine, choices = _Engine(), []
    engine.trial = tr = T.DegreeTrial(engine, 2, 32, lambda s, line: choices.append((s.degree, line)), planned)
    for k, t in enumerate(times):
        if engine.trial is None:
            break
        tr.before()
        tr.after(32 if batches is None else batches[k], t)
    return engine, choices


def test_a_clearly_faster_first_step_decides_at_once():
    engine, choices = _run([0.5, 0.100, 0.110, 0.080, 9.0])  # x2's first step, its trace included, leads by 20%
    assert choices == [(2, choices[0][1])] and "its first step" in choices[0][1]
    assert "x1 100.0 ms a step (the better of 2)" in choices[0][1]
    assert engine.set == [1, 1, 1, 2, 2] and engine.trial is None
    assert engine.strategy.source == "data parallelism, degree 2 (chosen by a short fit's first steps)"


def test_a_warm_step_can_still_show_the_lead():
    engine, choices = _run([0.5, 0.100, 0.100, 0.095, 0.070])  # the first x2 step paid for its trace
    assert [c[0] for c in choices] == [2] and "the better of 2 steps" in choices[0][1]


def test_a_degree_that_is_not_clearly_faster_goes_back_to_one():
    engine, choices = _run([0.5, 0.100, 0.100, 0.095, 0.090])  # 10% is within the margin
    assert [c[0] for c in choices] == [1] and "is not 15% faster" in choices[0][1]
    assert engine.set[-1] == 1 and engine.trial is None


def test_one_slowed_step_at_degree_one_does_not_decide():
    # another process slowed x1's first timed step 3x: x2, no faster in truth, led it by 68%
    engine, choices = _run([0.5, 0.300, 0.100, 0.095, 0.090])
    assert [c[0] for c in choices] == [1] and "x1 100.0 ms" in choices[0][1]


def test_short_steps_keep_degree_one_without_trying():
    # 8 steps of 10 ms: the 6 after the first two take 0.06 s, too little to gain from degree 2 (and a small
    # model's short fit keeps degree 1's numbers to the bit)
    engine, choices = _run([0.5, 0.010, 0.001, 0.001], planned=8)
    assert [c[0] for c in choices] == [1] and "too little to gain" in choices[0][1]
    assert engine.set == [1, 1] and engine.trial is None


def test_partial_batches_are_not_timed():
    # an epoch of 2 steps whose second is partial: the plan's timed step comes again at full size
    engine, choices = _run([0.5, 0.001, 0.100, 0.001, 0.100, 0.070, 0.070], [32, 8, 32, 8, 32, 32, 32])
    assert [c[0] for c in choices] == [2] and "x1 100.0 ms" in choices[0][1]


def test_no_trial_where_it_cannot_help(monkeypatch):
    from flexflow_keras import config
    from runtime import ProcKind

    class E:
        proc_kind, processors = ProcKind.CPU, [0, 1, 2, 3]

        class tgraph:
            model_outputs = [np.zeros((2, 3))]

        class rtm:
            class policy:
                free = 2

    config.set(data_parallel_degree=None)
    assert T.trial_degree(E, 32, 10) == 2  # the free cores, not the 4 processors
    assert T.trial_degree(E, 32, T.MIN_STEPS - 1) == 1  # too short to decide and still gain
    E.tgraph.model_outputs = [np.zeros(2)]
    assert T.trial_degree(E, 32, 10) == 1  # an output of shape (batch,): its metrics count pieces
    E.tgraph.model_outputs = [np.zeros((2, 3))]
    assert T.trial_degree(E, 1, 10) == 1  # one sample a step
    E.rtm.policy.free = 1
    assert T.trial_degree(E, 32, 10) == 1  # another process holds the other core
    E.rtm.policy.free = 2
    config.set(data_parallel_degree=1)
    assert T.trial_degree(E, 32, 10) == 1  # a degree asked for


def test_a_short_fit_trains_through_its_trial(tmp_path, monkeypatch, caplog):
    # the same losses and weights as at degree 1 throughout, the choice logged and cached for the next run
    import flexflow_keras as keras
    from flexflow_keras import config
    from flexflow_keras.execution import choice

    monkeypatch.setenv("FF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(choice, "trial_degree", lambda engine, batch, planned: 2)  # whatever the load here
    monkeypatch.setattr(T, "MIN_REMAINING_S", 0.0)  # its steps are short: try degree 2 all the same
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((112, 6, 6, 2)).astype("float32"), rng.integers(0, 3, 112)

    def fit(degree):
        config.set(cpus=2, data_parallel_degree=degree)
        keras.backend.clear_session()  # the same layer names: the same cache key, as in a new process
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((6, 6, 2)), keras.layers.Conv2D(4, 3, activation="relu"),
                                  keras.layers.Flatten(), keras.layers.Dense(3)])
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        hist = model.fit(x, y, batch_size=16, epochs=1, verbose=0, shuffle=False)  # 7 steps
        return hist.history["loss"], model.get_weights(), model._engine

    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        l0, w0, engine = fit(None)
    assert "its first steps train at degrees 1 and 2" in caplog.text and "short fit: data parallelism x1" in caplog.text
    assert engine.trial is None and "chosen by a short fit's first steps" in engine.strategy.source
    l1, w1, _ = fit(1)
    np.testing.assert_allclose(l0, l1, rtol=1e-5)
    for a, b in zip(w0, w1, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert len(list(tmp_path.glob("strategy-*-light.json"))) == 1
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        fit(None)  # the same command again: the cached choice, no trial
    assert "reusing the result cached" in caplog.text and "short fit:" not in caplog.text


def test_a_fit_stopped_during_its_trial_ends_it(tmp_path, monkeypatch):
    # an undecided trial outlived its fit: later steps kept waiting for each other under it
    import flexflow_keras as keras
    from flexflow_keras import config
    from flexflow_keras.execution import choice

    monkeypatch.setenv("FF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(choice, "trial_degree", lambda engine, batch, planned: 2)
    config.set(cpus=2, data_parallel_degree=None)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse")

    class Stop(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.model.stop_training = True

    x, y = np.ones((64, 4), "float32"), np.zeros((64, 2), "float32")
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[Stop()])
    assert model._engine.trial is None and model._engine.strategy == model._engine.data_parallel(1)


def test_a_warm_up_fit_does_not_decide_for_the_longer_fit_after_it(tmp_path, monkeypatch, caplog):
    # a 2-step fit measures nothing (degree 1, provisional); the next fit chooses again, here by its trial
    import flexflow_keras as keras
    from flexflow_keras import config
    from flexflow_keras.execution import choice

    monkeypatch.setenv("FF_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(choice, "trial_degree", lambda engine, batch, planned: 2 if planned >= T.MIN_STEPS else 1)
    monkeypatch.setattr(T, "MIN_REMAINING_S", 0.0)
    config.set(cpus=2, data_parallel_degree=None)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("sgd", "mse")
    x, y = np.ones((64, 4), "float32"), np.zeros((64, 2), "float32")
    model.fit(x[:16], y[:16], batch_size=8, epochs=1, verbose=0)
    assert model._engine.provisional and "no search" in model._engine.strategy.source
    with caplog.at_level(logging.INFO, logger="flexflow_keras"):
        model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    assert "short fit: data parallelism x1" in caplog.text and not model._engine.provisional
    assert "chosen by a short fit's first steps" in model._engine.strategy.source
