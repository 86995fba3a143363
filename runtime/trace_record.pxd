# Cython declarations for trace_record.py (pure-Python mode; see setup.py): the templates a replay reads
# at every point are C structs.
cimport cython


cdef class PointTemplate:
    cdef public object point
    cdef public object proc
    cdef public object body
    cdef public object binds
    cdef public tuple preds
    cdef public bint writes
    cdef public bint recover
    cdef public list views
    cdef public tuple dyn
    cdef public tuple prefolds
    cdef public tuple fixed
    cdef public object put
    cdef public tuple cross
    cdef public Py_ssize_t pos


cdef class LaunchTemplate:
    cdef public object task
    cdef public object index
    cdef public object domain
    cdef public tuple rsel
    cdef public object kinds
    cdef public object tag
    cdef public list points
    cdef public Py_ssize_t nargs
    cdef public Py_ssize_t nreg
    cdef public tuple vpos
    cdef public tuple fpos
    cdef public object ppos

    @cython.locals(j=Py_ssize_t)
    cpdef quick_match(self, task, index, domain, tuple args, tag)
