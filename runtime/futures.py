"""Futures: the eventual return value of a launched task, and maps of them for index launches.

`get()` waits and returns the value, or raises the task's TaskError (naming the task and its point;
a task that was not run because something it depends on failed names the root failure). `wait()`
waits without raising; `done()` never blocks. Passing a Future (or a FutureMap to an index launch) as
an argument makes the new task wait for it and receive its value.
"""

from __future__ import annotations

import itertools

from runtime.graph import Node


class _ValueNode(Node):
    __slots__ = ()

    def __init__(self, value):
        Node.__init__(self)
        self.value = value
        self.done = True
        self.writes = False


class Future:
    """The result of one task."""

    __slots__ = ("_node", "_engine")

    def __init__(self, node: Node, engine):
        self._node = node
        self._engine = engine

    @classmethod
    def from_value(cls, value) -> Future:
        """A future that is already complete with `value`."""
        return cls(_ValueNode(value), None)

    def done(self) -> bool:
        """True once the task has completed (successfully or not)."""
        return self._node.done

    def wait(self) -> None:
        """Block until the task has completed; never raises the task's error."""
        if not self._node.done:
            self._engine.wait(self._node)

    def get(self):
        """The task's return value; raises its TaskError if it failed or was not run."""
        node = self._node
        if not node.done:
            self._engine.wait(node)
        err = node.error
        if err is not None:
            if self._engine is not None:
                self._engine.mark_reported(node)
            raise err.clone() from err.__cause__
        return node.value

    def exception(self):
        """The TaskError once complete (None on success); waits like `wait()`."""
        self.wait()
        return self._node.error

    def __repr__(self) -> str:
        name, point = self._node.label()
        state = "failed" if self._node.error is not None else ("done" if self._node.done else "pending")
        return f"Future({name!r}, point={point}, {state})"


class FutureMap:
    """The results of an index launch, one Future per point of the launch domain.

    `fm[c]` is the Future of color `c` (an int for 1-D domains), `fm.get()` the values in point order.
    """

    __slots__ = ("_nodes", "_engine", "domain", "points", "_index")

    def __init__(self, nodes: list[Node], engine, domain: tuple[int, ...], points):
        self._nodes = nodes
        self._engine = engine
        self.domain = domain
        self.points = points
        self._index = None

    def _find(self, color) -> int:
        if not isinstance(color, tuple):
            color = (color,)
        if self._index is None:
            self._index = {p: i for i, p in enumerate(self.points)}
        try:
            return self._index[tuple(int(c) for c in color)]
        except (KeyError, TypeError, ValueError):
            raise IndexError(f"FutureMap over domain {self.domain} has no point {color!r}") from None

    def __getitem__(self, color) -> Future:
        return Future(self._nodes[self._find(color)], self._engine)

    def __len__(self) -> int:
        return len(self._nodes)

    def __iter__(self):
        return (Future(n, self._engine) for n in self._nodes)

    def items(self):
        """(color, Future) pairs in point order."""
        return [(p, Future(n, self._engine)) for p, n in zip(self.points, self._nodes, strict=True)]

    def wait(self) -> None:
        for n in self._nodes:
            if not n.done:
                self._engine.wait(n)

    def done(self) -> bool:
        return all(n.done for n in self._nodes)

    def get(self) -> list:
        """Every point's value in point order; raises the first point's TaskError if any failed."""
        self.wait()
        return [Future(n, self._engine).get() for n in self._nodes]

    def __repr__(self) -> str:
        done = sum(n.done for n in self._nodes)
        return f"FutureMap(domain={self.domain}, {done}/{len(self._nodes)} done)"


_DOMAINS: dict = {}  # launch domain as passed (int or tuple) -> (normalised domain, points): launches repeat


def domain_points(domain) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """Normalise a launch domain (int or shape tuple) and list its points in C order."""
    t = type(domain)
    if t is int or t is tuple:
        hit = _DOMAINS.get(domain)
        if hit is not None:
            return hit
    key = domain
    if isinstance(domain, int):
        domain = (domain,)
    domain = tuple(int(d) for d in domain)
    out = domain, tuple(itertools.product(*(range(d) for d in domain)))
    if t is int or t is tuple:
        if len(_DOMAINS) > 1024:
            _DOMAINS.clear()
        _DOMAINS[key] = out
    return out
