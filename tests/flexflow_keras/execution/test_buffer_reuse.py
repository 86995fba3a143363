"""Buffers that are never live at once share a region (execution/buffer_reuse.py): the plan itself, and
training that gives the same numbers with and without the sharing, in less memory."""

import json
import os
import subprocess
import sys
from pathlib import Path

import background_runs  # tests/background_runs.py
import numpy as np
import pytest
from strategy_cases import MODELS, graph_of, random_strategy, train

import flexflow_keras as keras
from flexflow_keras import config, layers
from flexflow_keras.execution import buffer_reuse


class _Region:
    def __init__(self, uid, shape=(4, 3), dtype="float32"):
        self.uid, self.shape, self.dtype = uid, shape, np.dtype(dtype)
        self.root = self


def _spans(*touched):
    """The spans of launches touching the given regions in turn (one tuple of regions per launch)."""
    return buffer_reuse.touches([list(regions) for regions in touched])


def test_gradients_with_disjoint_spans_share_and_overlapping_ones_do_not():
    a, b, c, d = (_Region(k) for k in range(4))
    # a: entries 0-1, b: 1-2 (overlaps a), c: 2-3 (after a), d: 4 (after b and c)
    chosen = buffer_reuse.plan({10: a, 11: b, 12: c, 13: d}, _spans([a], [a, b], [b, c], [c], [d]), set())
    assert chosen[10] is a and chosen[11] is b
    assert chosen[12] is a  # a was last touched at 1, c first at 2
    assert chosen[13] is b  # b (freed at 2) before c's region (a again, freed at 3): the one freed earliest


def test_an_entry_that_reads_one_and_writes_another_never_gets_both_in_one_region():
    a, b = _Region(0), _Region(1)
    chosen = buffer_reuse.plan({1: a, 2: b}, _spans([a], [a, b], [b]), set())
    assert chosen[1] is a and chosen[2] is b


def test_shapes_dtypes_and_exclusions_keep_their_own_regions():
    a, b, c, d = _Region(0), _Region(1, shape=(4, 4)), _Region(2, dtype="float64"), _Region(3)
    entries = _spans([a], [b], [c], [d])
    chosen = buffer_reuse.plan({1: a, 2: b, 3: c, 4: d}, entries, excluded={3})
    assert chosen[2] is b and chosen[3] is c  # other shape, other dtype
    assert 4 not in chosen  # excluded: not planned at all
    assert buffer_reuse.plan({1: a, 2: b, 3: c, 4: d}, entries, set())[4] is a


def _residual(seed=1):
    keras.utils.set_random_seed(seed)
    i = keras.Input((16,))
    h = layers.Dense(32, activation="relu")(i)
    for _ in range(4):
        r = layers.Dense(32, activation="gelu")(h)
        h = layers.LayerNormalization()(layers.Add()([h, r]))  # h has two consumers: its gradient adds
    h = layers.BatchNormalization()(h)  # a two-stage backward
    # a gradient of the per-sample loss's shape (batch,) late in the backward pass: it must not take the
    # loss's seed, which the metrics read at the step's end
    s = keras.ops.sum(h, axis=-1)
    h = layers.Multiply()([h, keras.ops.expand_dims(keras.ops.tanh(s), -1)])
    out = layers.Dense(5, activation="softmax", name="out")(layers.Dropout(0.2)(h))
    aux = layers.Dense(3, name="aux")(h)  # an output without a loss: its gradient is zeroed once
    model = keras.Model(i, [out, aux])
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss=["sparse_categorical_crossentropy", None])
    return model


def _fit(degree):
    config.set(cpus=2, data_parallel_degree=degree)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((64, 16)).astype("float32"), rng.integers(0, 5, 64)
    model = _residual()
    hist = model.fit(x, [y, np.zeros((64, 3), "float32")], batch_size=16, epochs=2, verbose=0, shuffle=False)
    store = model._engine._stores[16]
    return hist.history["loss"], model.get_weights(), store


def _regions(store) -> set[int]:
    return {r.uid for r in [*store.acts.values(), *store.grads.values(),
                            *(r for group in store.saved.values() for r in group)]}


@pytest.mark.parametrize("degree", [1, 2])
def test_training_gives_the_same_bits_in_fewer_buffers(degree, monkeypatch):
    loss1, w1, store1 = _fit(degree)
    acts = {r.uid for r in store1.acts.values()}
    assert len({r.uid for r in store1.grads.values()}) < len(store1.grads)  # gradients share
    assert any(r.uid in acts for r in store1.grads.values())  # and a gradient takes an activation's buffer
    monkeypatch.setattr(buffer_reuse, "plan", lambda buffers, span, excluded: {})
    loss0, w0, store0 = _fit(degree)
    assert len(_regions(store0)) == len(store0.acts) + len(store0.grads) + sum(map(len, store0.saved.values()))
    assert len(_regions(store1)) < len(_regions(store0)) and store1.nbytes() < store0.nbytes()
    assert loss1 == loss0
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_random_strategies_train_alike_with_shared_gradients(name, monkeypatch):
    strategy = random_strategy(graph_of(name), np.random.default_rng(7), 3)
    l1, w1 = train(name, strategy, cpus=3)
    monkeypatch.setattr(buffer_reuse, "plan", lambda buffers, span, excluded: {})
    l0, w0 = train(name, strategy, cpus=3)
    np.testing.assert_allclose(l1, l0, rtol=1e-5, atol=1e-6)
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=2e-6)


def _states_model():
    keras.utils.set_random_seed(1)
    i = keras.Input((4, 6))
    t, _h, c = layers.LSTM(3, return_state=True)(i)  # the cell state: an output nobody differentiates
    for _ in range(3):
        t = layers.Dense(3, activation="tanh")(t)  # gradients of the state's shape, freed before the LSTM's
    model = keras.Model(i, [layers.Dense(4, activation="softmax")(t), c])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=["sparse_categorical_crossentropy", None])
    return model


def _fit_twice(rebuild: bool):
    """Two fits; with `rebuild`, the second builds new training programs on the first's activation store
    (as a second global batch with the same shard does under MPI, or Engine.measure's program)."""
    config.set(cpus=1)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((32, 4, 6)).astype("float32"), rng.integers(0, 4, 32)
    model = _states_model()
    labels = [y, np.zeros((32, 3), "float32")]
    model.fit(x, labels, batch_size=16, epochs=1, verbose=0, shuffle=False)
    if rebuild:
        e = model._engine
        for key in [k for k in e._programs if k[0] == "train"]:
            e.rtm.forget_trace(e._programs.pop(key).trace_name)
    model.fit(x, labels, batch_size=16, epochs=1, verbose=0, shuffle=False)
    return model.get_weights()


@pytest.mark.parametrize("rebuild", [False, True])
def test_gradients_zeroed_once_are_never_shared_by_any_program_on_the_store(rebuild, monkeypatch):
    got = _fit_twice(rebuild)
    monkeypatch.setattr(buffer_reuse, "plan", lambda buffers, span, excluded: {})
    want = _fit_twice(rebuild)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)


def _declared_ops_model():
    """Every op that declares a backward reading less than all its tensors (Op.backward_reads), in a
    model whose dead activations are taken by later ones of the same shape."""
    keras.utils.set_random_seed(3)
    i = keras.Input((6, 8))
    h = layers.Dense(8)(i)  # linear: its output is not read by its backward
    h = layers.Reshape((8, 6))(layers.Permute((2, 1))(h))  # transpose, reshape: the gradient alone
    h = layers.Reshape((6, 8))(h)
    a = layers.EinsumDense("abc,cd->abd", output_shape=(6, 8), bias_axes="d")(h)  # a projection
    s = keras.ops.softmax(keras.ops.matmul(a, keras.ops.transpose(h, (0, 2, 1))))  # matmul, softmax
    h = layers.LayerNormalization()(layers.Add()([h, keras.ops.matmul(s, a)]))
    h = layers.Subtract()([h, layers.Multiply()([h, layers.Dense(8, activation="relu")(h)])])
    h = layers.Dropout(0.3)(layers.Dense(8, activation="tanh")(h))
    h = layers.Activation("relu")(layers.BatchNormalization()(h))  # from its output; batch norm's input
    h = layers.Activation("gelu")(layers.Activation("sigmoid")(layers.Dense(8)(h)))
    h = 1.5 - (layers.Dense(8)(h) * 0.5 + 2.0) / 4.0  # scalar ops reading neither tensor
    h = keras.ops.einsum("bij,bkj->bik", layers.Dense(8)(h), h)  # einsum: its operands, not its output
    h = keras.ops.where(h > 0.1, layers.Dense(6)(h), -h)  # where: the condition alone
    out = layers.Dense(4, activation="softmax")(layers.Flatten()(h))
    model = keras.Model(i, out)
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy")
    return model


def _embedding_model():
    keras.utils.set_random_seed(4)
    i = keras.Input((5,), dtype="int32")
    h = layers.Add()([layers.Embedding(12, 8)(i), layers.Embedding(12, 8)(i)])  # outputs unread by backward
    h = layers.Dense(8)(layers.Dense(8)(h))
    model = keras.Model(i, layers.Dense(3, activation="softmax")(layers.GlobalAveragePooling1D()(h)))
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy")
    return model


def _fit_embedding():
    config.set(cpus=1)
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 12, (32, 5)).astype("int32"), rng.integers(0, 3, 32)
    model = _embedding_model()
    hist = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    return hist.history["loss"], model.get_weights(), model._engine


def test_embedding_outputs_share_after_their_last_reader(monkeypatch):
    loss1, w1, engine = _fit_embedding()
    store = engine._stores[16]
    emb = [t.uid for n in engine.tgraph.graph.nodes if n.op.type_name == "embedding" for t in n.outputs]
    users = {}
    for uid, r in [*store.acts.items(), *store.grads.items()]:
        users.setdefault(r.uid, set()).add(uid)
    assert all(len(users[store.acts[uid].uid]) > 1 for uid in emb)  # each holds another tensor too
    monkeypatch.setattr(buffer_reuse, "plan", lambda buffers, span, excluded: {})
    loss0, w0, _ = _fit_embedding()
    assert loss1 == loss0
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_array_equal(a, b)


def _fit_declared():
    config.set(cpus=1)
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((48, 6, 8)).astype("float32"), rng.integers(0, 4, 48)
    model = _declared_ops_model()
    hist = model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    return hist.history["loss"], model.get_weights(), model._engine._stores[16]


def test_activations_backward_does_not_read_share_buffers_and_train_alike(monkeypatch):
    loss1, w1, store1 = _fit_declared()
    by_region: dict = {}
    for uid, r in store1.acts.items():
        by_region.setdefault(r.uid, []).append(uid)
    assert any(len(uids) > 1 for uids in by_region.values())  # activations share after their last reader
    monkeypatch.setattr(buffer_reuse, "plan", lambda buffers, span, excluded: {})
    loss0, w0, store0 = _fit_declared()
    assert store1.nbytes() < store0.nbytes()
    assert loss1 == loss0
    for a, b in zip(w1, w0, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_backward_reading_what_it_declared_unread_fails_loudly(monkeypatch):
    from flexflow_keras.ops.nn_ops import SoftmaxOp

    monkeypatch.setattr(SoftmaxOp, "backward_reads", lambda self: (False, False))  # a wrong declaration
    with pytest.raises(Exception, match="softmax.backward.*NoneType"):
        _fit_declared()


_GPU_SCRIPT = """
import json, sys
sys.path[:0] = sys.argv[2:4]
import numpy as np
import flexflow_keras as keras
keras.config.set(gpus=int(sys.argv[1]), cpus=1)
import test_buffer_reuse as t
rng = np.random.default_rng(0)
x, y = rng.standard_normal((8, 6, 8)).astype("float32"), rng.integers(0, 4, 8)
model = t._declared_ops_model()
h = model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
acts = {}
for r in model._engine._stores[8].acts.values():
    acts[r.uid] = acts.get(r.uid, 0) + 1
print(json.dumps({"loss": h.history["loss"], "w": [w.ravel().tolist() for w in model.get_weights()],
                  "shared": max(acts.values()) > 1}))
"""


def _gpu_spec(gpus: int) -> dict:
    """subprocess arguments of one run of _GPU_SCRIPT, the CUDA simulator on (`gpus=0`: the CPU kernels)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", FF_LOG_LEVEL="WARNING")
    return dict(args=[sys.executable, "-c", _GPU_SCRIPT, str(gpus), str(Path(__file__).parent),
                      str(Path(__file__).parents[2])],
                env=env, timeout=900)


def _outcome(proc) -> dict:
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# The simulated run takes minutes on 2 cores (its warp-per-row kernels run as Python threads): it runs on
# the suite's background thread (tests/background_runs.py) while the other tests go on.
GPU_RUN = background_runs.Command(lambda work: _gpu_spec(1))


@pytest.mark.background(GPU_RUN)
def test_gpu_kernels_read_only_what_their_ops_declare():
    """Under the CUDA simulator, with -ll:gpu 1: the declared backward reads hold for the CUDA kernels
    too (they get None for the others), activations share, and training matches the CPU's."""
    cpu = _outcome(subprocess.run(capture_output=True, text=True, **_gpu_spec(0)))
    on = _outcome(GPU_RUN.result()[0])
    assert on["shared"] and cpu["shared"]
    np.testing.assert_allclose(on["loss"], cpu["loss"], rtol=1e-5)
    for a, b in zip(on["w"], cpu["w"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


class _Penalised(layers.Layer):
    """Adds a loss read from an intermediate activation: a node of the training and evaluation graphs that
    prediction does not run."""

    def call(self, x):
        self.add_loss(0.1 * keras.ops.mean(keras.ops.square(x)))
        return x


def _inference_model():
    keras.utils.set_random_seed(6)
    i = keras.Input((6, 8))
    h = layers.Dense(8)(i)
    h = _Penalised()(layers.Reshape((8, 6))(layers.Permute((2, 1))(h)))
    h = layers.Reshape((6, 8))(h)
    for _ in range(3):  # a chain: the third output takes the first's buffer once the second is done with it
        h = layers.Dense(6)(h)
    out = layers.Dense(3, activation="softmax")(layers.Flatten()(h))
    model = keras.Model(i, out)
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    return model


def _inference_calls(order):
    config.set(cpus=1)
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((24, 6, 8)).astype("float32"), rng.integers(0, 3, 24)
    model = _inference_model()
    got = []
    for call in order:
        if call == "predict":
            got.append(model.predict(x, batch_size=8, verbose=0))
        elif call == "evaluate":
            got.append(np.asarray(model.evaluate(x, y, batch_size=8, verbose=0)))
        else:
            got.append(np.asarray(model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False).history["loss"]))
    return got, model._engine._stores[8]


@pytest.mark.parametrize("order", [("predict",), ("evaluate",), ("predict", "evaluate", "fit", "predict"),
                                   ("evaluate", "fit", "evaluate", "predict")])
def test_evaluation_and_prediction_stores_share_and_give_the_same_numbers(order, monkeypatch):
    got, store = _inference_calls(order)
    if order[0] != "fit" and "fit" not in order:
        assert len({r.uid for r in store.acts.values()}) < len(store.acts)  # activations die in the forward
    monkeypatch.setattr(buffer_reuse, "plan", lambda buffers, span, excluded: {})
    want, _ = _inference_calls(order)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
