"""Which graph of a subclassed model the training loop asks for: Keras calls ``call(x, training=True)`` in
fit's steps and ``call(x, training=False)`` in evaluate and predict, so a call() that branches on `training`
computes other things there (keras.io's RealNVP runs its flow backwards at inference).

`Model._trace` records both graphs when they differ (models/model.py); evaluate and predict run inside
`inference_graphs()` (the `in_inference` decorator), where `Model._op_graph` gives the training=False one.
Only for such a model, entering evaluate or predict hands back an engine built on its training=True graph
and leaving them one built on its training=False graph, the optimizer slots kept for the next engine
(`Model._swap_inference_engine`). Inside a fit (`in_fit`) fit's engine stays: fit's own validation
(`validating`) and a callback's evaluate or predict run the training=False graph on a variant of fit's
engine that shares its weights (`Model._batch_engine`), as Keras runs them.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools

_INFERENCE: contextvars.ContextVar[bool] = contextvars.ContextVar("ff_inference_graphs", default=False)
_FITTING: contextvars.ContextVar[bool] = contextvars.ContextVar("ff_fitting", default=False)


def inference() -> bool:
    """Whether the training=False graphs apply now: inside evaluate or predict, and fit's validation."""
    return _INFERENCE.get()


def fitting() -> bool:
    """Whether a fit is running (its engine must stay the model's)."""
    return _FITTING.get()


def validating():
    """The context of fit's validation: the training=False graphs apply, as in evaluate."""
    return _set(_INFERENCE)


@contextlib.contextmanager
def _set(var: contextvars.ContextVar):
    token = var.set(True)
    try:
        yield
    finally:
        var.reset(token)


def in_inference(method):
    """Run a model's `method` (evaluate, predict) with its training=False graphs."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        swap = None if _FITTING.get() else getattr(self, "_swap_inference_engine", None)
        if swap is not None:
            swap(entering=True)
        with _set(_INFERENCE):
            out = method(self, *args, **kwargs)
        if swap is not None:
            swap(entering=False)
        return out
    return run


def in_fit(method):
    """Run a model's `method` (fit) with its training=True graphs throughout."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with _set(_FITTING):
            return method(self, *args, **kwargs)
    return run
