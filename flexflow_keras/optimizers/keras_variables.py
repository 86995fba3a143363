"""`Optimizer.variables` as Keras 3 lists them: ``iteration`` (int64), ``learning_rate`` (float32; absent
for a schedule or a callable), then, once the optimizer is built, the slots of every trainable variable in
Keras' order (saving/optimizer_state.py: groups of slot names, interleaved per variable where Keras makes
them in one call), then the optimizer's own state (Nadam's momentum-schedule product).

Each is an `OptimizerVariable`: an array with Keras' variable conveniences (``name`` such as
``dense_kernel_momentum``, ``path`` such as ``adam/dense_kernel_momentum``, ``numpy()``, ``value``,
``assign``). The slots of `apply_gradients` are the optimizer's own arrays, so ``assign`` (and
``tf.train.Checkpoint.restore``) writes them. The slots of a fit live in the engine's regions: the list holds
their values read when it is made, and ``assign`` on one of those changes only that copy.
"""

from __future__ import annotations

import numpy as np


class OptimizerVariable(np.ndarray):
    """One optimizer variable: an array with ``name``, ``path``, ``numpy()``, ``value`` and ``assign``."""

    def __array_finalize__(self, obj) -> None:
        self.name = getattr(obj, "name", None)
        self.path = getattr(obj, "path", None)

    def numpy(self):
        """The value as a plain array (a NumPy scalar for a 0-d variable, as TensorFlow's)."""
        value = np.array(self, copy=True).view(np.ndarray)
        return value[()] if value.ndim == 0 else value

    @property
    def value(self) -> np.ndarray:
        return self.view(np.ndarray)

    def assign(self, value) -> None:
        """Write `value` (broadcast to the variable's shape) into it."""
        self.view(np.ndarray)[...] = np.asarray(value, dtype=self.dtype)

    def __repr__(self) -> str:
        return f"<OptimizerVariable path={self.path}, shape={self.shape}, dtype={self.dtype}>"


def _named(array: np.ndarray, name: str, owner: str) -> OptimizerVariable:
    out = np.asarray(array).view(OptimizerVariable)
    out.name, out.path = name, f"{owner}/{name}"
    return out


def _slot_name(variable, slot: str) -> str:
    """Keras' name of a variable's slot: its path with '/' as '_', then the slot (``dense_kernel_momentum``)."""
    path = getattr(variable, "path", None) or getattr(variable, "name", "variable")
    return f"{str(path).replace('/', '_')}_{slot}"


def keras_variables(opt) -> list[OptimizerVariable]:
    """The variables of `opt` in Keras 3's order (see the module docstring)."""
    from flexflow_keras.saving.optimizer_state import _has_lr_variable, _layout, _names, current_slots

    head = [_named(np.asarray(opt._iterations, np.int64), "iteration", opt.name)]
    if _has_lr_variable(opt):
        head.append(_named(np.asarray(float(opt.learning_rate), np.float32), "learning_rate", opt.name))
    ref = opt.__dict__.get("_ff_model")
    model = ref() if ref is not None else None
    slots = None
    if model is not None and getattr(model, "optimizer", None) is opt and opt._iterations > 0:
        slots = current_slots(model)
    if slots is not None:  # the slots of fit's engine, per trainable variable uid
        variables = [v for v in model.trainable_weights if v.uid in slots]
        arrays = {v.uid: slots[v.uid] for v in variables}
        key = _uid
    elif opt._eager_slots:  # apply_gradients' slots, per variable object
        variables = list(opt._eager_slot_owners.values())
        arrays = opt._eager_slots
        key = id
    else:
        return head
    body = [_named(arrays[key(v)][_names(opt, v).index(name)], _slot_name(v, name), opt.name)
            for v, name in _layout(opt, variables)]
    # Keras makes them unnamed (Nadam's u_product): auto-named variable, variable_1, ...
    state = [_named(a, "variable" if i == 0 else f"variable_{i}", opt.name)
             for i, a in enumerate(opt.keras_state_variables())]
    return head + body + state


def _uid(v) -> int:
    return v.uid
