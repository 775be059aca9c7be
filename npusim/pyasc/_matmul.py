"""``asc.adv.Matmul`` on npusim: pyasc's Matmul object over npusim's high-level Matmul
(:mod:`npusim.ascendc.lib.matmul`).

pyasc's methods are Ascend C's in snake_case (``set_tensor_a`` -> ``SetTensorA``,
``iterate_all`` -> ``IterateAll``, ``get_tensor_c`` -> ``GetTensorC``); ``with
matmul.iterate() as count:`` is Ascend C's ``while (mm.Iterate()) {...}`` loop with its
iteration count (pyasc ``adv/matmul.py``: ``MatmulIterator``), and
``asc.adv.register_matmul`` is ``REGIST_MATMUL_OBJ``. What npusim's Matmul does not model
(the MIX form where AIVs call an AIC, C in VECIN/VECCALC, MatmulConfig templates) raises
its KernelError at the call.

Sources: pyasc docs/python-api ``asc.language.adv.Matmul``; hiascend "Matmul使用说明",
"REGIST_MATMUL_OBJ", "Iterate", "GetTensorC".
"""
from __future__ import annotations

from npusim.ascendc.types import TPosition
from npusim.pyasc import _values as V
from npusim.pyasc._api import convert, not_supported, npusim_struct


def _matmul_type(t):
    """pyasc's ``asc.adv.MatmulType`` -> npusim's."""
    from npusim.ascendc.lib.matmul import MatmulType
    from npusim.ascendc.lib.matmul_tiling import CubeFormat
    return MatmulType(TPosition[t.position.name], CubeFormat[t.format.name], V.np_dtype(t.dtype),
                      bool(t.is_trans))


def _tiling(tiling):
    return npusim_struct(tiling.host) if isinstance(tiling, V.StructView) else tiling


class Matmul:
    """``asc.adv.Matmul(a, b, c, bias=None, matmul_config=None, matmul_policy=0)``."""

    def __init__(self, a, b, c, bias=None, matmul_config=None, matmul_policy=0):
        from npusim.ascendc import core
        from npusim.ascendc.lib.matmul import Matmul as NpMatmul
        if core.current_core().core_kind == core.AIV:
            raise not_supported("asc.adv.Matmul on a vector core", "the MIX form, where the "
                                "AIVs call and their AIC computes, is not modelled by npusim's "
                                "Matmul; a cube-only kernel (matmul_cube_only=True) runs")
        if matmul_config is not None:
            raise not_supported("asc.adv.Matmul", "matmul_config (the MDL/NORM templates)")
        if matmul_policy:
            raise not_supported("asc.adv.Matmul", f"matmul_policy={matmul_policy}")
        self.mm = NpMatmul(_matmul_type(a), _matmul_type(b), _matmul_type(c),
                           _matmul_type(bias) if bias is not None else None)

    def init(self, tiling) -> None:
        self.mm.Init(_tiling(tiling))

    def set_tensor_a(self, tensor, transpose=False) -> None:
        self.mm.SetTensorA(convert(tensor), bool(transpose))

    def set_tensor_b(self, tensor, transpose=False) -> None:
        self.mm.SetTensorB(convert(tensor), bool(transpose))

    def set_bias(self, tensor) -> None:
        self.mm.SetBias(convert(tensor))

    def disable_bias(self) -> None:
        self.mm.DisableBias()

    def set_tail(self, tail_m=-1, tail_n=-1, tail_k=-1) -> None:
        self.mm.SetTail(int(tail_m), int(tail_n), int(tail_k))

    def set_org_shape(self, org_m, org_n, org_ka, org_kb=None, org_kc=None) -> None:
        self.mm.SetOrgShape(int(org_m), int(org_n), int(org_ka),
                            None if org_kb is None else int(org_kb))

    def set_single_shape(self, single_m, single_n, single_k) -> None:
        self.mm.SetSingleShape(int(single_m), int(single_n), int(single_k))

    def iterate_all(self, tensor, en_atomic=0, sync=True, en_sequential_write=None,
                    wait_iterate_all=None, fake_msg=None) -> None:
        self.mm.IterateAll(convert(tensor), int(en_atomic), bool(en_sequential_write))

    def iterate(self, en_partial_sum=False, sync=True, local_c_matrix=None) -> "_Iterate":
        if local_c_matrix is not None:
            raise not_supported("asc.adv.Matmul.iterate", "local_c_matrix")
        return _Iterate(self.mm, bool(en_partial_sum))

    def get_tensor_c(self, tensor, en_atomic=0, en_sequential_write=False, sync=True,
                     *args, **kwargs) -> None:
        self.mm.GetTensorC(convert(tensor), int(en_atomic), bool(en_sequential_write))

    def end(self) -> None:
        self.mm.End()

    def __getattr__(self, name: str):
        raise not_supported(f"asc.adv.Matmul.{name}")


class _Iterate:
    """``with matmul.iterate() as count:``: the body runs once per base block."""

    def __init__(self, mm, partial_sum: bool):
        self.mm, self.partial_sum = mm, partial_sum

    def __npusim_loop__(self):
        count = 0
        while self.mm.Iterate(self.partial_sum):
            yield V.Int(count)
            count += 1


def register_matmul(pipe, *args) -> None:
    """``asc.adv.register_matmul(pipe, workspace, matmul, tiling=None)`` (pyasc 1.1.1) or
    ``(pipe, matmul, tiling)`` (the later form): ``REGIST_MATMUL_OBJ``."""
    from npusim.ascendc.lib.matmul import REGIST_MATMUL_OBJ
    workspace = None
    if args and not isinstance(args[0], Matmul):
        workspace, args = args[0], args[1:]
    matmul, tiling = args[0], (args[1] if len(args) > 1 else None)
    objects = (matmul.mm,) if tiling is None else (matmul.mm, _tiling(tiling))
    REGIST_MATMUL_OBJ(pipe.p, convert(workspace), *objects)


#: asc.adv names bound here rather than by name lookup.
ADV = {"Matmul": Matmul, "register_matmul": register_matmul}
