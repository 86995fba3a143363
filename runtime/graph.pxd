# Cython declarations for graph.py (pure-Python mode): compiled by `pip install`, the same source runs
# interpreted where the extension is not built. Typed fields make a node's bookkeeping C struct access.
cimport cython


cdef class Node:
    cdef public Py_ssize_t npending
    cdef public list succs
    cdef public bint done
    cdef public object error
    cdef public object value
    cdef public object waiters
    cdef public object poison
    cdef public Py_ssize_t tpos
    cdef public bint writes
    cdef public bint recover
    cdef public object gpu_event
    cdef public object gpu_waits


cdef class TaskNode(Node):
    cdef public object task
    cdef public object point
    cdef public object proc
    cdef public object body
    cdef public object args
    cdef public object futs
    cdef public object copies
    cdef public object redinit
    cdef public object device
    cdef public object launch


cdef class InlineTaskNode(TaskNode):
    pass


cdef class FoldNode(Node):
    cdef public object fn
    cdef public object lock
    cdef public object owner


cdef class BarrierNode(Node):
    cdef public object name


@cython.final
cdef class Engine:
    cdef public object lock
    cdef public Py_ssize_t outstanding
    cdef public object executor
    cdef public object profiler
    cdef public set reported_kinds
    cdef public list failures
    cdef public list _idle_waiters
    cdef public bint cancelled

    @cython.locals(n=Py_ssize_t, p=Node)
    cpdef submit(self, Node node, preds, fpreds=*)

    @cython.locals(n=Py_ssize_t, p=Node, among=list, j=Py_ssize_t)
    cpdef submit_indexed(self, Node node, Node first, list nodes, idx, put, fpreds=*, prev=*, cross=*)

    cpdef dispatch(self, Node node)

    @cython.locals(r=Node, cancelled=bint, stack=list)
    cpdef run(self, Node node)

    @cython.locals(s=Node, ready=list, succs=list)
    cpdef list complete(self, Node node, value, err)


@cython.locals(n=Py_ssize_t, p=Node)
cdef Py_ssize_t _after_futures(Node node, fpreds) except -1

cdef _after_done(Node node, Node pred)

cdef _inherit_events(Node node, Node pred)
