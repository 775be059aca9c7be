"""``std::sort`` step by step as GCC's C++ library runs it, for host code whose result hangs
on the order it leaves.

Ascend C's host Matmul tiling ranks candidate core splits with ``std::sort`` and takes the
first; its comparators treat values within a tolerance as equal, which is not a strict weak
order, so the winner depends on the sort's exact sequence of comparisons and swaps, not on
the values alone. A stable or merge sort picks another winner for some shapes. This module
performs the introsort GCC's library documents (quicksort partitions around the median of
the first-but-one, middle and last elements, down to runs of 16, then one insertion sort
over everything; heapsort past a recursion depth of 2 log2 n) with a ``less(a, b)``
predicate, on a Python list in place.

Used by :mod:`.matmul_tiling_split`. The heapsort fallback is never reached for the list
sizes the tiling sorts (about a hundred candidates); it is done with ``sorted`` here. Where
a comparator would make GCC's unguarded scans run off the range (undefined behaviour in
C++) the scans stop at its ends here.
"""
from __future__ import annotations

import functools

__all__ = ["cxx_sort"]

_THRESHOLD = 16


def cxx_sort(items: list, less) -> list:
    """Sort ``items`` in place as ``std::sort(begin, end, less)`` does; return it."""
    n = len(items)
    if n > 1:
        _introsort(items, 0, n, 2 * (n.bit_length() - 1), less)
        _final_insertion(items, 0, n, less)
    return items


def _introsort(v, first, last, depth, less):
    while last - first > _THRESHOLD:
        if depth == 0:
            v[first:last] = sorted(v[first:last], key=functools.cmp_to_key(
                lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0)))
            return
        depth -= 1
        cut = _partition_pivot(v, first, last, less)
        _introsort(v, cut, last, depth, less)
        last = cut


def _partition_pivot(v, first, last, less):
    mid = first + (last - first) // 2
    _median_to_first(v, first, first + 1, mid, last - 1, less)
    return _partition(v, first + 1, last, first, less)


def _median_to_first(v, result, a, b, c, less):
    if less(v[a], v[b]):
        if less(v[b], v[c]):
            pick = b
        elif less(v[a], v[c]):
            pick = c
        else:
            pick = a
    elif less(v[a], v[c]):
        pick = a
    elif less(v[b], v[c]):
        pick = c
    else:
        pick = b
    v[result], v[pick] = v[pick], v[result]


def _partition(v, first, last, pivot, less):
    # the scans are unguarded in C++ (the median of three stops them for a strict weak
    # order); a comparator that lets one run off the range is undefined behaviour there,
    # and stops at the range's ends here
    lo, hi = first, last - 1
    while True:
        while first < hi and less(v[first], v[pivot]):
            first += 1
        last -= 1
        while last > lo and less(v[pivot], v[last]):
            last -= 1
        if not first < last:
            return first
        v[first], v[last] = v[last], v[first]
        first += 1


def _linear_insert(v, last, less):
    val = v[last]
    nxt = last - 1
    while nxt >= 0 and less(val, v[nxt]):
        v[last] = v[nxt]
        last = nxt
        nxt -= 1
    v[last] = val


def _insertion(v, first, last, less):
    for i in range(first + 1, last):
        if less(v[i], v[first]):
            val = v[i]
            v[first + 1:i + 1] = v[first:i]
            v[first] = val
        else:
            _linear_insert(v, i, less)


def _final_insertion(v, first, last, less):
    if last - first > _THRESHOLD:
        _insertion(v, first, first + _THRESHOLD, less)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(v, i, less)
    else:
        _insertion(v, first, last, less)
