"""Bad ids, labels and indices found by CUDA kernels stay on the device until the host reads values
(kernels/gpu/checks.py): the kernel returns without reading anything back, the check keeps the first
failure until it is read, and `fit` raises the op's message where it reads the step's values."""

import numpy as np
import pytest
from numba import cuda

from kernels.gpu import array_ops, checks, embedding, encoding, losses


def _check():
    seen = []

    def describe(pos, value):
        seen.append((pos, value))
        return ValueError(f"bad {value} at {pos}")

    return checks.DeviceCheck(describe), seen


def _no_read_back(monkeypatch):
    """Fail if a kernel reads its check back at once (the path of calls without a DeviceCheck)."""
    def refuse(*args):
        raise AssertionError("the kernel read its check back from the device")

    for mod in (array_ops, checks, embedding, encoding, losses):
        if hasattr(mod, "first_bad_now"):
            monkeypatch.setattr(mod, "first_bad_now", refuse)


CASES = {
    "embedding": lambda ids, check: embedding.embedding_forward_cuda(
        cuda.to_device(ids), cuda.to_device(np.ones((4, 2))), cuda.to_device(np.zeros((ids.size, 2))),
        check=check),
    "sparse_loss": lambda ids, check: losses.sparse_loss_forward_cuda(
        cuda.to_device(ids), cuda.to_device(np.full((ids.size, 4), 0.25)), cuda.to_device(np.zeros(ids.size)),
        False, check=check),
    "category_encode": lambda ids, check: encoding.category_encode_cuda(
        cuda.to_device(ids.reshape(-1, 1)), cuda.to_device(np.zeros((ids.size, 4))), 0, check=check),
    "gather": lambda ids, check: array_ops.gather_forward_cuda(
        cuda.to_device(np.arange(4.0)), cuda.to_device(ids), 0, cuda.to_device(np.zeros(ids.size)), check=check),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_bad_id_is_recorded_on_the_device_and_kept_until_read(case, monkeypatch):
    _no_read_back(monkeypatch)
    run = CASES[case]
    check, _ = _check()
    assert run(np.array([1, 2, 0, 3]), check) == -1 and check.read() is None  # all good: nothing recorded
    assert run(np.array([1, 9, 0, 7]), check) == -1  # returns at once, the failure stays on the device
    assert run(np.array([1, 2, 0, 3]), check) == -1  # a later good launch leaves the first failure alone
    assert check.read() == (1, 9)
    check.clear()
    assert check.read() is None


def test_the_immediate_path_still_reports_the_first_bad_position():
    ids = np.array([1, 9, 0, 7])
    assert embedding.embedding_forward_cuda(cuda.to_device(ids), cuda.to_device(np.ones((4, 2))),
                                            cuda.to_device(np.zeros((4, 2)))) == 1
    assert array_ops.gather_forward_cuda(cuda.to_device(np.arange(4.0)), cuda.to_device(ids), 0,
                                         cuda.to_device(np.zeros(4))) == 1


def test_raise_failures_raises_the_ops_message_once():
    check = checks.check_for(("test", "raise_failures"), lambda pos, value: ValueError(f"label {value} at {pos}"))
    checks.raise_failures()
    CASES["sparse_loss"](np.array([0, 1, 5]), check)
    with pytest.raises(ValueError, match="label 5 at 2"):
        checks.raise_failures(wait=False)  # the simulator has run the launch: a peek sees it
    checks.raise_failures()  # cleared once raised


def _on_one_gpu(body):
    import flexflow_keras as keras

    keras.config.set(gpus=1, cpus=1)
    try:
        body(keras)
        checks.raise_failures()  # nothing left over for the next run
    finally:
        keras.config.set(gpus=0)


def test_fit_on_a_gpu_raises_a_bad_label_without_reading_it_back_in_the_task(monkeypatch):
    from flexflow_keras.errors import DataError

    _no_read_back(monkeypatch)

    def body(keras):
        rng = np.random.default_rng(0)

        def batches():  # a generator: fit sees each batch only when it trains on it
            for i in range(6):
                y = rng.integers(0, 4, 16)
                if i == 3:
                    y[5] = 11
                yield rng.random((16, 8), dtype=np.float32), y

        model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4, activation="softmax")])
        model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
        with pytest.raises(DataError, match="received label 11 for sample row 5, outside \\[0, 4\\)"):
            model.fit(batches(), steps_per_epoch=6, epochs=1, verbose=0)

    _on_one_gpu(body)


def test_predict_on_a_gpu_raises_a_bad_embedding_id(monkeypatch):
    from flexflow_keras.errors import DataError

    _no_read_back(monkeypatch)

    def body(keras):
        model = keras.Sequential([keras.Input((3,), dtype="int32"), keras.layers.Embedding(5, 2),
                                  keras.layers.Flatten(), keras.layers.Dense(1)])
        ids = np.array([[0, 1, 2], [3, 4, 7]], np.int32)
        with pytest.raises(DataError, match="Embedding received id 7 at flat position 5 of the input, outside "
                                            "\\[0, 5\\)"):
            model.predict(ids, verbose=0)
        assert model.predict(ids[:1], verbose=0).shape == (1, 1)  # cleared: the next call is clean

    _on_one_gpu(body)


def test_two_failures_in_one_step_are_both_cleared(monkeypatch):
    """Two Embeddings meeting bad ids in one predict: one error, and the next predict on good ids (of this
    model or another) is clean; a predict reads only the checks launched since they were read clean."""
    from flexflow_keras.errors import DataError

    _no_read_back(monkeypatch)

    def body(keras):
        inp = keras.Input((3,), dtype="int32")
        emb = [keras.layers.Embedding(5, 2)(inp) for _ in range(2)]
        model = keras.Model(inp, keras.layers.Dense(1)(keras.layers.Flatten()(keras.layers.Add()(emb))))
        with pytest.raises(DataError, match="Embedding received id 7"):
            model.predict(np.array([[0, 1, 7]], np.int32), verbose=0)
        assert model.predict(np.array([[0, 1, 2]], np.int32), verbose=0).shape == (1, 1)
        other = keras.Sequential([keras.Input((2,), dtype="int32"), keras.layers.Embedding(4, 2),
                                  keras.layers.Flatten()])
        assert other.predict(np.array([[1, 3]], np.int32), verbose=0).shape == (1, 4)

    _on_one_gpu(body)
    assert not checks._recorded  # every check launched was read clean after its last launch


def test_one_raise_clears_every_flagged_check():
    first = checks.check_for(("test", "first"), lambda pos, value: ValueError(f"first {value}"))
    second = checks.check_for(("test", "second"), lambda pos, value: ValueError(f"second {value}"))
    checks.raise_failures()
    CASES["sparse_loss"](np.array([0, 7]), first)
    CASES["sparse_loss"](np.array([9, 0]), second)
    with pytest.raises(ValueError, match="first 7|second 9"):
        checks.raise_failures()
    checks.raise_failures()  # the other one was cleared too
    assert first.read() is None and second.read() is None
