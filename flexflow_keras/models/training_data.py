"""The model's data as the arrays its engine reads (`TrainingData`, a mixin of `Trainer`).

It owns turning what fit/evaluate/predict and the `*_on_batch` calls receive (an array, a list, a dict by
input or output name, with sample weights and class weights) into one contiguous array per input and
per output of the model's graph, checked against the model before anything runs (shapes and dtypes,
labels against each loss); the step's sources (inputs + labels + the loss outputs' sample weights);
`validation_data`; and the data fit and evaluate use when given none (the `-d` dataset, else synthetic
data, always logged).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import numpy as np

from flexflow_keras import config as _config
from flexflow_keras.errors import DataError
from flexflow_keras.models import custom_training, sample_weights
from flexflow_keras.models.training_feeds import folder_dataset, folder_for_split, is_stream
from flexflow_keras.models.training_utils import (
    check_inputs,
    check_lengths,
    label_array,
    labels_per_output,
    to_list,
    unlabelled,
)

log = logging.getLogger("flexflow_keras")


class TrainingData:
    """The data of the training calls as the model's input and label arrays (mixed into `Trainer`)."""

    def _prepare(self, x, y, sample_weight, need_labels=True):
        struct = getattr(self, "_input_struct", None)
        if isinstance(x, Mapping) and isinstance(struct, dict) and set(x) <= set(struct):
            # Model({"a": Input(name="first"), ...}): data keyed as the model's inputs are (Keras 3)
            x = {struct[k].name: v for k, v in x.items()}
        xs = custom_training.adjust_input_rank(to_list(x, self._known_input_names(x), "input"),
                                               getattr(self, "_inputs", ()))  # Keras 3's rank rule (i9-ops)
        graph = self._graph_for(xs)
        xs = self._input_arrays(x, graph)
        in_names = self._input_names_for(graph)
        xs = [np.ascontiguousarray(a, dtype=np.float32) if a.dtype.kind in "fub" and
              graph.inputs[i].dtype.startswith("float") else np.ascontiguousarray(a, dtype=graph.inputs[i].dtype)
              for i, a in enumerate(xs)]
        check_inputs(xs, [t.spec for t in graph.inputs], in_names)
        ys = None
        if need_labels:
            if y is None and custom_training.labels_optional(self, graph, self._per_output(
                    getattr(self, "_loss_arg", None), self._output_names_for(graph), "loss")):
                y = [custom_training.placeholder_labels(len(xs[0])) for _ in graph.outputs]
            if y is None:
                raise DataError(f"Model '{self.name}' needs labels y to compute its loss; received y=None.")
            ys = self._labels(y, graph, len(xs[0]))
        n = check_lengths(xs, ys, None)
        names = self._output_names_for(graph)
        if isinstance(getattr(self, "_output_struct", None), dict) and isinstance(sample_weight, (list, tuple)) \
                and len(sample_weight) == len(names) > 1 and all(w is None or np.ndim(w) >= 1 for w in sample_weight):
            from flexflow_keras.models.training import _in_key_order

            sample_weight = _in_key_order(sample_weight, names)  # by sorted key, as the labels
        sw = sample_weights.normalize(sample_weight, self._output_names_for(graph),
                                      [t.shape for t in graph.outputs], n)
        return graph, xs, ys, sw, n

    def _labels(self, y, graph, n: int) -> list[np.ndarray]:
        """`y` (an array, a list, or a dict by output name) as one label array per output of `graph`."""
        names = self._output_names_for(graph)
        y = labels_per_output(y, names, self._per_output(getattr(self, "_loss_arg", None), names, "loss"), n)
        self.__dict__["_ff_unlabelled"] = unlabelled(y, names)  # no metrics for them (Trainer._loss_specs)
        if isinstance(getattr(self, "_output_struct", None), dict) and isinstance(y, (list, tuple)) and \
                len(y) == len(names) > 1:
            from flexflow_keras.models.training import _in_key_order

            y = _in_key_order(y, names)  # a list of labels for dict outputs: by sorted key, as Keras 3
        return [label_array(a) for a in to_list(y, names, "output")]

    def _input_arrays(self, x, graph) -> list:
        """`x` (an array, a list, or a dict by input name) as the list of `graph`'s input arrays, with Keras'
        rank rule ((N,) data for an Input of shape (1,) is (N, 1))."""
        struct = getattr(self, "_input_struct", None)
        if isinstance(x, Mapping) and isinstance(struct, dict) and set(x) <= set(struct):
            x = {struct[k].name: v for k, v in x.items()}
        return custom_training.adjust_input_rank(to_list(x, self._input_names_for(graph), "input"), graph.inputs)

    def _known_input_names(self, x=None) -> list[str]:
        """The model's input names; for a subclassed model not traced yet, those the structure of the data
        `x` gives (a dict's keys, a list of several arrays: one input each, handed to call() as a dict or
        a list, as Keras hands them; models/model.py `_record`)."""
        names = list(getattr(self, "input_names", None) or [])
        if names:
            return names
        from flexflow_keras.models.model import Model

        if type(self)._op_graph is Model._op_graph:  # subclassed: call() takes whatever structure it is given
            if isinstance(x, Mapping) and len(x) >= 1:
                self._input_structure = ("dict", tuple(x))
                return list(x)
            if isinstance(x, (list, tuple)) and len(x) > 1 and all(getattr(a, "ndim", 0) >= 1 for a in x):
                self._input_structure = ("list", len(x))
                return [f"input_{i}" for i in range(len(x))]
        return ["input"]

    def _validate_labels(self, graph, ys) -> None:
        from flexflow_keras import losses as losses_mod

        out_names = self._output_names_for(graph)
        _check_label_count(self.name, out_names, ys)
        loss_args = self._per_output(getattr(self, "_loss_arg", None), out_names, "loss")
        for i, (y, spec) in enumerate(zip(ys, graph.outputs, strict=True)):
            if loss_args[i] is not None:
                losses_mod.get(loss_args[i]).validate(y, spec.shape, out_names[i])

    def _default_data(self, n_batches_hint: int, batch_size: int, split: str = "train", seed: int | None = None):
        """The -d dataset when given (its `split`, shaped for the model), else synthetic data shaped for the
        model (always logged). `seed`: an image folder's shuffle seed (fit's own, so that the folder trains in
        the order its decoded arrays would)."""
        from flexflow_keras import losses as losses_mod
        from flexflow_keras.data import SyntheticSource
        from flexflow_keras.data.formats import detect, flag_source
        from flexflow_keras.data.formats.detect import check_exists

        cfg = _config.get()
        if cfg.dataset:
            _config.note_dataset_read(cfg.dataset)
        graph = self._graph_for(None)
        out_names = self._output_names_for(graph)
        loss_args = self._per_output(getattr(self, "_loss_arg", None), out_names, "loss")
        losses = [None if a is None else losses_mod.get(a) for a in loss_args]
        found = detect(check_exists(cfg.dataset)) if cfg.dataset else None
        if found is not None and found.kind == "image-folder":  # decoded by the loaders, not held in memory
            return folder_dataset(self, folder_for_split(found.target, split), batch_size, seed), None
        if cfg.dataset:
            source = flag_source(cfg.dataset, [t.spec for t in graph.inputs], [t.spec for t in graph.outputs],
                                 losses, split, self._input_names_for(graph))
        else:
            source = SyntheticSource([t.spec for t in graph.inputs], [t.spec for t in graph.outputs],
                                     n_batches_hint * batch_size, loss=losses, seed=cfg.seed or 0)
        log.info("data: %s", source.describe())
        return source.x, source.y

    def _class_weights(self, class_weight, ys, sw):
        if not class_weight:
            return sw
        if sw is not None:  # Keras 3 refuses the pair (its array adapter and train_on_batch)
            raise ValueError(f"Model '{self.name}' received both class_weight and sample_weight; Keras takes one "
                             f"of them. Fold the class weights into the sample weights (sample_weight * "
                             f"class_weight[label]) and pass sample_weight alone.")
        if len(ys) != 1:
            raise ValueError("class_weight is only supported for models with a single output; use "
                             "sample_weight for several outputs.")
        y = ys[0]
        classes = np.argmax(y, axis=-1) if (y.ndim > 1 and y.shape[-1] > 1) else y.reshape(len(y), -1)[:, 0]
        w = np.array([float(class_weight.get(int(c), 1.0)) for c in classes.astype(np.int64)], np.float32)
        return sample_weights.scale(sw, w)

    def _unpack_validation(self, data):
        if is_stream(data):
            return data  # evaluated batch by batch at the end of each epoch
        if not isinstance(data, (tuple, list)) or len(data) not in (2, 3):
            raise ValueError("validation_data must be a tuple (x_val, y_val) or (x_val, y_val, "
                             f"val_sample_weight); received {type(data).__name__} of length "
                             f"{len(data) if hasattr(data, '__len__') else '?'}.")
        _, xs, ys, sw, _ = self._prepare(data[0], data[1], data[2] if len(data) == 3 else None)
        return xs, ys, sw

    def _hand_weights(self, sw) -> None:
        """Note the rank of the sample weights `sw` (None: none) of the call about to pick its engine: a
        compute_loss override gets them as a symbolic input of its step graph (custom_training.weight_rank)."""
        self.__dict__["_ff_weight_rank"] = custom_training.weight_rank(self, sw)

    def _sources(self, xs, ys, sw, n):
        key = getattr(self, "_engine_key", None)
        custom_training.check_override_weights(self, sw, key[2] if key else 0)
        loss_outputs: list[int] = []
        if isinstance(sw, tuple):  # one weight array per output: the loader wants those of the losses
            out_names = self._output_names_for(self._graph_for(xs))
            loss_outputs = [out_names.index(k) for k in getattr(self, "_loss_names", [])]
        return tuple(xs) + tuple(ys) + (sample_weights.for_losses(sw, n, loss_outputs),)


def _check_label_count(model_name: str, out_names, ys) -> None:
    """One label array per output, as Keras 3's loss container requires (it stops on "y_true and y_pred have
    different structures"): say what the model expects, what came, and how to pass it."""
    if len(ys) == len(out_names):
        return
    got = ", ".join(str(tuple(np.shape(y))) for y in ys)
    example = ", ".join(f"y_{n}" for n in out_names)
    raise DataError(f"Model '{model_name}' has {len(out_names)} outputs {list(out_names)} and takes one label "
                    f"array per output; received {len(ys)} label array{'s' if len(ys) != 1 else ''} (shape "
                    f"{got}). Pass y as a list of {len(out_names)} arrays in output order, [{example}], or a "
                    f"dict by output name; give an output no label with loss None for it in compile().")
