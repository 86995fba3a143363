# Cython declarations for workers.py (pure-Python mode; see setup.py): the executors' loops compiled.
cimport cython


cdef class ThreadedExecutor:
    cdef public object engine
    cdef public object policy
    cdef public list _queues
    cdef public list _put
    cdef public list _threads
    cdef public object _started
    cdef public list _locks
    cdef public list _deferred
    cdef public list _busy
    cdef public list _helped


cdef class SequentialExecutor:
    cdef public object engine
    cdef public object _queue
    cdef public bint _draining
    cdef public object _device
