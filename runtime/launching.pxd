# Cython declarations for launching.py (pure-Python mode; see setup.py): the node and field types its
# point construction types its locals with (`@cython.locals` in the .py).
from runtime.analysis cimport FieldState
from runtime.graph cimport TaskNode
