# Cython declarations for reductions.py (pure-Python mode; see setup.py): the epoch, accumulator and
# field types its reducer binding types its locals with (`@cython.locals` in the .py).
from runtime.analysis cimport Accumulator, Epoch, FieldState
