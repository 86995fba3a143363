"""The optimizer base class: hyperparameters, learning rate (constant or schedule), gradient clipping,
weight decay, gradient accumulation, and the update entry point the training loop calls.

Contract with the training loop (flexflow_keras/models/training.py, docs/contracts.md):

- ``opt.slot_specs(shape, dtype) -> list[(slot_name, initial_value)]``: the optimizer state per variable;
  every slot has the variable's dtype, the shape ``opt.slot_shape(slot_name, shape)`` (the variable's own,
  except Adafactor's factored r and c) and starts filled with ``initial_value`` (None: a copy of the
  variable's value when the slot is made, as Schedule-Free AdamW's momentum).
- ``opt.learning_rate_at(iteration) -> float``: the learning rate of the update that follows
  `iteration` updates (a schedule evaluated at `iteration`, or the constant, with Keras 2's `decay`).
- ``opt.apply(backend, iteration, lr, weights, grads, slots, names=None, moments=None)``: update one group of
  variables in place. `weights`/`grads` are lists of arrays (NumPy for backend ``"cpu"``, numba device
  arrays for ``"cuda"``), `slots[i]` is the list of variable i's slot arrays in `slot_specs` order,
  `iteration` is the 0-based count of updates already applied (Keras' ``iterations`` before its
  increment), `lr` the float from `learning_rate_at(iteration)`. `names` (optional) are the variables'
  names, used by `exclude_from_weight_decay`. `moments` (optional) gives, per variable, an embedding
  table's per-lookup moment or None (see `sparse_moment_power`). ``global_clipnorm`` is computed over the variables of one
  call, so when it is set (`needs_all_variables` is True) the loop passes every variable in one call.
  The loop applies each variable's `constraint` after `apply` and then increments `opt._iterations`.
- ``opt.learning_rate`` (get/set; a schedule makes it read-only, as in Keras), ``opt.iterations``,
  `get_config`/`from_config`.

Per update, as Keras 3: gradients are divided by `loss_scale_factor`, clipped (`clipnorm` per variable,
`global_clipnorm` over the group, or `clipvalue`), decoupled weight decay ``w -= w*weight_decay*lr``
is applied, then the optimizer's own update: one fused kernel per variable for the element-wise
optimizers (kernels/optimizers.py, optimizers_more.py), two passes for Lamb's norms and NumPy reductions
for Adafactor's factored moments (kernels/optimizers_norms.py). Keras 2 spellings are accepted: ``lr=`` for ``learning_rate=`` and ``decay=``,
which, as Keras 2 did, scales the learning rate by ``1 / (1 + decay * iterations)`` (Keras 3 ignores
it with a warning; honouring it keeps Keras 2 scripts training as written).

For eager use outside `fit`, `apply_gradients(zip(grads, variables))` keeps slots per Variable.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence

import numpy as np

from flexflow_keras.optimizers import schedules as schedules_module
from flexflow_keras.utils import naming

log = logging.getLogger("flexflow_keras")


def _auto_name(cls_name: str) -> str:
    """`adam`, then `adam_1`, ...: Keras 3's object names (its snake case: `sgd`, `rm_sprop`, `adam_w`),
    which `clear_session()` starts again."""
    return naming.auto_name(cls_name)


class LearningRateValue(float):
    """What `Optimizer.learning_rate` (and Keras 2's `lr`) returns: the rate as a float that also answers
    as Keras 3's learning-rate variable does, so scripts' ``opt.learning_rate.numpy()``,
    ``opt.learning_rate.assign(1e-4)`` and Keras 2's ``K.set_value(model.optimizer.lr, 1e-4)`` work.
    `assign` sets the optimizer's rate (this float keeps the value it was read with, as a read of a
    variable does); pickled or copied, it is a plain float."""

    def __new__(cls, value: float, optimizer: Optimizer):
        obj = super().__new__(cls, value)
        obj._optimizer = optimizer
        return obj

    def numpy(self) -> np.float32:
        return np.float32(self)

    @property
    def dtype(self) -> str:
        return "float32"

    def assign(self, value) -> None:
        self._optimizer.learning_rate = float(value)

    def assign_add(self, delta) -> None:
        self.assign(float(self._optimizer.learning_rate) + float(delta))

    def assign_sub(self, delta) -> None:
        self.assign(float(self._optimizer.learning_rate) - float(delta))

    def __reduce__(self):
        return float, (float(self),)


def _as_float(owner: str, arg: str, value, allow_none: bool = True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{owner} expects a number for {arg}, received {arg}={value!r}.")
    return float(value)


class Optimizer:
    """Base of every optimizer (Keras 3's `keras.optimizers.Optimizer` arguments).

    Args:
        learning_rate: float, a `LearningRateSchedule`, or a callable of no arguments returning a float.
        weight_decay: decoupled weight decay factor (``w -= w * weight_decay * lr`` each step).
        clipnorm: clip each gradient to this L2 norm.
        clipvalue: clip each gradient element to ``[-clipvalue, clipvalue]``.
        global_clipnorm: clip all gradients of the update together to this global L2 norm.
        use_ema: must be False (moving averages of weights are not implemented).
        ema_momentum, ema_overwrite_frequency: accepted for config compatibility.
        loss_scale_factor: gradients are divided by it before anything else.
        gradient_accumulation_steps: apply the averaged gradient every this many steps (int >= 2).
        name: the optimizer's name.
        lr: Keras 2 spelling of learning_rate.
        decay: Keras 2 time-based decay (see the module docstring).
    """

    #: class attribute set by subclasses: the kernels' family name, e.g. "adam"
    family = "optimizer"
    #: the power (2: squares, 1: absolute values) of the gradient that the update accumulates in a slot,
    #: which Keras 3's TensorFlow backend takes per lookup for an embedding table's sparse gradient
    #: (`sparse_moment_power`); None for updates linear in the gradient
    sparse_moment: int | None = None

    def __init__(self, learning_rate, weight_decay=None, clipnorm=None, clipvalue=None, global_clipnorm=None,
                 use_ema=False, ema_momentum=0.99, ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        owner = type(self).__name__
        if "lr" in kwargs:
            learning_rate = kwargs.pop("lr")
        decay = kwargs.pop("decay", None)
        if kwargs:
            raise ValueError(f"{owner} got unexpected argument(s) {sorted(kwargs)}. Valid arguments: "
                             f"learning_rate (lr), {', '.join(self._hyper_names())}, weight_decay, clipnorm, "
                             f"clipvalue, global_clipnorm, loss_scale_factor, gradient_accumulation_steps, name.")
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue, "global_clipnorm": global_clipnorm}
        if sum(v is not None for v in clips.values()) > 1:
            raise ValueError(f"{owner}: only one of clipnorm, clipvalue and global_clipnorm can be set. Received "
                             + ", ".join(f"{k}={v}" for k, v in clips.items()) + ".")
        if use_ema:
            raise ValueError(f"{owner}(use_ema=True) is not supported by flexflow_keras: weight moving averages "
                             "are not implemented. Remove use_ema, or average the weights in a callback.")
        if gradient_accumulation_steps is not None and (
                not isinstance(gradient_accumulation_steps, int) or gradient_accumulation_steps < 2):
            raise ValueError(f"{owner} expects gradient_accumulation_steps to be an integer >= 2, received "
                             f"gradient_accumulation_steps={gradient_accumulation_steps!r}.")
        self.name = name or _auto_name(owner)
        self.weight_decay = _as_float(owner, "weight_decay", weight_decay)
        self.clipnorm = _as_float(owner, "clipnorm", clipnorm)
        self.clipvalue = _as_float(owner, "clipvalue", clipvalue)
        self.global_clipnorm = _as_float(owner, "global_clipnorm", global_clipnorm)
        self.use_ema = False
        self.ema_momentum = ema_momentum
        self.ema_overwrite_frequency = ema_overwrite_frequency
        self.loss_scale_factor = _as_float(owner, "loss_scale_factor", loss_scale_factor)
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.decay = _as_float(owner, "decay", decay)
        if self.decay:
            log.info("%s: decay=%g applied as in Keras 2: lr / (1 + decay * iterations).", owner, self.decay)
        self._learning_rate = self._check_lr(learning_rate)
        self._iterations = 0
        self._exclude_pattern: re.Pattern | None = None
        self._eager_slots: dict[int, list[np.ndarray]] = {}
        self._eager_slot_owners: dict[int, object] = {}  # the variables of `_eager_slots`, in build order

    # --- hyperparameters ---------------------------------------------------------------------------
    def _hyper_names(self) -> list[str]:
        return []

    def _check_lr(self, value):
        if isinstance(value, schedules_module.LearningRateSchedule) or callable(value):
            return value
        return _as_float(type(self).__name__, "learning_rate", value, allow_none=False)

    @property
    def learning_rate(self) -> LearningRateValue:
        """The current learning rate (a schedule is evaluated at `iterations`): a float that also has
        Keras' variable methods (`LearningRateValue`)."""
        lr = self._learning_rate
        if isinstance(lr, schedules_module.LearningRateSchedule):
            lr = lr(self._iterations)
        elif callable(lr):
            lr = lr()
        return LearningRateValue(float(lr), self)

    @learning_rate.setter
    def learning_rate(self, value) -> None:
        if (isinstance(self._learning_rate, schedules_module.LearningRateSchedule)
                and not isinstance(value, schedules_module.LearningRateSchedule) and not callable(value)):
            raise TypeError(
                "This optimizer was created with a `LearningRateSchedule` object as its `learning_rate` "
                "constructor argument, hence its learning rate is not settable. If you need the learning rate "
                "to be settable, you should instantiate the optimizer with a float `learning_rate` argument.")
        self._learning_rate = self._check_lr(value)

    # Keras 2 alias.
    lr = learning_rate

    @property
    def iterations(self):
        """Updates applied so far: a 0-d int64 tensor, as Keras' variable (``int(opt.iterations)``,
        ``opt.iterations.numpy()``). With `gradient_accumulation_steps` it counts the applied updates (the
        training steps // steps), as Keras 3's property; the training loop counts its steps in
        `_iterations` (Keras' ``_iterations``, which the setter sets and the saved state holds)."""
        from flexflow_keras.ops.eager_tensor import eager

        steps = self.gradient_accumulation_steps
        return eager(np.int64(self._iterations // steps if steps else self._iterations))

    @iterations.setter
    def iterations(self, value: int) -> None:
        self._iterations = int(value)

    @property
    def elementwise(self) -> bool:
        """True when each element's update reads only that element's weight, gradient and slots, so a
        weight may be updated in pieces (no clipnorm / global_clipnorm, which read whole gradients)."""
        return not self.clipnorm and not self.needs_all_variables and type(self).elementwise_update

    # Subclasses whose update mixes elements (factored moments) set this False.
    elementwise_update: bool = True

    @property
    def sparse_moment_power(self) -> int | None:
        """The power of the per-lookup moment that `apply` reads (its `moments`) for a weight whose gradient
        comes only from embedding lookups, or None when this update has none or reads it from the summed
        gradient.

        Keras 3's TensorFlow backend hands an embedding table's gradient to the optimizer as
        `IndexedSlices`, one row per lookup, and squares them before summing the rows looked up more than
        once: Adam's second moment then grows by the sum of the squared gradients of a token's lookups,
        where a dense gradient gives the square of their sum (RMSprop, Adagrad, Nadam, Adadelta, Ftrl, Lamb,
        Adafactor and Schedule-Free AdamW alike; Adamax sums absolute values). A text model trains measurably faster that way, so the step
        computes that moment beside the gradient. Clipping (clipnorm, global_clipnorm, clipvalue) and
        gradient accumulation read the summed gradient here (TensorFlow clips the lookups' rows and
        accumulates them densely): then the update reads the square of the sum, as for any weight."""
        if (self.sparse_moment is None or self.clipnorm or self.global_clipnorm or self.clipvalue
                or self.gradient_accumulation_steps):
            return None
        return self.sparse_moment

    @property
    def needs_all_variables(self) -> bool:
        """True when the update needs every variable in one `apply` call (global_clipnorm)."""
        return bool(self.global_clipnorm and self.global_clipnorm > 0)

    def learning_rate_at(self, iteration: int) -> float:
        """The learning rate for the update after `iteration` updates (schedule, callable or constant)."""
        lr = self._learning_rate
        if isinstance(lr, schedules_module.LearningRateSchedule):
            value = float(lr(iteration))
        elif callable(lr):
            value = float(lr())
        else:
            value = lr
        if self.decay:
            value = value / (1.0 + self.decay * iteration)
        return value

    # --- weight decay exclusion ------------------------------------------------------------------------
    def exclude_from_weight_decay(self, var_list=None, var_names=None) -> None:
        """Exclude variables (objects, or names matched as regular expressions) from weight decay.

        Args:
            var_list: variables to exclude (matched by their ``path``, else ``name``, in `apply`).
            var_names: substrings/patterns; a variable whose name matches any is excluded.
        """
        names = [re.escape(getattr(v, "path", getattr(v, "name", ""))) for v in var_list or []]
        patterns = list(var_names or []) + [f"^{n}$" for n in names if n]
        self._exclude_pattern = re.compile("|".join(patterns)) if patterns else None

    def _use_weight_decay(self, name: str | None) -> bool:
        if not self.weight_decay:
            return False
        return not (name and self._exclude_pattern is not None and self._exclude_pattern.search(name))

    # --- state ---------------------------------------------------------------------------------------
    def _slot_specs(self) -> list[tuple[str, float]]:
        """Subclasses: the optimizer's own slots."""
        return []

    def keras_state_variables(self) -> list[np.ndarray]:
        """The optimizer's own state variables that Keras saves after the slots (Nadam: its momentum
        schedule's product); here they follow from `iterations`, so loading reads them from it."""
        return []

    @property
    def built(self) -> bool:
        """Whether the optimizer has state: it has applied an update (fit, apply_gradients) or was built."""
        return self._iterations > 0 or bool(self._eager_slots)

    def keras_variable_specs(self, trainable_variables) -> list[tuple[tuple[int, ...], str]]:
        """(shape, dtype) of each variable Keras 3's optimizer holds once built for `trainable_variables`, in
        its order: the int64 iteration count, the learning rate unless a schedule or callable gives it, each
        variable's slots, then the optimizer's own state (`keras_state_variables`): what `summary()` counts
        as "Optimizer params"."""
        specs = [((), "int64")]
        if not callable(self._learning_rate):
            specs.append(((), "float32"))
        for v in trainable_variables:
            shape, dtype = tuple(v.shape), str(np.dtype(getattr(v, "dtype", "float32")))
            specs += [(self.slot_shape(name, shape), dtype) for name, _init in self.slot_specs(shape, dtype)]
        return specs + [(tuple(np.shape(a)), str(np.asarray(a).dtype)) for a in self.keras_state_variables()]

    def slot_shape(self, slot_name: str, shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of slot `slot_name` of a variable of `shape`: the variable's own (Adafactor factors)."""
        return tuple(shape)

    def slot_specs(self, shape: Sequence[int], dtype="float32") -> list[tuple[str, float]]:
        """The slots a variable of `shape`/`dtype` needs, as (name, initial value), in `apply`'s order."""
        specs = list(self._slot_specs())
        if self.gradient_accumulation_steps:
            specs.append(("gradient_accumulator", 0.0))
        return specs

    # --- the update ----------------------------------------------------------------------------------
    def _update(self, backend: str, step: int, lr: float, w, g, slots, gscale: float, clipvalue: float,
                wd_lr: float) -> None:
        """Subclasses: one fused update of variable `w` (step is 1-based)."""
        raise NotImplementedError(f"{type(self).__name__}._update")

    def apply(self, backend: str, iteration: int | None = None, lr: float | None = None, weights: Sequence = (),
              grads: Sequence = (), slots: Sequence[Sequence] = (), names: Sequence[str] | None = None,
              trainable_variables=None, moments: Sequence | None = None) -> None:
        """Update `weights` in place from `grads` (see the module docstring for the contract).

        Called as Keras 3's ``optimizer.apply(grads, trainable_variables)`` (a custom training loop), it is
        `apply_gradients` of those pairs.

        Args:
            backend: "cpu" (NumPy arrays) or "cuda" (numba device arrays).
            iteration: updates already applied (0-based).
            lr: the learning rate for this update.
            weights, grads: lists of arrays, one per variable; a None gradient skips its variable.
            slots: per variable, its slot arrays in `slot_specs` order.
            names: optional variable names for `exclude_from_weight_decay`.
            moments: optional, per variable, the per-lookup moment of an embedding table's gradient (see
                `sparse_moment_power`) or None; only read when `sparse_moment_power` is not None.
        """
        if not isinstance(backend, str):  # Keras 3's apply(grads, trainable_variables)
            variables = iteration if trainable_variables is None else trainable_variables
            if variables is None:  # Keras: the variables it was built for, one gradient each
                variables = list(self._eager_slot_owners.values())
                if not variables:
                    raise ValueError(f"{type(self).__name__}.apply(grads) without trainable_variables needs an "
                                     f"optimizer built on the variables; call optimizer.build(trainable_variables) "
                                     f"first, or pass apply(grads, model.trainable_variables).")
                if len(backend) != len(variables):
                    raise ValueError(f"{type(self).__name__}.apply(grads) without trainable_variables expects one "
                                     f"gradient per variable it was built for ({len(variables)}); received "
                                     f"{len(backend)} gradients. Pass the variables: apply(grads, variables).")
            self.apply_gradients(zip(backend, variables, strict=True))
            return
        if backend not in ("cpu", "cuda"):
            raise ValueError(f"{type(self).__name__}.apply expects backend 'cpu' or 'cuda', received {backend!r}.")
        if not (len(weights) == len(grads) == len(slots)):
            raise ValueError(f"{type(self).__name__}.apply needs one gradient and one slot list per weight; "
                             f"received {len(weights)} weights, {len(grads)} grads, {len(slots)} slot lists.")
        kern = _kernels(backend)
        items = [(i, w, g, list(s)) for i, (w, g, s) in enumerate(zip(weights, grads, slots, strict=True)) if g is not None]
        if moments is not None and len(moments) != len(weights):
            raise ValueError(f"{type(self).__name__}.apply needs one moment (or None) per weight; received "
                             f"{len(moments)} for {len(weights)} weights.")
        if self.sparse_moment_power is None:
            moments = None
        if not items:
            return
        inv_scale = 1.0 / self.loss_scale_factor if self.loss_scale_factor else 1.0
        steps = self.gradient_accumulation_steps
        step = iteration + 1
        if steps:
            for _, _w, g, s in items:
                kern.accumulate(s[-1], g)
            if (iteration + 1) % steps != 0:
                return
            # The averaged gradient is the accumulator / steps; the update reads the accumulator.
            items = [(i, w, s[-1], s) for i, w, _g, s in items]
            inv_scale /= steps
            step = iteration // steps + 1
        gscales = [inv_scale] * len(items)
        if self.clipnorm and self.clipnorm > 0:
            for k, (_, _w, g, _s) in enumerate(items):
                norm = math.sqrt(kern.sumsq(g)) * inv_scale
                gscales[k] = inv_scale * self.clipnorm / max(norm, self.clipnorm)
        elif self.global_clipnorm and self.global_clipnorm > 0:
            gnorm = math.sqrt(sum(kern.sumsq(g) for _, _w, g, _s in items)) * inv_scale
            c = self.global_clipnorm
            factor = c * min(1.0 / gnorm, 1.0 / c) if gnorm > 0 else 1.0
            if not math.isfinite(gnorm):
                factor = float("nan")  # as Keras: a non-finite norm poisons the update
            gscales = [inv_scale * factor] * len(items)
        clipvalue = self.clipvalue if self.clipvalue and self.clipvalue > 0 else 0.0
        for k, (i, w, g, s) in enumerate(items):
            name = names[i] if names is not None else None
            wd_lr = self.weight_decay * lr if self._use_weight_decay(name) else 0.0
            own = s[:-1] if steps else s
            q = moments[i] if moments is not None else None
            if q is None:
                self._update(backend, step, lr, w, g, own, gscales[k], clipvalue, wd_lr)
            else:
                self._update(backend, step, lr, w, g, own, gscales[k], clipvalue, wd_lr, q=q)
        if steps:
            for _, _w, _g, s in items:
                kern.fill(s[-1], 0.0)

    # --- eager use ----------------------------------------------------------------------------------
    def build(self, variables) -> None:
        """Create slots for `variables` (flexflow_keras Variables) for `apply_gradients`; slots restored
        from a checkpoint before they existed (tf_checkpoint.py) fill them. As Keras 3's, only the first
        build counts: a later one is a no-op, and `apply_gradients` refuses variables it was not built for."""
        for v in variables if not self._eager_slots else ():
            if id(v) not in self._eager_slots:
                shape, dtype = tuple(v.shape), v.dtype
                value = v.value if hasattr(v, "value") else v
                self._eager_slots[id(v)] = [np.array(value, dtype=dtype) if init is None else
                                            np.full(self.slot_shape(name, shape), init, dtype=dtype)
                                            for name, init in self.slot_specs(shape, dtype)]
                self._eager_slot_owners[id(v)] = v
        pending = self.__dict__.pop("_ff_checkpoint_slots", None)
        if pending is not None:
            slots = self.slot_arrays()
            if len(slots) != len(pending) or any(a.shape != b.shape for a, b in zip(slots, pending, strict=True)):
                raise ValueError(f"{type(self).__name__}: the slots restored from a checkpoint ({len(pending)} "
                                 f"arrays) do not fit the variables it now updates ({len(slots)} slot arrays); the "
                                 f"checkpoint was saved for other variables.")
            for a, b in zip(slots, pending, strict=True):
                a[...] = b

    def slot_arrays(self) -> list[np.ndarray]:
        """The eager slot arrays created by `build`/`apply_gradients`, per variable in build order (what
        tf.train.Checkpoint saves and restores in place)."""
        return [a for slots in self._eager_slots.values() for a in slots]

    @property
    def variables(self) -> list:
        """Keras 3's list: iteration, learning rate, then (once built, by fit or apply_gradients) every
        variable's slots in Keras' order (optimizers/keras_variables.py)."""
        from flexflow_keras.optimizers.keras_variables import keras_variables

        return keras_variables(self)

    def apply_gradients(self, grads_and_vars) -> None:
        """Eagerly update flexflow_keras Variables (or NumPy arrays) from ``(gradient, variable)`` pairs."""
        pairs = list(grads_and_vars)
        variables = [v for _, v in pairs]
        self.build(variables)
        unknown = [v for v in variables if id(v) not in self._eager_slots]
        if unknown:
            v = unknown[0]
            raise ValueError(f"Unknown variable: {getattr(v, 'path', None) or getattr(v, 'name', type(v).__name__)} "
                             f"of shape {tuple(np.shape(v))}. {type(self).__name__} '{self.name}' updates only the "
                             f"{len(self._eager_slots)} variables it was built with (by its first apply_gradients or "
                             f"build), as Keras 3's optimizers; for a new set of variables create a new optimizer "
                             f"instance.")
        arrays, grads, names, moments = [], [], [], []
        power = self.sparse_moment_power
        strided = []  # (the variable's own array, the contiguous copy the kernels update), copied back after
        for g, v in pairs:
            arr = v.value if hasattr(v, "value") else v
            if isinstance(arr, np.ndarray) and not arr.flags.c_contiguous:  # an RNN's kernel kept transposed
                work = np.ascontiguousarray(arr)
                strided.append((arr, work))
                arr = work
            arrays.append(arr)
            # a GradientTape's gradient of a table only lookups read carries them (TensorFlow's
            # IndexedSlices; see `sparse_moment_power` and ops/tape.py's SparseRows)
            rows = getattr(g, "_ff_lookups", None) if power is not None else None
            q = rows.moment(g, power, arr.dtype) if rows is not None else None
            moments.append(q if q is not None and q.shape == arr.shape else None)
            grads.append(None if g is None else np.asarray(g, dtype=arr.dtype, order="C"))  # 0-d stays 0-d
            names.append(getattr(v, "path", getattr(v, "name", None)))
        missing = [n for g, n in zip(grads, names, strict=True) if g is None]
        if missing:  # TensorFlow's warning: a variable the loss does not depend on is left as it is
            log.warning("Gradients do not exist for variables %s when minimizing the loss; they are not updated.",
                        missing)
        lr = self.learning_rate_at(self._iterations)
        self.apply("cpu", self._iterations, lr, arrays, grads, [self._eager_slots[id(v)] for v in variables], names,
                   moments=moments if any(q is not None for q in moments) else None)
        for arr, work in strided:
            arr[...] = work
        for v in variables:
            if hasattr(v, "_on_assign"):
                v._on_assign()
            if getattr(v, "constraint", None) is not None:
                v.assign(v.constraint(v.value))
        self._iterations += 1

    # --- config --------------------------------------------------------------------------------------
    def get_config(self) -> dict:
        """Keras 3's optimizer config (the subclass adds its hyperparameters)."""
        lr = self._learning_rate
        if isinstance(lr, schedules_module.LearningRateSchedule):
            lr = schedules_module.serialize(lr)
        elif callable(lr):
            lr = float(lr())
        config = {"name": self.name, "learning_rate": lr, "weight_decay": self.weight_decay,
                  "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue,
                  "use_ema": self.use_ema, "ema_momentum": self.ema_momentum,
                  "ema_overwrite_frequency": self.ema_overwrite_frequency,
                  "loss_scale_factor": self.loss_scale_factor,
                  "gradient_accumulation_steps": self.gradient_accumulation_steps}
        if self.decay:
            config["decay"] = self.decay
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None):
        """Rebuild an optimizer from `get_config()` (a serialized schedule is deserialized)."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules_module.deserialize(config["learning_rate"], custom_objects)
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name!r} learning_rate={self._learning_rate!r}>"


class _Kernels:
    """The backend's kernel functions, looked up once per backend."""

    def __init__(self, backend: str):
        from kernels import optimizers as k

        suffix = "cpu" if backend == "cpu" else "cuda"
        self.module = k
        self.suffix = suffix
        self.sumsq = getattr(k, f"sumsq_{suffix}")
        self.accumulate = getattr(k, f"accumulate_{suffix}")
        self.fill = (lambda a, v: a.fill(v)) if backend == "cpu" else k.fill_cuda

    def update(self, family: str):
        return getattr(self.module, f"{family}_update_{self.suffix}")


_KERNELS: dict[str, _Kernels] = {}


def _kernels(backend: str) -> _Kernels:
    if backend not in _KERNELS:
        _KERNELS[backend] = _Kernels(backend)
    return _KERNELS[backend]
