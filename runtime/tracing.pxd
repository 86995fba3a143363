# Cython declarations for tracing.py (pure-Python mode; see setup.py): a replayed point is built and
# submitted with typed nodes, templates and engine calls.
cimport cython

from runtime.graph cimport Engine, Node, TaskNode
from runtime.trace_record cimport LaunchTemplate, PointTemplate


cdef class Replay:
    cdef public object rt
    cdef public object rec
    cdef public bint strict
    cdef public Py_ssize_t pos
    cdef public list nodes
    cdef public dict targets
    cdef public dict accs
    cdef public dict open_accs
    cdef public bint active
    cdef public object prev
    cdef public object entry
    cdef public object prev_exit

    @cython.locals(k=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t, lt=LaunchTemplate, pt=PointTemplate,
                   node=TaskNode, engine=Engine, nodes=list, out=list, args_i=list, fixed=tuple, plain=tuple)
    cpdef launch(self, task, index, domain, points, tuple args, tag, launch_id)
