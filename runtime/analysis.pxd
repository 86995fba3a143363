# Cython declarations for analysis.py (pure-Python mode; see setup.py): a field's state and the scans
# of its users are C struct access on typed nodes.
cimport cython

from runtime.graph cimport Node


cdef class Accumulator:
    cdef public object buf
    cdef public object last
    cdef public bint private
    cdef public object fold
    cdef public object init
    cdef public Py_ssize_t aid
    cdef public bint fast


cdef class Epoch:
    cdef public object op
    cdef public object sub
    cdef public object priv
    cdef public object first
    cdef public object target
    cdef public object lock
    cdef public dict accs
    cdef public object target_key


cdef class FieldState:
    cdef public object region
    cdef public object field
    cdef public object dtype
    cdef public list users
    cdef public list readers
    cdef public Py_ssize_t rlimit
    cdef public object epoch
    cdef public object home
    cdef public dict views
    cdef public bint multi
    cdef public list instances
    cdef public object label
    cdef public object last_proc


cpdef bint _live(Node en, bint keep_done)

@cython.locals(code=int, en=Node, entry=tuple, keep=list, keep_r=list, readers=list)
cpdef int register(FieldState fs, sub, priv, Node node, list preds, bint keep_done, close) except? -1

@cython.locals(en=Node, entry=tuple, users=list, stale=bint, readers=list)
cpdef register_read(FieldState fs, sub, Node node, list preds, bint keep_done)

@cython.locals(en=Node, entry=tuple, fs=FieldState)
cpdef pending_users(states, list out)
