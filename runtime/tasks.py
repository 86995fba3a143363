"""Tasks: decorated functions with declared privileges and one body (variant) per processor kind.

    @task(privileges=[RO, WD])
    def scale(x, y, factor):
        y[...] = x * factor

    @scale.variant(ProcKind.GPU)
    def scale_gpu(x, y, factor): ...

The leading parameters, one per privilege, receive their (sub)region as an array view (a NumPy array
on CPU/UTIL processors, a Numba device array on GPUs; a `Fields` mapping for regions with named fields);
the remaining parameters are plain values (futures are resolved before the body runs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence

from runtime.machine import ProcKind
from runtime.privileges import READ_ONLY, Privilege


class Task:
    """A launchable function. Create with the `task` decorator.

    Attributes:
        name: used in errors, profiles and by mappers.
        privileges: one Privilege per leading region parameter.
        variants: processor kind -> body.
    """

    def __init__(self, body: Callable, privileges: Sequence[Privilege] = (), name: str | None = None,
                 kinds: Sequence[ProcKind] = (ProcKind.CPU,), priority: int = 0, inline: bool = False):
        if not callable(body):
            raise TypeError(f"task expects a function to decorate, received {body!r}")
        privileges = tuple(privileges)
        for i, p in enumerate(privileges):
            if not isinstance(p, Privilege):
                hint = " (write Reduce('+'), not Reduce)" if callable(p) else ""
                raise TypeError(f"task {name or body.__name__!r}: privilege {i} must be RO, RW, WD or "
                                f"Reduce(op){hint}; received {p!r}")
        for k in kinds:
            if not isinstance(k, ProcKind):
                raise TypeError(f"task {name or body.__name__!r}: kinds must be ProcKind values, received {k!r}")
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise TypeError(f"task {name or body.__name__!r}: priority must be an int, received {priority!r}")
        self.body = body
        self.priority = priority  # < 0: a worker runs it only when nothing else waits in its queue
        if not isinstance(inline, bool):
            raise TypeError(f"task {name or body.__name__!r}: inline must be True or False, received {inline!r}")
        self.inline = inline  # a CPU point runs on the thread that makes it ready (see `task`)
        self.name = name or getattr(body, "__name__", "task")
        self.privileges = privileges
        self.variants: dict[ProcKind, Callable] = {k: body for k in kinds}
        self._nreg = len(privileges)
        self._writes = any(p.code != READ_ONLY for p in privileges)
        self._internal = False   # the runtime's own fill/read/write: placed without asking the mapper
        self._recover = False    # runs even after a failed writer (it overwrites what that wrote)
        self._version = 0        # bumped when a variant is added (mapper caches key on it)
        functools.update_wrapper(self, body)

    def variant(self, kind: ProcKind) -> Callable[[Callable], Callable]:
        """Register the body this task runs on processors of `kind`.

        Args:
            kind: ProcKind.CPU, ProcKind.GPU or ProcKind.UTIL.

        Returns a decorator that records the function and returns it unchanged.
        """
        if not isinstance(kind, ProcKind):
            raise TypeError(f"{self.name}.variant expects a ProcKind, received {kind!r}")

        def register(fn: Callable) -> Callable:
            if not callable(fn):
                raise TypeError(f"{self.name}.variant({kind.value}) expects a function, received {fn!r}")
            self.variants[kind] = fn
            self._version += 1
            return fn

        return register

    def __call__(self, *args, **kwargs):
        """Call the CPU body directly (no runtime involved), e.g. in a unit test of the body."""
        return self.variants.get(ProcKind.CPU, self.body)(*args, **kwargs)

    def __repr__(self) -> str:
        kinds = ",".join(k.value for k in self.variants)
        return f"Task({self.name!r}, privileges={list(self.privileges)}, variants={kinds})"


def task(fn: Callable | None = None, *, privileges: Sequence[Privilege] = (), name: str | None = None,
         kinds: Sequence[ProcKind] = (ProcKind.CPU,), priority: int = 0, inline: bool = False):
    """Make a function a runtime task.

    Args:
        fn: the body (when used as a bare `@task`).
        privileges: one privilege per leading region parameter, e.g. `[RO, WD]`.
        name: task name (default: the function's name).
        kinds: processor kinds this body runs on (default CPU); add others with `.variant(kind)`.
        priority: 0, or negative for work off the critical path (an optimizer update): a threaded
            worker runs such a point only when no other ready point waits in its processor's queue.
        inline: for a body that only starts work and returns at once, never waiting (starting an MPI
            sum): a point of it on a CPU processor runs on whichever thread makes it ready (the
            launching thread when it is ready at launch, else the thread that completed its last
            predecessor), as the runtime's own folds do, rather than going through its processor's
            queue; it does not take the processor's turn. GPU points are queued as usual.

    Example:
        >>> @task(privileges=[RO, RW])
        ... def axpy(x, y, a):
        ...     y += a * x
    """
    if fn is not None:
        return Task(fn, privileges, name, kinds, priority, inline)
    return lambda f: Task(f, privileges, name, kinds, priority, inline)


class Fields(Mapping):
    """What a task receives for a region with named fields: field name -> array view.

    Fields are reachable as `f["a"]` and `f.a`.
    """

    __slots__ = ("_views",)

    def __init__(self, views: dict):
        self._views = views

    def __getitem__(self, name: str):
        try:
            return self._views[name]
        except KeyError:
            raise KeyError(f"field {name!r} is not among this argument's fields {list(self._views)}; "
                           f"name it in the privilege, e.g. RW({name!r})") from None

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._views[name]
        except KeyError:
            raise AttributeError(f"field {name!r} is not among this argument's fields {list(self._views)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._views)

    def __len__(self) -> int:
        return len(self._views)

    def __repr__(self) -> str:
        return f"Fields({list(self._views)})"


class _Point:
    """The sentinel `POINT`: passed as a plain argument, each point task receives its color tuple."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "POINT"


POINT = _Point()
