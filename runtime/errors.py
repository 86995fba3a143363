"""The runtime's exception types. Each message names who, what was expected, what came, and the fix."""

from __future__ import annotations


class RuntimeSystemError(Exception):
    """Base of every error raised by the task runtime."""


class MachineError(RuntimeSystemError, ValueError):
    """The requested machine (processors, memories, capacities) cannot be built on this host."""


class LaunchError(RuntimeSystemError, TypeError):
    """A launch's arguments do not match the task's declared privileges."""


class MappingError(RuntimeSystemError):
    """A mapper answered a question with a processor or memory the runtime cannot use."""


class OutOfMemoryError(RuntimeSystemError, MemoryError):
    """An instance does not fit in a memory's remaining capacity.

    Attributes name the region, the memory, the bytes requested and free, and the flag that sets the
    capacity (`-ll:fsize`, `-ll:zsize`, `-ll:csize`).
    """

    def __init__(self, message: str, *, region: str, memory: str, requested: int, free: int, flag: str):
        super().__init__(message)
        self.region = region
        self.memory = memory
        self.requested = requested
        self.free = free
        self.flag = flag


class TraceError(RuntimeSystemError):
    """A trace was used in a way the runtime cannot honour (nested, or a mismatch in strict mode)."""


class TaskError(RuntimeSystemError):
    """A task raised, or was not run because a task it depends on failed.

    Attributes: `task` (name), `point` (color tuple, `()` for a single launch), `processor` (name or
    None), and `failed_task` / `failed_point` naming the task whose exception is the root cause.
    The original exception is `__cause__`.
    """

    def __init__(self, message: str, *, task: str, point: tuple, processor: str | None,
                 failed_task: str, failed_point: tuple):
        super().__init__(message)
        self.task = task
        self.point = point
        self.processor = processor
        self.failed_task = failed_task
        self.failed_point = failed_point

    def clone(self) -> TaskError:
        """A fresh copy to raise again (so tracebacks do not pile up on one shared object)."""
        err = TaskError(str(self), task=self.task, point=self.point, processor=self.processor,
                        failed_task=self.failed_task, failed_point=self.failed_point)
        err.__cause__ = self.__cause__
        return err
