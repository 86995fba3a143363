"""tf.train.Checkpoint / CheckpointManager / latest_checkpoint (tf_checkpoint.py), as TensorFlow's DCGAN
tutorial uses them: save models, optimizers and variables every few epochs, restore the latest."""

import numpy as np
import pytest

import flexflow_keras as keras
from flexflow_keras.errors import DataError, MissingFileError
from flexflow_keras.keras_alias import _TensorFlow
from flexflow_keras.ops.tape import GradientTape

tf = _TensorFlow("tensorflow")


def _trained(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    opt = keras.optimizers.Adam(0.1)
    x = np.ones((4, 3), "float32")
    with GradientTape() as tape:
        loss = keras.ops.mean(keras.ops.square(model(x)))
    opt.apply_gradients(zip(tape.gradient(loss, model.trainable_weights), model.trainable_weights, strict=True))
    return model, opt


def test_save_restore_latest_and_manager(tmp_path):
    model, opt = _trained(1)
    step = tf.Variable(7.0)
    ckpt = tf.train.Checkpoint(generator=model, generator_optimizer=opt, step=step)
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    first = ckpt.save(file_prefix=str(tmp_path / "ckpt"))
    second = ckpt.save(file_prefix=str(tmp_path / "ckpt"))
    assert first.endswith("ckpt-1") and second.endswith("ckpt-2")
    assert tf.train.latest_checkpoint(str(tmp_path)) == second
    saved = [w.copy() for w in model.get_weights()] + [a.copy() for a in opt.variables]

    other, other_opt = _trained(2)
    other_opt.apply_gradients(zip([np.zeros((3, 2), "float32"), np.zeros(2, "float32")], other.trainable_weights,
                                  strict=True))
    other_step = tf.Variable(0.0)
    restored = tf.train.Checkpoint(generator=other, generator_optimizer=other_opt, step=other_step)
    restored.restore(tf.train.latest_checkpoint(str(tmp_path))).expect_partial()
    for a, b in zip(saved, other.get_weights() + list(other_opt.variables), strict=True):
        np.testing.assert_array_equal(a, b)
    assert float(other_step.numpy()) == 7.0 and other_opt._iterations == opt._iterations

    manager = tf.train.CheckpointManager(ckpt, str(tmp_path / "managed"), max_to_keep=2)
    for _ in range(3):
        manager.save()
    assert sorted(p.name for p in (tmp_path / "managed").glob("*.npz")) == ["ckpt-4.npz", "ckpt-5.npz"]
    assert manager.latest_checkpoint.endswith("ckpt-5")


def test_restore_errors_name_the_problem(tmp_path):
    model, _ = _trained(1)
    path = tf.train.Checkpoint(net=model).save(str(tmp_path / "c"))
    wider = keras.Sequential([keras.Input((3,)), keras.layers.Dense(5)])
    with pytest.raises(DataError, match=r"shape \(3, 2\), the object has \(3, 5\)"):
        tf.train.Checkpoint(net=wider).restore(path)
    with pytest.raises(DataError, match="has no 'other/"):
        tf.train.Checkpoint(other=model).restore(path)
    with pytest.raises(MissingFileError, match="does not exist"):
        tf.train.Checkpoint(net=model).restore(str(tmp_path / "nope-3"))


def test_restore_before_the_first_step_keeps_the_slots(tmp_path):
    """The DCGAN tutorial restores into a fresh optimizer: its slots arrive at the first apply_gradients
    (TensorFlow's deferred restore), so resumed training takes the step the uninterrupted one takes."""
    model, opt = _trained(1)
    path = tf.train.Checkpoint(m=model, o=opt).save(str(tmp_path / "c"))
    grads = [np.full((3, 2), 0.5, "float32"), np.full(2, 0.5, "float32")]
    fresh_model, _ = _trained(5)
    fresh_opt = keras.optimizers.Adam(0.1)
    tf.train.Checkpoint(m=fresh_model, o=fresh_opt).restore(path)
    opt.apply_gradients(zip(grads, model.trainable_weights, strict=True))
    fresh_opt.apply_gradients(zip(grads, fresh_model.trainable_weights, strict=True))
    for a, b in zip(model.get_weights(), fresh_model.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_optimizer_iterations_reads_as_keras_variable():
    _, opt = _trained(1)
    assert int(opt.iterations) == 1 and opt.iterations.numpy() == 1 and opt.iterations == 1
