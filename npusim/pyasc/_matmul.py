"""``asc.adv.Matmul`` on npusim: pyasc's Matmul object over npusim's high-level Matmul
(:mod:`npusim.ascendc.lib.matmul`).

pyasc's methods are Ascend C's in snake_case (``set_tensor_a`` -> ``SetTensorA``,
``iterate_all`` -> ``IterateAll``, ``get_tensor_c`` -> ``GetTensorC``); ``with
matmul.iterate() as count:`` is Ascend C's ``while (mm.Iterate()) {...}`` loop with its
iteration count (pyasc ``adv/matmul.py``: ``MatmulIterator``), and
``asc.adv.register_matmul`` is ``REGIST_MATMUL_OBJ``. In a MIX kernel (pyasc's default for
cube code, ``KERNEL_TYPE_MIX_AIC_1_2``) that makes the AIC a server of its two AIVs' calls,
as on the device: the AIVs' ``set_tensor_a``, ``iterate_all``, ``iterate`` +
``get_tensor_c`` (to GM, or to a LocalTensor when C's MatmulType is VECIN/VECCALC) are
messages their AIC executes; with ``matmul_cube_only=True`` (``KERNEL_TYPE_AIC_ONLY``) the AIC
calls the API itself. ``asc.adv.MatmulConfig``, ``get_mdl_config`` and ``get_normal_config``
give npusim's MatmulConfig (keywords only). What npusim's Matmul does not model (the
asynchronous iterate/get_tensor_c, get_tensor_c returning a GlobalTensor) raises its error
at the call.

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
        from npusim.ascendc.lib.matmul import Matmul as NpMatmul
        if matmul_policy:
            raise not_supported("asc.adv.Matmul", f"matmul_policy={matmul_policy}")
        from npusim.ascendc.lib.matmul_config import CFG_NORM
        self.mm = NpMatmul(_matmul_type(a), _matmul_type(b), _matmul_type(c),
                           _matmul_type(bias) if bias is not None else None,
                           CFG_NORM if matmul_config is None else matmul_config)

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
                            None if org_kb is None else int(org_kb),
                            0 if org_kc is None else int(org_kc))

    def set_single_shape(self, single_m, single_n, single_k) -> None:
        self.mm.SetSingleShape(int(single_m), int(single_n), int(single_k))

    def iterate_all(self, tensor, en_atomic=0, sync=True, en_sequential_write=None,
                    wait_iterate_all=None, fake_msg=None) -> None:
        self.mm.IterateAll(convert(tensor), int(en_atomic), bool(en_sequential_write),
                           bool(wait_iterate_all), bool(fake_msg), sync=bool(sync))

    def iterate_batch(self, tensor, *args, **kwargs) -> None:
        """``iterate_batch(tensor, batch_a, batch_b, en_sequential_write, matrix_stride_a=0,
        matrix_stride_b=0, matrix_stride_c=0, en_partial_sum=False, en_atomic=0, sync=True,
        wait_iterate_batch=None)``; the form without batch counts is not modelled."""
        if len(args) < 3 and "batch_a" not in kwargs:
            raise not_supported("asc.adv.Matmul.iterate_batch", "the form without batch_a/b")
        names = ("batch_a", "batch_b", "en_sequential_write", "matrix_stride_a",
                 "matrix_stride_b", "matrix_stride_c", "en_partial_sum", "en_atomic")
        kw = dict(zip(names, args), **kwargs)
        self.mm.IterateBatch(convert(tensor), int(kw["batch_a"]), int(kw["batch_b"]),
                             bool(kw.get("en_sequential_write", False)),
                             int(kw.get("matrix_stride_a", 0)), int(kw.get("matrix_stride_b", 0)),
                             int(kw.get("matrix_stride_c", 0)),
                             bool(kw.get("en_partial_sum", False)), int(kw.get("en_atomic", 0)),
                             sync=bool(kw.get("sync", True)),
                             waitIterateBatch=bool(kw.get("wait_iterate_batch")))

    def wait_iterate_all(self) -> None:
        self.mm.WaitIterateAll()

    def iterate(self, en_partial_sum=False, sync=True, local_c_matrix=None) -> "_Iterate":
        if local_c_matrix is not None:
            raise not_supported("asc.adv.Matmul.iterate", "local_c_matrix")
        return _Iterate(self.mm, bool(en_partial_sum), bool(sync))

    def get_tensor_c(self, tensor=None, en_atomic=0, en_sequential_write=False, sync=True,
                     optional_tensor=None) -> None:
        if tensor is None or optional_tensor is not None:
            raise not_supported("asc.adv.Matmul.get_tensor_c", "the forms returning C's "
                                "GlobalTensor or writing GM and a LocalTensor together")
        self.mm.GetTensorC(convert(tensor), int(en_atomic), bool(en_sequential_write),
                           sync=bool(sync))

    def end(self) -> None:
        self.mm.End()

    def __getattr__(self, name: str):
        raise not_supported(f"asc.adv.Matmul.{name}")


class _Iterate:
    """``with matmul.iterate() as count:``: the body runs once per base block."""

    def __init__(self, mm, partial_sum: bool, sync: bool):
        self.mm, self.partial_sum, self.sync = mm, partial_sum, sync

    def __npusim_loop__(self):
        count = 0
        while self.mm.Iterate(self.partial_sum, sync=self.sync):
            yield V.Int(count)
            count += 1


def register_matmul(pipe, *args) -> None:
    """``asc.adv.register_matmul(pipe, workspace, matmul, tiling=None)`` (pyasc 1.1.1) or
    ``(pipe, matmul, tiling)`` (the later form, whose workspace is the system workspace
    ``set_sys_workspace`` gave: ``GetSysWorkSpacePtr()``): ``REGIST_MATMUL_OBJ``."""
    from npusim.ascendc.crosscore import GetSysWorkSpacePtr
    from npusim.ascendc.lib.matmul import REGIST_MATMUL_OBJ
    if args and not isinstance(args[0], Matmul):
        workspace, args = convert(args[0]), args[1:]
    else:
        workspace = GetSysWorkSpacePtr()
    matmul, tiling = args[0], (args[1] if len(args) > 1 else None)
    objects = (matmul.mm,) if tiling is None else (matmul.mm, _tiling(tiling))
    REGIST_MATMUL_OBJ(pipe.p, workspace, *objects)


def tcube_tiling(**fields) -> V.StructView:
    """``asc.adv.TCubeTiling(m=..., base_m=..., ...)`` built in a kernel: pyasc's own Struct
    with those fields (the others at pyasc's defaults), read as a kernel reads a tiling
    argument (``tiling.base_m``...) and given to ``matmul.init`` as one."""
    from asc.language.adv.tiling import TCubeTiling
    return V.StructView(TCubeTiling(**{k: int(v) for k, v in fields.items()}))


#: asc.adv names bound here rather than by name lookup.
def _snake_call(api: str, target):
    """pyasc's snake_case keywords -> ``target``'s camelCase parameters (asc.adv.MatmulConfig,
    get_mdl_config, get_normal_config: the same fields as tiling.h's)."""
    import inspect
    names = {n.replace("_", "").lower(): n for n in inspect.signature(target).parameters}

    def call(**kwargs):
        unknown = [k for k in kwargs if k.replace("_", "").lower() not in names]
        if unknown:
            raise not_supported(api, ", ".join(unknown))
        return target(**{names[k.replace("_", "").lower()]: v for k, v in kwargs.items()})
    return call


def _adv_configs() -> dict:
    from npusim.ascendc.lib import matmul_config as C
    return {"MatmulConfig": _snake_call("asc.adv.MatmulConfig", C.MatmulConfig),
            "get_mdl_config": _snake_call("asc.adv.get_mdl_config", C.GetMDLConfig),
            "get_normal_config": _snake_call("asc.adv.get_normal_config", C.GetNormalConfig)}


ADV = {"Matmul": Matmul, "register_matmul": register_matmul, "TCubeTiling": tcube_tiling,
       **_adv_configs()}
