"""The compiled loops of :mod:`npusim.ascendc.cube.step_sums_numba` (numba, imported on
first use: importing numba costs most of a second, which a process that runs no Mmad
should not pay). The module docstring there gives what they compute and why the bytes
are numpy's.
"""
import math

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_FAR = 1 << 20                          # the span of a row that never needs a check


@njit(cache=True)
def _exact_sum(a, b, nb, s, m, t, partials):
    """The exact sum of ``a[s, m, j] * b[nb, s, j, t]`` (finite, exact products) rounded
    once to float64, to nearest-even: the value ``math.fsum`` gives. Shewchuk's
    algorithm (Adaptive Precision Floating-Point Arithmetic, 1997): the running sum
    is kept as non-overlapping partials, each added term split by an error-free
    two-sum; then the partials are added from the largest, and a half-way result
    that the remaining partials push past the tie is rounded up."""
    count = 0
    for j in range(a.shape[2]):
        x = a[s, m, j] * b[nb, s, j, t]
        kept = 0
        for i in range(count):
            y = partials[i]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[kept] = lo
                kept += 1
            x = hi
        partials[kept] = x
        count = kept + 1
    i = count - 1
    hi = partials[i]
    lo = 0.0
    while i > 0:
        i -= 1
        x = hi
        y = partials[i]
        hi = x + y
        lo = y - (hi - x)
        if lo != 0.0:
            break
    # lo: the rounding error of hi; what lies below it (partials[i - 1]) decides a tie
    if i > 0 and ((lo < 0.0 and partials[i - 1] < 0.0) or
                  (lo > 0.0 and partials[i - 1] > 0.0)):
        y = lo * 2.0
        x = hi + y
        if y == x - hi:
            hi = x
    return hi

@njit(cache=True)
def _figures(bits_a, bits_b, mbits, emin, by_bits, lk, pow2):
    """The figures of one member's rows of A and columns of B, from the bits of their
    float64 values (``bits_a`` (S, M, k0), ``bits_b`` (blocks, S, k0, width): int64
    views; every value of the three types is a normal float64 or zero): ``top``
    (``|x| < 2**top``) and ``span`` (bits from ``top`` down to the last bit the type
    allows the smallest nonzero magnitude) of each row (S, M) and column (blocks, S,
    width), and the widest column of each block and step. A row of zeros, or one
    holding inf or NaN, gets a span ``_FAR`` below zero (it needs no check: its sums
    are 0, or not finite); without ``by_bits`` every other row spans 53 bits
    (checked). In place of the tops, the factors of the bound ``E >= e`` (as
    :func:`.step_sums._bounds` gives them: ``2**(top_A + 2 lk - 52)`` per row,
    ``2**top_B`` per column, ``pow2[e + 1074]`` being ``2.0**e``; 0 for a column of
    zeros, inf or NaN, whose sums are exact or not finite)."""
    S, M, k0 = bits_a.shape
    NBLK, _, _, NB = bits_b.shape
    ea = np.empty((S, M))
    sa = np.empty((S, M), np.int64)
    eb = np.empty((NBLK, S, NB))
    sb = np.empty((NBLK, S, NB), np.int64)
    widest = np.empty((NBLK, S), np.int64)
    # the columns' largest and smallest nonzero magnitudes, as floats (a pass over a
    # step's block that vectorises: AVX2 has no 64-bit integer max), then their bits
    hi = np.empty(NB)
    lo = np.empty(NB)
    hi_bits, lo_bits = hi.view(np.int64), lo.view(np.int64)
    b = bits_b.view(np.float64)
    mag = (1 << 63) - 1                      # all but the sign: |x| grows with it
    for s in range(S):
        for r in range(M):
            h = 0
            w = mag
            for j in range(k0):
                x = bits_a[s, r, j] & mag
                h = max(h, x)
                w = min(w, (x - 1) & mag)     # a zero wraps to the largest
            top, sa[s, r] = _span(h, w, mbits, emin, by_bits)
            ea[s, r] = pow2[max(top + 2 * lk - 52, -1074) + 1074]
    for nb in range(NBLK):
        for s in range(S):
            for t in range(NB):
                hi[t] = 0.0
                lo[t] = math.inf
            for j in range(k0):
                _extremes(b[nb, s, j], hi, lo)
            w = -_FAR
            for t in range(NB):            # inf or NaN: hi's exponent is all ones
                top, sb[nb, s, t] = _span(hi_bits[t], lo_bits[t] - 1, mbits, emin, by_bits)
                # a column of zeros, inf or NaN: its sums need no bound (0 or not finite)
                eb[nb, s, t] = pow2[top + 1074] if sb[nb, s, t] > -_FAR else 0.0
                w = max(w, sb[nb, s, t])
            widest[nb, s] = w
    return ea, sa, eb, sb, widest


@njit(cache=True)
def _extremes(x, hi, lo):
    """``hi``, ``lo``: the largest and the smallest nonzero magnitude of ``x`` and
    themselves, elementwise; a NaN makes ``hi`` NaN. One pass that vectorises (``+ 0.0``,
    which changes no magnitude, keeps the compiler from storing through masked stores,
    slow on AMD hosts)."""
    for t in range(len(x)):
        v = abs(x[t])
        h = hi[t]
        hi[t] = (v if (v > h) | (v != v) else h) + 0.0
        w = v if v > 0.0 else math.inf
        low = lo[t]
        lo[t] = (w if w < low else low) + 0.0


@njit(cache=True)
def _span(hi, lo, mbits, emin, by_bits):
    """``(top, span)`` of a row whose largest magnitude has the bits ``hi`` and whose
    smallest nonzero one the bits ``lo + 1`` (float64, sign cleared)."""
    e_hi = hi >> 52
    if hi == 0 or e_hi == 0x7FF:             # zeros; inf or NaN
        return 0, -_FAR
    top = e_hi - 1022                        # |x| < 2**top
    if not by_bits:
        return top, 53
    return top, top - (max(((lo + 1) >> 52) - 1023, emin) - mbits)



#: columns of B per block (the loop's operand has blocks of exactly this width, the last
#: one padded with zeros); a block of a step is 16 KiB of float64 (k0 16), which stays in
#: the first-level cache while every row of A passes over it
WIDTH = 128
#: rows of A and columns of B of one register tile (:func:`_tile`): 8 sums of 4 columns
MR, NC = 4, 8
_NV = NC // 4


@intrinsic
def _tile(typingctx, a, ao, k0, b, bo, eb, ebo, ea, c, co, cp, r):
    """One register tile of a step: the ``MR`` x ``NC`` sums ``x[i, u] = sum_k a[ao + i k0 +
    k] * b[bo + k WIDTH + u]`` (k < ``k0``, in k order), their check and their fp32
    accumulation; returns whether a sum is left to :func:`_settle`. Arrays are flat,
    C-contiguous, indexed without bounds checks (the caller's shapes guarantee them):
    ``a`` float64 (rows of k0), ``b`` float64 (rows of :data:`WIDTH`), ``eb`` float64 (the
    tile's ``NC`` column bound factors from ``ebo`` on), ``ea`` float64 (its ``MR`` row
    factors, 0 for a row that needs no check), ``c`` float32 (the accumulators: row ``i``
    at ``co + i cp``), ``r`` float64 (``MR`` x ``NC``: the sums, written for
    :func:`_settle`).

    Written as LLVM IR (numba's ``intrinsic``) so that the tile's eight vectors of four
    sums stay in registers through all k0 multiply-adds (a loop over k: per k two vectors
    of B loaded, four values of A broadcast, eight ``llvm.fmuladd``, which is a fused
    multiply-add where the host has one and else a multiply and an add: the same bits, the
    products being exact), whatever numba's loop vectoriser would make of the source.
    Then per vector of sums ``x`` (strict IEEE operations, no fast-math flags):
    ``E = ea[i] * eb``; ``lo = fp32(x - E)``, ``ok = lo == fp32(x + E)`` (false for NaN);
    ``c = (c + (lo if ok else 0)) + 0``. Where ``ok``, ``lo`` is ``fp32(x)`` (rounding is
    monotone), the step's value ``v``, and ``(c + v) + 0`` is Mmad's first step ``(C +
    step 0) + 0``; after it an accumulator is never ``-0.0`` (an fp32 sum is ``-0.0``
    only when both terms are), so the ``+ 0`` changes nothing at later steps. Elsewhere
    :func:`_settle` adds ``v`` to ``(c + 0) + 0``, which is ``c`` but for a ``-0.0``
    start made ``+0.0``: ``+0.0 + v`` is ``(-0.0 + v) + 0`` for every ``v``."""
    return types.boolean(a, ao, k0, b, bo, eb, ebo, ea, c, co, cp, r), _tile_ir(True)


@intrinsic
def _tile_exact(typingctx, a, ao, k0, b, bo, eb, ebo, ea, c, co, cp, r):
    """:func:`_tile` for a tile whose rows' sums are all exact by their bits: each is
    kept as it is, ``c = (c + fp32(x)) + 0``, with no check (``eb``, ``ea``, ``r`` not
    read or written); returns False."""
    return types.boolean(a, ao, k0, b, bo, eb, ebo, ea, c, co, cp, r), _tile_ir(False)


def _tile_ir(checked):
    """The code generator of :func:`_tile` (``checked``) or :func:`_tile_exact`."""
    def codegen(context, builder, signature, args):
        f64, f32, i64 = ir.DoubleType(), ir.FloatType(), ir.IntType(64)
        v4d, v4f = ir.VectorType(f64, 4), ir.VectorType(f32, 4)
        a, ao, k0, b, bo, eb, ebo, ea, c, co, cp, r = args
        ty = signature.args
        pa, pb, peb, pea, pc, pr = (context.make_array(ty[n])(context, builder, args[n]).data
                                    for n in (0, 3, 5, 7, 8, 11))
        fmuladd = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(v4d, [v4d] * 3), "llvm.fmuladd.v4f64")

        def const(v):
            return ir.Constant(i64, v)

        def vector(p, at, vt, value=None):       # load (or store) 4 elements at p[at]
            q = builder.bitcast(builder.gep(p, [at]), vt.as_pointer())
            align = 8 if vt is v4d else 4
            if value is None:
                return builder.load(q, align=align)
            builder.store(value, q, align=align)

        def splat(x):                             # a value in all four lanes
            v = builder.insert_element(ir.Constant(v4d, ir.Undefined), x, ir.Constant(
                ir.IntType(32), 0))
            return builder.shuffle_vector(v, ir.Constant(v4d, ir.Undefined),
                                          ir.Constant(ir.VectorType(ir.IntType(32), 4),
                                                      [0] * 4))

        def a_k(i, k):                            # a[ao + i k0 + k], in four lanes
            return splat(builder.load(builder.gep(pa, [builder.add(
                builder.add(ao, builder.mul(k0, const(i))), k)])))

        def b_k(k, v):                            # b[bo + k WIDTH + 4 v ..]
            return vector(pb, builder.add(bo, builder.add(builder.mul(k, const(WIDTH)),
                                                          const(4 * v))), v4d)

        # a loop over k (its trip count a run-time value, so that the compiler does not
        # unroll it whole and interleave the sums' chains), the sums starting at -0.0:
        # -0.0 + p is p for every product p (a zero's sign kept), so the first
        # multiply-add is the first product
        entry = builder.block
        body = builder.append_basic_block("k_loop")
        done = builder.append_basic_block("k_done")
        builder.branch(body)
        builder.position_at_end(body)
        k = builder.phi(i64)
        k.add_incoming(const(0), entry)
        xs = [[builder.phi(v4d) for _ in range(_NV)] for _ in range(MR)]
        ys = [b_k(k, v) for v in range(_NV)]
        sums = []
        for i in range(MR):
            ai = a_k(i, k)
            sums.append([builder.call(fmuladd, [ai, ys[v], xs[i][v]]) for v in range(_NV)])
        start = ir.Constant(v4d, [-0.0] * 4)
        for i in range(MR):
            for v in range(_NV):
                xs[i][v].add_incoming(start, entry)
                xs[i][v].add_incoming(sums[i][v], body)
        k_next = builder.add(k, const(1))
        k.add_incoming(k_next, body)
        builder.cbranch(builder.icmp_signed("<", k_next, k0), body, done)
        builder.position_at_end(done)
        zero = ir.Constant(v4f, [0.0] * 4)
        left = ir.Constant(ir.VectorType(ir.IntType(1), 4), [0] * 4)
        for v in range(_NV):
            if checked:
                e_col = vector(peb, builder.add(ebo, const(4 * v)), v4d)
            for i in range(MR):
                x = sums[i][v]
                at = builder.add(builder.add(co, builder.mul(cp, const(i))), const(4 * v))
                if checked:
                    vector(pr, const(i * NC + 4 * v), v4d, x)
                    e = builder.fmul(splat(builder.load(builder.gep(pea, [const(i)]))),
                                     e_col)
                    lo = builder.fptrunc(builder.fsub(x, e), v4f)
                    ok = builder.fcmp_ordered("==", lo,
                                              builder.fptrunc(builder.fadd(x, e), v4f))
                    left = builder.or_(left, builder.not_(ok))
                    value = builder.select(ok, lo, zero)
                else:
                    value = builder.fptrunc(x, v4f)
                acc = builder.fadd(vector(pc, at, v4f), value)
                vector(pc, at, v4f, builder.fadd(acc, zero))
        return builder.icmp_unsigned("!=", builder.bitcast(left, ir.IntType(4)),
                                     ir.Constant(ir.IntType(4), 0))

    return codegen


@njit(cache=True)
def _settle(a, b, nb, s, m0, t0, limit, ea_t, sa, eb, sb, r, c, co, cp, partials):
    """The sums of the tile at rows ``m0 ..``, columns ``t0 ..`` of block ``nb``, step
    ``s`` that :func:`_tile` left out (the same test on the same sums ``r``: ``fp32(x - E)
    != fp32(x + E)``, ``E = ea_t[i] * eb``), added to their accumulators ``c[co + i cp +
    u]`` (:func:`_tile` says why a plain add): ``v`` = fp32 of the sum when its row and
    column are exact by their bits (``sa + sb <= limit``) or it is not finite (NaN or an
    infinity, the same in every order), else of the exact sum (:func:`_exact_sum`).
    Compiled without fastmath."""
    for i in range(MR):
        m = m0 + i
        for u in range(NC):
            t = t0 + u
            x = r[i * NC + u]
            e = ea_t[i] * eb[nb, s, t]
            if np.float32(x - e) != np.float32(x + e):
                if sa[s, m] + sb[nb, s, t] <= limit or not abs(x) < math.inf:
                    v = np.float32(x)
                else:
                    v = np.float32(_exact_sum(a, b, nb, s, m, t, partials))
                at = co + i * cp + u
                c[at] = c[at] + v


@njit(cache=True)
def _accumulate(a, b, init, has_init, out, mbits, emin, by_bits, lk, pow2):
    """``out[g, n // 16, m, n % 16]`` = fp32 ``init + step 0 + step 1 + ...`` for row
    m < M, column n of member g (``init``, of ``out``'s shape, read only when
    ``has_init``; it may be ``out``). ``a`` (G, S, Mp, k0) and ``b`` (G, blocks, S,
    k0, :data:`WIDTH`), C-contiguous float64; k0 16 or 8; ``Mp`` a multiple of :data:`MR`
    (rows from M = ``out.shape[2]`` on zeros); column n is ``WIDTH * block + t``, the
    columns from N = 16 x ``out.shape[1]`` on zeros.

    Block by block of columns, step by step (the step's block of B, 16 KiB, stays in the
    first-level cache), tile by tile of :data:`MR` rows x :data:`NC` columns: the tile's
    float64 sums in registers, checked and added to the block's fp32 accumulators
    (:func:`_tile`), the few left out settled (:func:`_settle`); the accumulators start
    as ``init`` (or 0) and go to L0C's NZ order once.

    A row whose sums over the block are all exact by their bits gets the bound 0 (its sums
    are then kept as they are). Returns whether an element of ``out`` is NaN (the loop
    writes every one: Mmad makes NaNs canonical only when there is one, with no pass over
    C to look for them)."""
    G, S, Mp, k0 = a.shape
    NBLK = b.shape[1]
    M = out.shape[2]
    N = out.shape[1] * 16
    assert Mp % MR == 0 and Mp >= M and b.shape[4] == WIDTH and b.shape[3] == k0
    assert b.shape[2] == S and NBLK * WIDTH >= N and out.shape[0] == G
    assert a.flags.c_contiguous and b.flags.c_contiguous
    bflat = b.reshape(-1)
    c = np.empty(Mp * WIDTH, np.float32)
    r = np.empty(MR * NC)
    ea_t = np.empty(MR)
    partials = np.empty(k0 + 1)
    limit = 53 - lk
    nan = False
    for g in range(G):
        ag, bg = a[g], b[g]
        af = ag.reshape(-1)
        ea, sa, eb, sb, widest = _figures(ag.view(np.int64), bg.view(np.int64), mbits,
                                          emin, by_bits, lk, pow2)
        ebf = eb.reshape(-1)
        for nb in range(NBLK):
            nt = min(WIDTH, N - nb * WIDTH)              # the block's columns of C
            for m in range(Mp):
                for u in range(nt // 16):
                    for t in range(16):
                        c[m * WIDTH + u * 16 + t] = (
                            init[g, nb * (WIDTH // 16) + u, m, t]
                            if has_init and m < M else np.float32(0.0))
            for s in range(S):
                bo = ((g * NBLK + nb) * S + s) * k0 * WIDTH
                for m0 in range(0, Mp, MR):
                    checked = False
                    for i in range(MR):                  # rows all exact: no bound
                        m = m0 + i
                        wide = sa[s, m] + widest[nb, s] > limit
                        ea_t[i] = ea[s, m] if wide else 0.0
                        checked |= wide
                    if not checked:
                        for t0 in range(0, nt, NC):
                            _tile_exact(af, (s * Mp + m0) * k0, k0, bflat, bo + t0, ebf, 0,
                                        ea_t, c, m0 * WIDTH + t0, WIDTH, r)
                        continue
                    for t0 in range(0, nt, NC):
                        if _tile(af, (s * Mp + m0) * k0, k0, bflat, bo + t0,
                                 ebf, (nb * S + s) * WIDTH + t0, ea_t, c, m0 * WIDTH + t0,
                                 WIDTH, r):
                            _settle(ag, bg, nb, s, m0, t0, limit, ea_t, sa, eb, sb, r, c,
                                    m0 * WIDTH + t0, WIDTH, partials)
            for u in range(nt // 16):
                for m in range(M):
                    for t in range(16):
                        v = c[m * WIDTH + u * 16 + t]
                        nan |= v != v
                        out[g, nb * (WIDTH // 16) + u, m, t] = v
    return nan
