"""tf.summary.image / text / audio (handson-ml3 ch. 10's TensorBoard section) write what TensorFlow writes:
read back with TensorBoard's EventAccumulator, the same tags, steps, plugin names, PNG pixels, strings and WAV
samples as tf.summary's own files. Before: the three were refused as raw TensorFlow."""

import io
import wave

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
pytest.importorskip("tensorboard")
from PIL import Image  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402

from flexflow_keras.keras_alias import _TensorFlow  # noqa: E402

FFTF = _TensorFlow("tensorflow")


def _write(T, logdir):
    rng = np.random.default_rng(0)
    writer = T.summary.create_file_writer(str(logdir))
    with writer.as_default():
        for step in (1, 2):
            T.summary.image("my_images", rng.random((4, 5, 6, 3)) * step / 2, step=step)
            T.summary.image("gray", (rng.random((1, 3, 2, 1)) * 255).astype("uint8"), step=step)
            T.summary.text("my_text", ["The step is " + str(step), "Its square is " + str(step ** 2)], step=step)
            wave_ = np.sin(np.arange(480) / 48000 * 2 * np.pi * 440 * step).astype("float32")
            T.summary.audio("my_audio", wave_.reshape(1, -1, 1), sample_rate=48000, step=step)
    writer.flush()
    events = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    events.Reload()
    out = {}
    for tag in sorted(events.Tags()["tensors"]):
        for e in events.Tensors(tag):
            values = list(e.tensor_proto.string_val)
            meta = events.SummaryMetadata(tag).plugin_data.plugin_name
            if tag in ("my_images", "gray"):
                values = values[:2] + [np.asarray(Image.open(io.BytesIO(v))).tolist() for v in values[2:]]
            elif tag == "my_audio":
                with wave.open(io.BytesIO(values[0])) as w:
                    values = [w.getframerate(), w.getnchannels(),
                              np.frombuffer(w.readframes(w.getnframes()), "<i2").tolist(), values[1]]
            out[(tag, e.step)] = (meta, [d.size for d in e.tensor_proto.tensor_shape.dim], values)
    return out


def test_image_text_and_audio_summaries_as_tensorflow_writes_them(tmp_path):
    ours, theirs = _write(FFTF, tmp_path / "ff"), _write(tf, tmp_path / "tf")
    assert sorted(ours) == sorted(theirs)
    for key in theirs:
        assert ours[key][:2] == theirs[key][:2], key
        if key[0] == "my_audio":  # 16-bit samples: TensorFlow rounds the same way, within one step
            assert ours[key][2][:2] == theirs[key][2][:2] and ours[key][2][3] == theirs[key][2][3]
            np.testing.assert_allclose(ours[key][2][2], theirs[key][2][2], atol=1)
        else:
            assert ours[key][2] == theirs[key][2], key
