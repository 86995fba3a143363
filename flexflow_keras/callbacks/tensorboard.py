"""`keras.callbacks.TensorBoard`: event files TensorBoard reads, written with the `tensorboard` package's
own record writer and protos (no TensorFlow).

Layout and tags as Keras 3: ``<log_dir>/train`` and ``<log_dir>/validation``; per epoch ``epoch_<metric>``
(validation values without their ``val_`` prefix, in the validation folder) and ``epoch_learning_rate``;
with `update_freq` "batch" or N, ``batch_<metric>`` every N training batches (step: the global batch);
``evaluation_<metric>_vs_iterations`` (step: optimizer iterations) after each validation; with
`histogram_freq` N, ``<weight path>/histogram`` of every weight every N epochs; with `write_graph`, the
model's JSON under the tag ``keras`` (TensorBoard's Graphs tab draws it).
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import time

import numpy as np

from flexflow_keras.callbacks.callback import Callback
from flexflow_keras.errors import FlexFlowKerasError

log = logging.getLogger("flexflow_keras")


class MissingDependencyError(FlexFlowKerasError, ImportError):
    """An optional package a feature needs is not installed."""


def _tb():
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter
    except ImportError as e:
        raise MissingDependencyError(
            f"keras.callbacks.TensorBoard writes TensorBoard event files with the 'tensorboard' package, which "
            f"is not installed ({e}). Install it with `pip install tensorboard` (or `pip install "
            f"flexflow_keras[tensorboard]`); TensorFlow is not needed.") from None
    return event_pb2, summary_pb2, tensor_pb2, RecordWriter


_files = itertools.count()


class _Writer:
    """One event file: scalars, histograms and the model's JSON, as TensorBoard's records (its
    `RecordWriter` on a plain file: its `EventFileWriter` would import TensorFlow when installed)."""

    def __init__(self, logdir: str):
        self.event_pb2, self.summary_pb2, self.tensor_pb2, record_writer = _tb()
        os.makedirs(logdir, exist_ok=True)
        name = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}.{next(_files)}"
        self.path = os.path.join(logdir, name)
        self.file = record_writer(open(self.path, "wb"))  # noqa: SIM115 - closed by close()
        self.file.write(self.event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
                        .SerializeToString())

    def _add(self, value, step: int) -> None:
        summary = self.summary_pb2.Summary(value=[value])
        event = self.event_pb2.Event(wall_time=time.time(), step=int(step), summary=summary)
        self.file.write(event.SerializeToString())

    def scalar(self, tag: str, value, step: int) -> None:
        self._add(self.summary_pb2.Summary.Value(tag=tag, simple_value=float(value)), step)

    def histogram(self, tag: str, values, step: int, buckets: int = 30) -> None:
        v = np.asarray(values, np.float64).reshape(-1)
        if v.size == 0:
            return
        lo, hi = float(v.min()), float(v.max())
        edges = np.linspace(lo, hi, buckets + 1) if hi > lo else np.array([lo - 0.5, hi + 0.5])
        counts, edges = np.histogram(v, bins=edges)
        proto = self.summary_pb2.HistogramProto(min=lo, max=hi, num=float(v.size), sum=float(v.sum()),
                                                sum_squares=float(np.dot(v, v)),
                                                bucket_limit=[float(e) for e in edges[1:]],
                                                bucket=[float(c) for c in counts])
        self._add(self.summary_pb2.Summary.Value(tag=tag, histo=proto), step)

    def model_json(self, text: str, step: int = 0) -> None:
        meta = self.summary_pb2.SummaryMetadata(plugin_data=self.summary_pb2.SummaryMetadata.PluginData(
            plugin_name="graph_keras_model", content=b"1"))
        tensor = self.tensor_pb2.TensorProto(dtype=7, string_val=[text.encode()])  # 7: DT_STRING
        self._add(self.summary_pb2.Summary.Value(tag="keras", tensor=tensor, metadata=meta), step)

    def strings(self, tag: str, values, shape, metadata, step: int) -> None:
        """A string tensor of `shape` (`values` flat, bytes) with a plugin's `metadata`: how TensorFlow 2
        writes image, audio and text summaries."""
        from tensorboard.compat.proto import tensor_shape_pb2

        dims = [tensor_shape_pb2.TensorShapeProto.Dim(size=int(d)) for d in shape]
        tensor = self.tensor_pb2.TensorProto(dtype=7, tensor_shape=tensor_shape_pb2.TensorShapeProto(dim=dims),
                                             string_val=list(values))  # 7: DT_STRING
        self._add(self.summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=metadata), step)

    def flush(self) -> None:
        self.file.flush()

    def close(self) -> None:
        self.file.close()


class TensorBoard(Callback):
    """Write TensorBoard logs: scalars per epoch (and per batch), learning rate, weight histograms.

    Args:
        log_dir: the folder of the logs (``train`` and ``validation`` below it).
        histogram_freq: every how many epochs to write weight histograms (0: never).
        write_graph: write the model's architecture (its JSON) for TensorBoard's Graphs tab.
        write_images: not supported (raises); Keras writes weights as images.
        write_steps_per_second: also write ``epoch_steps_per_second`` (and ``batch_steps_per_second``
            with a batch `update_freq`).
        update_freq: "epoch", "batch", or an integer N: write ``batch_*`` scalars every N batches.
        profile_batch: must be 0 (the TensorFlow profiler does not apply here).
        embeddings_freq, embeddings_metadata: must be 0 / None (no projector output).

    Raises:
        MissingDependencyError (an ImportError): the `tensorboard` package is not installed.
    """

    writes_files = True  # under MPI only rank 0 runs it (callbacks/callback_list.py)

    def __new__(cls, *args, **kwargs):
        # Batch hooks only when batch scalars are written: a callback without them lets fit issue the next
        # step before the previous one's logs are handed out (models/step_window.py's passive)
        freq = kwargs.get("update_freq", args[5] if len(args) > 5 else "epoch")
        if cls is TensorBoard and freq != "epoch":
            cls = _BatchTensorBoard
        return super().__new__(cls)

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0, embeddings_freq=0,
                 embeddings_metadata=None):
        super().__init__()
        _tb()  # a missing package is reported when the callback is made
        if write_images:
            raise ValueError("TensorBoard(write_images=True) is not supported by flexflow_keras; use "
                             "histogram_freq=N for weight histograms.")
        if profile_batch:
            raise ValueError(f"TensorBoard(profile_batch={profile_batch!r}): profiling is not available in "
                             f"flexflow_keras (use --profiling for the runtime's profile). Pass profile_batch=0.")
        if embeddings_freq or embeddings_metadata:
            raise ValueError("TensorBoard(embeddings_freq=..., embeddings_metadata=...) is not supported by "
                             "flexflow_keras (no embedding projector output); leave them at 0 / None.")
        freq = 1 if update_freq == "batch" else update_freq
        if freq != "epoch" and (isinstance(freq, bool) or not isinstance(freq, int) or freq <= 0):
            raise ValueError(f"TensorBoard(update_freq=...) must be 'epoch', 'batch' or a positive integer, "
                             f"received {update_freq!r}.")
        if isinstance(histogram_freq, bool) or not isinstance(histogram_freq, int) or histogram_freq < 0:
            raise ValueError(f"TensorBoard(histogram_freq=...) must be an integer >= 0, received "
                             f"{histogram_freq!r}.")
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq = histogram_freq
        self.write_graph = bool(write_graph)
        self.write_steps_per_second = bool(write_steps_per_second)
        self.update_freq = freq
        self._writers: dict[str, _Writer] = {}
        self._global_train_batch = 0
        self._batch_start = 0.0
        self._epoch_start = 0.0
        self._epoch_iterations = 0

    # --- writers ------------------------------------------------------------------------------------------
    def _writer(self, which: str) -> _Writer:
        if which not in self._writers:
            self._writers[which] = _Writer(os.path.join(self.log_dir, which))
        return self._writers[which]

    def _close(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers = {}

    def _iterations(self) -> int:
        return int(getattr(getattr(self.model, "optimizer", None), "iterations", 0) or 0)

    def _learning_rate(self):
        opt = getattr(self.model, "optimizer", None)
        if opt is None:
            return None
        try:
            return float(opt.learning_rate)
        except (TypeError, ValueError, AttributeError):
            at = getattr(opt, "learning_rate_at", None)
            return float(at(self._iterations())) if at is not None else None

    # --- hooks ----------------------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._global_train_batch = 0
        if self.write_graph:
            try:
                text = self.model.to_json()
            except (NotImplementedError, ValueError, TypeError) as e:
                log.warning("TensorBoard: the model's graph is not written (%s)", str(e).splitlines()[0])
            else:
                self._writer("train").model_json(text)

    def on_train_end(self, logs=None):
        self._close()

    def on_epoch_begin(self, epoch, logs=None):
        self._epoch_start = time.perf_counter()
        self._epoch_iterations = self._iterations()

    def on_test_end(self, logs=None):
        self._evaluation(logs or {})

    def _evaluation(self, logs: dict) -> None:
        w, step = self._writer("validation"), self._iterations()
        for name, value in logs.items():
            if np.ndim(value) == 0:
                w.scalar(f"evaluation_{name}_vs_iterations", value, step)
        w.flush()

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        lr = self._learning_rate()
        if lr is not None:
            train["learning_rate"] = lr
        if self.write_steps_per_second:
            steps = self._iterations() - self._epoch_iterations
            train["steps_per_second"] = steps / max(time.perf_counter() - self._epoch_start, 1e-9)
        w = self._writer("train")
        for name, value in train.items():
            if np.ndim(value) == 0:
                w.scalar(f"epoch_{name}", value, epoch)
        if val:
            vw = self._writer("validation")
            for name, value in val.items():
                if np.ndim(value) == 0:
                    vw.scalar(f"epoch_{name}", value, epoch)
            vw.flush()  # the evaluation_*_vs_iterations scalars: on_test_end, which fit's validation calls
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            for layer in self.model.layers:
                for v in layer.weights:
                    w.histogram(f"{v.path.replace(':', '_')}/histogram", v.numpy(), epoch)
        w.flush()


class _BatchTensorBoard(TensorBoard):
    """`TensorBoard` with a batch `update_freq`: also writes ``batch_*`` scalars every N batches."""

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        self._batch_start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        if self._global_train_batch % self.update_freq != 0:
            return
        w, step = self._writer("train"), self._global_train_batch
        if self.write_steps_per_second:
            w.scalar("batch_steps_per_second", 1.0 / max(time.perf_counter() - self._batch_start, 1e-9), step)
        for name, value in (logs or {}).items():
            if np.ndim(value) == 0:
                w.scalar(f"batch_{name}", value, step)
