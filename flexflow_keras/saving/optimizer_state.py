"""The optimizer's variables in Keras 3's order, for ``optimizer/vars`` of a ``.keras`` file.

Keras numbers them: ``0`` iterations (int64), ``1`` the learning rate (float32; absent for a schedule or
a callable), then, when gradient accumulation is on, one accumulator per trainable variable, then each
group of slots the optimizer creates, per trainable variable in the model's order. A group is one slot
name, or the names Keras creates in one call and so interleaves per variable (Adam's momentum and velocity,
Nadam's, Adadelta's, Adamax's, Ftrl's and Lamb's pairs, Adafactor's r, c and velocity, whose r and c have
shapes of their own), then the optimizer's own state variables (Nadam's momentum-schedule product). An
optimizer that never took a step has only the first two.

During training the slots live in the engine's regions (execution/store.py); a loaded model keeps them
as pending (`PendingSlots`) until its first engine is made, which `restore_pending_slots` fills.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from flexflow_keras.optimizers import schedules

log = logging.getLogger("flexflow_keras")
_INTERLEAVED = {"adam": ("momentum", "velocity"), "nadam": ("momentum", "velocity"),
                "adadelta": ("accumulated_grad", "accumulated_delta_var"), "adamax": ("momentum", "norm"),
                "ftrl": ("accumulator", "linear"), "lamb": ("momentum", "velocity"),
                "adafactor": ("r", "c", "velocity"), "schedule_free_adamw": ("momentum", "velocity")}
_ACCUMULATOR = "gradient_accumulator"


@dataclass
class PendingSlots:
    """Slots read from a file, for the engine the model makes next (while no step has run since)."""

    iterations: int
    slots: dict[int, list[np.ndarray]]  # variable uid -> arrays in `slot_specs` order


def _has_lr_variable(opt) -> bool:
    lr = opt._learning_rate
    return not isinstance(lr, schedules.LearningRateSchedule) and not callable(lr)


def _groups(opt) -> list[tuple[str, ...]]:
    names = [n for n, _ in opt.slot_specs((1,), "float32")]
    groups: list[tuple[str, ...]] = []
    if _ACCUMULATOR in names:
        groups.append((_ACCUMULATOR,))
    pair = _INTERLEAVED.get(getattr(opt, "family", ""))
    rest = [n for n in names if n != _ACCUMULATOR]
    if pair and all(p in rest for p in pair):
        groups.append(pair)
        rest = [n for n in rest if n not in pair]
    groups += [(n,) for n in rest]
    return groups


def _names(opt, v) -> list[str]:
    return [n for n, _ in opt.slot_specs(tuple(v.shape), "float32")]


def _layout(opt, variables) -> list[tuple]:
    """(variable, slot name) of every slot array in Keras' order (see the module docstring)."""
    return [(v, name) for group in _groups(opt) for v in variables for name in group]


def current_slots(model) -> dict[int, list[np.ndarray]] | None:
    """The optimizer's slot arrays per trainable variable uid, or None before any engine or load."""
    opt = model.optimizer
    engine = getattr(model, "_engine", None)
    if engine is not None and engine.optimizer is opt:
        return engine.weights.read_slots()
    pending = getattr(opt, "_ff_pending_slots", None)
    if pending is not None and pending.iterations == opt._iterations:
        return pending.slots
    return None


def optimizer_variables(model) -> list[np.ndarray]:
    """The optimizer's state as Keras 3 lists it (see the module docstring)."""
    opt = model.optimizer
    out = [np.asarray(opt._iterations, dtype=np.int64)]
    if _has_lr_variable(opt):
        out.append(np.asarray(opt._learning_rate, dtype=np.float32))
    slots = current_slots(model)
    if slots is None:
        return out
    trainable = [v for v in model.trainable_weights if v.uid in slots]
    for v, name in _layout(opt, trainable):
        out.append(np.asarray(slots[v.uid][_names(opt, v).index(name)]))
    return out + list(opt.keras_state_variables())


def set_optimizer_variables(model, arrays: list[np.ndarray], path: str) -> None:
    """Restore `optimizer_variables`' list into the model's optimizer (and its engine if it has one).

    A list of another length (another optimizer, or another model) is skipped with a warning, as Keras
    does; the learning rate in the file wins only when it differs from the configured one in float32
    (it was changed during training), so an unchanged rate keeps its exact Python value.
    """
    opt = model.optimizer
    head = 2 if _has_lr_variable(opt) else 1
    trainable = list(model.trainable_weights)
    layout = _layout(opt, trainable)
    full = head + len(layout) + len(opt.keras_state_variables())  # that state follows from the iterations
    if len(arrays) not in (head, full):
        log.warning("load_model: skipping the optimizer state in %s: optimizer '%s' has %d variables for this "
                    "model, the file has %d. Training continues from fresh optimizer slots.", path, opt.name,
                    full, len(arrays))
        return
    opt._iterations = int(np.asarray(arrays[0]))
    if len(arrays) == full and full > head + len(layout):  # the state after the slots, kept as read
        opt._ff_keras_state = (opt._iterations, [np.asarray(a) for a in arrays[head + len(layout):]])
    if head == 2:
        stored = np.float32(np.asarray(arrays[1]))
        if np.float32(opt._learning_rate) != stored:
            opt._learning_rate = float(stored)
    if len(arrays) == head:
        return
    slots: dict[int, list] = {v.uid: [None] * len(_names(opt, v)) for v in trainable}
    for k, (v, name) in enumerate(layout, start=head):
        arr = np.asarray(arrays[k])
        want = tuple(opt.slot_shape(name, v.shape))
        if tuple(arr.shape) != want:
            log.warning("load_model: skipping the optimizer state in %s: slot %s of weight '%s' has shape %s in "
                        "the file, expected %s (a file flexflow_keras wrote before it ordered Nadam's, Adadelta's, "
                        "Adamax's and Ftrl's slots as Keras does is read this way too). Training continues from "
                        "fresh optimizer slots.", path, name, v.path, arr.shape, want)
            return
        slots[v.uid][_names(opt, v).index(name)] = arr.astype(v.dtype, copy=False)
    opt._ff_pending_slots = PendingSlots(opt._iterations, slots)
    engine = getattr(model, "_engine", None)
    if engine is not None and engine.optimizer is opt:
        restore_pending_slots(engine)


def restore_pending_slots(engine) -> None:
    """Write slots loaded from a file into a new engine's regions (called when an engine is made)."""
    opt = engine.optimizer
    pending = getattr(opt, "_ff_pending_slots", None)
    if pending is None or pending.iterations != opt._iterations:
        return
    engine.weights.write_slots({uid: arrays for uid, arrays in pending.slots.items() if uid in engine.weights.slots})
