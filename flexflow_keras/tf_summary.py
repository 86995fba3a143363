"""`tf.summary` as custom training loops use it for TensorBoard: ``writer =
tf.summary.create_file_writer(log_dir)``, then ``with writer.as_default(): tf.summary.scalar("loss",
loss, step=epoch)`` (and `histogram`, `image`, `text`, `audio`, as TensorBoard's plugins read them: PNGs,
strings, 16-bit WAVs). The event files are TensorBoard's, written by the same writer as
`keras.callbacks.TensorBoard` (callbacks/tensorboard.py), with the `tensorboard` package and no TensorFlow.

As in TensorFlow, a summary written while no writer is the default writes nothing and returns False, and
one without a `step` takes `tf.summary.experimental.set_step`'s (an error when none was set).
"""

from __future__ import annotations

import contextlib

import numpy as np

from flexflow_keras.errors import ConfigError

_default: list = []  # the writers made default, innermost last
_step: list = [None]


class SummaryWriter:
    """What `create_file_writer` returns: one event file in `logdir`, opened at the first summary."""

    def __init__(self, logdir: str):
        self.logdir = str(logdir)
        self._writer = None

    def _file(self):
        from flexflow_keras.callbacks.tensorboard import _Writer

        if self._writer is None:
            self._writer = _Writer(self.logdir)
        return self._writer

    @contextlib.contextmanager
    def as_default(self, step=None):
        """Make this the writer `scalar`/`histogram` write to, inside the block."""
        _default.append(self)
        old = _step[0]
        if step is not None:
            _step[0] = int(step)
        try:
            yield self
        finally:
            _default.remove(self)
            _step[0] = old
            self.flush()

    def set_as_default(self, step=None) -> None:
        _default.append(self)
        if step is not None:
            _step[0] = int(step)

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        while self in _default:
            _default.remove(self)

    def init(self) -> None:
        """TensorFlow's explicit initialisation: the file opens at the first summary anyway."""


def create_file_writer(logdir, max_queue=None, flush_millis=None, filename_suffix=None, name=None,
                       experimental_trackable=False, experimental_mesh=None) -> SummaryWriter:
    return SummaryWriter(logdir)


def _target(step, what: str):
    if not _default:
        return None, None
    if step is None:
        step = _step[0]
    if step is None:
        raise ConfigError(f"tf.summary.{what}: no step given and none set; pass step= (e.g. step=epoch) or call "
                          f"tf.summary.experimental.set_step(n) first.")
    return _default[-1], int(np.asarray(step))


def scalar(name, data, step=None, description=None) -> bool:
    """Write the scalar `data` under the tag `name` to the default writer (False: no default writer)."""
    writer, step = _target(step, "scalar")
    if writer is None:
        return False
    writer._file().scalar(str(name), float(np.asarray(data)), step)
    return True


def histogram(name, data, step=None, buckets=None, description=None) -> bool:
    """Write a histogram of `data` under the tag `name` to the default writer."""
    writer, step = _target(step, "histogram")
    if writer is None:
        return False
    writer._file().histogram(str(name), np.asarray(data), step, buckets=int(buckets or 30))
    return True


def image(name, data, step=None, max_outputs=3, description=None) -> bool:
    """Write up to `max_outputs` images of `data` (``[k, h, w, c]``, c in 1, 3, 4; floats in [0, 1] or
    uint8) as PNGs under the tag `name` (TensorBoard's Images tab)."""
    import io

    from PIL import Image
    from tensorboard.plugins.image import metadata

    writer, step = _target(step, "image")
    if writer is None:
        return False
    x = np.asarray(data)
    if x.ndim != 4 or x.shape[-1] not in (1, 3, 4):
        raise ConfigError(f"tf.summary.image('{name}') expects images of shape [k, height, width, channels] with 1, "
                          f"3 or 4 channels, received shape {x.shape}.")
    if x.dtype != np.uint8:  # as tf.image.convert_image_dtype(saturate=True): x * 255.5, clipped, truncated
        x = np.clip(x.astype(np.float64) * 255.5, 0, 255).astype(np.uint8)
    pngs = []
    for img in x[:max_outputs]:
        buf = io.BytesIO()
        Image.fromarray(img[..., 0] if img.shape[-1] == 1 else img).save(buf, format="PNG")
        pngs.append(buf.getvalue())
    values = [str(x.shape[2]).encode(), str(x.shape[1]).encode(), *pngs]  # width, height, then the images
    writer._file().strings(str(name), values, [len(values)], metadata.create_summary_metadata(None, description),
                           step)
    return True


def text(name, data, step=None, description=None) -> bool:
    """Write the string (or array of strings) `data` under the tag `name` (TensorBoard's Text tab)."""
    from tensorboard.plugins.text import metadata

    writer, step = _target(step, "text")
    if writer is None:
        return False
    x = np.asarray(data, dtype=object)
    values = [v if isinstance(v, bytes) else str(v).encode() for v in x.reshape(-1)]
    writer._file().strings(str(name), values, x.shape, metadata.create_summary_metadata(None, description), step)
    return True


def audio(name, data, sample_rate, step=None, max_outputs=3, encoding=None, description=None) -> bool:
    """Write up to `max_outputs` clips of `data` (``[k, t, c]`` floats in [-1, 1]) as 16-bit WAVs at
    `sample_rate` under the tag `name` (TensorBoard's Audio tab)."""
    import io
    import wave

    from tensorboard.plugins.audio import metadata

    writer, step = _target(step, "audio")
    if writer is None:
        return False
    if encoding not in (None, "wav"):
        raise ConfigError(f"tf.summary.audio('{name}'): only encoding='wav' exists, received {encoding!r}.")
    x = np.asarray(data, dtype=np.float64)
    if x.ndim != 3:
        raise ConfigError(f"tf.summary.audio('{name}') expects clips of shape [k, samples, channels], received "
                          f"shape {x.shape}.")
    values = []
    for clip in x[:max_outputs]:
        buf = io.BytesIO()
        with wave.open(buf, "wb") as w:
            w.setnchannels(clip.shape[1])
            w.setsampwidth(2)
            w.setframerate(int(np.asarray(sample_rate)))
            w.writeframes((np.round(np.clip(clip, -1, 1) * 32767)).astype("<i2").tobytes())
        values += [buf.getvalue(), b""]  # each clip and its (empty) label
    meta = metadata.create_summary_metadata(None, description, metadata.Encoding.Value("WAV"))
    writer._file().strings(str(name), values, [len(values) // 2, 2], meta, step)
    return True


def flush(writer=None, name=None) -> None:
    for w in [writer] if writer is not None else list(_default):
        w.flush()


def set_step(step) -> None:
    """`tf.summary.experimental.set_step`: the step of summaries written without one."""
    _step[0] = None if step is None else int(np.asarray(step))


def get_step():
    return _step[0]
