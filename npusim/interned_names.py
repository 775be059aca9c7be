"""Keeps the key names of numpy's ``__array_interface__`` interned for the whole process,
so that a long run's host memory stays flat.

Why: ``numpy.lib.stride_tricks.as_strided`` (which the lockstep groups' strided GM and UB
views and the cube's fractal views use) reads ``x.__array_interface__``, a dict that numpy
fills with ``PyDict_SetItemString``, which interns each key. ``"typestr"`` (and, in a
process that uses them nowhere else, ``"descr"`` and ``"version"``) is not kept alive by
anything else, so it dies with that dict and CPython removes it from its interned-strings
table again. A dict does not reuse the entry of a deleted key: every call leaves one dead
entry behind, and when the table's entries are used up CPython builds a new table for
three times the live names (CPython 3.11 ``dictobject.c``, ``GROWTH_RATE``). With the
~24,000 names a process that imported npusim, aclnn and ``numpy.testing`` holds, that is
2^17 slots (1.83 MiB) in place of 2^16 (0.92 MiB): the resident memory steps up by
0.92 MiB once, after some 20,000 ``as_strided`` calls, thousands of launches into a run
(measured with ``benchmarks/bench_soak.py``: the whole of a +0.126 MiB per 1000 launches
slope came from that step, between launches 9,000 and 10,000).

Held here, the keys are interned once and found again on every call: no dead entries,
no late resize. The cost is six short strings. Nothing else depends on this; the
simulated device's results and timing are the same with or without it.
"""
import sys

#: the keys numpy's ``__array_interface__`` dict has (numpy's "The array interface
#: protocol" page), interned and kept for the life of the process
ARRAY_INTERFACE_KEYS = tuple(sys.intern(k) for k in
                             ("data", "descr", "shape", "strides", "typestr", "version"))
