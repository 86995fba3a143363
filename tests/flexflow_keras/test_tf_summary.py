"""tf.summary in a custom loop (tf_summary.py): scalars and histograms in TensorBoard's event files,
read back with TensorBoard's own reader; nothing is written without a default writer; a missing step
is an error naming the fix."""

import numpy as np
import pytest

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from flexflow_keras.errors import ConfigError  # noqa: E402
from flexflow_keras.keras_alias import _TensorFlow  # noqa: E402

tf = _TensorFlow("tensorflow")


def test_scalars_and_histograms_reach_tensorboard(tmp_path):
    writer = tf.summary.create_file_writer(str(tmp_path / "train"))
    assert tf.summary.scalar("ignored", 1.0, step=0) is False  # no default writer: nothing written
    with writer.as_default():
        for epoch in range(3):
            assert tf.summary.scalar("loss", np.float32(1.0 / (epoch + 1)), step=epoch)
            tf.summary.histogram("weights", np.arange(10.0) * epoch, step=epoch)
        tf.summary.experimental.set_step(7)
        tf.summary.scalar("late", 2.0)
    events = EventAccumulator(str(tmp_path / "train"), size_guidance={"histograms": 0, "scalars": 0})
    events.Reload()
    assert [(e.step, round(e.value, 4)) for e in events.Scalars("loss")] == [(0, 1.0), (1, 0.5), (2, 0.3333)]
    assert [e.step for e in events.Scalars("late")] == [7] and "ignored" not in events.Tags()["scalars"]
    assert [h.histogram_value.max for h in events.Histograms("weights")] == [0.0, 9.0, 18.0]
    tf.summary.experimental.set_step(None)
    with writer.as_default(), pytest.raises(ConfigError, match="step="):
        tf.summary.scalar("loss", 1.0)
