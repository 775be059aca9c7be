"""aclnn objects -- aclTensor, aclScalar, the arrays and lists -- in Python form.

Mirrors the object API of ``hicann/opbase: include/nnopbase/aclnn/acl_meta.h``
and its implementation ``src/nnopbase/common/api/acl_op_api.cpp``
(``docs/reference/api.md §2``). The C API names are kept verbatim.

Python conventions (api.md §5, pyACL):

* a C pointer + count pair becomes one Python sequence (list, tuple, 1-D
  numpy array); C ``nullptr`` is ``None``;
* device addresses are plain ``int``; a null address is ``0`` (``None`` is
  accepted on input and stored as ``0``);
* a C function returning ``aclnnStatus`` with out-parameters returns
  ``(value, ret)`` -- values first, status last; one returning only a status
  returns just ``ret``;
* a ``Create`` function returns the object, or ``None`` where C returns
  ``nullptr``. Every failure also leaves a message for
  :func:`aclnn.errmsg.get_recent_err_msg`.

Simulator-only checks, marked **[R]** below, turn C undefined behaviour (a
double ``delete``, use after destroy, a stride array shorter than the view)
into an error status or a ``None`` with a message.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

import numpy as np

from .constants import (
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ACLNN_SUCCESS,
    aclDataType,
    aclDataTypeSize,
    aclFormat,
    acl_dtype_to_numpy,
    to_acl_data_type,
    to_acl_format,
)
from .errmsg import report_error

__all__ = [
    "aclTensor",
    "aclScalar",
    "aclIntArray",
    "aclFloatArray",
    "aclBoolArray",
    "aclTensorList",
    "aclScalarList",
    "aclCreateTensor",
    "aclInitTensor",
    "aclCreateScalar",
    "aclCreateIntArray",
    "aclCreateFloatArray",
    "aclCreateBoolArray",
    "aclCreateTensorList",
    "aclCreateScalarList",
    "aclDestroyTensor",
    "aclDestroyScalar",
    "aclDestroyIntArray",
    "aclDestroyFloatArray",
    "aclDestroyBoolArray",
    "aclDestroyTensorList",
    "aclDestroyScalarList",
    "aclGetViewShape",
    "aclGetStorageShape",
    "aclGetViewStrides",
    "aclGetViewOffset",
    "aclGetFormat",
    "aclGetDataType",
    "aclGetIntArraySize",
    "aclGetFloatArraySize",
    "aclGetBoolArraySize",
    "aclGetTensorListSize",
    "aclGetScalarListSize",
    "aclSetRawTensorAddr",
    "aclGetRawTensorAddr",
    "contiguous_strides",
]

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1


class _ParamError(Exception):
    """Internal: a parameter check failed with ``code`` and ``message``."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _is_int(value) -> bool:
    """True for Python and numpy integers, but not for ``bool``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _as_sequence(values, what: str, api: str) -> list:
    """``values`` as a list; rejects ``None``, scalars, strings and n-D arrays."""
    if values is None:
        raise _ParamError(ACLNN_ERR_PARAM_NULLPTR, f"{api}: {what} is nullptr (None).")
    if isinstance(values, (str, bytes, dict)):
        raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                          f"{api}: {what} must be a sequence, got {type(values).__name__}.")
    if isinstance(values, np.ndarray):
        if values.ndim != 1:
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: {what} must be 1-D, got an array of shape {values.shape}.")
        return values.tolist()
    try:
        return list(values)
    except Exception:  # any failure to iterate the caller's object is a bad argument
        raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                          f"{api}: {what} must be a sequence, "
                          f"got {type(values).__name__}.") from None


def _int64_tuple(values, what: str, api: str, *, non_negative: bool) -> tuple[int, ...]:
    """Validate a sequence of int64 values (dims when ``non_negative``)."""
    items = _as_sequence(values, what, api)
    result = []
    for i, v in enumerate(items):
        if not _is_int(v):
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: {what}[{i}] must be an int, got {type(v).__name__} {v!r}.")
        v = int(v)
        if non_negative and v < 0:
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: {what}[{i}] = {v} is negative; dims must be >= 0.")
        if not _INT64_MIN <= v <= _INT64_MAX:
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: {what}[{i}] = {v} does not fit in int64.")
        result.append(v)
    return tuple(result)


def _address(addr, what: str, api: str) -> int:
    """Validate a device address: ``None`` -> 0, else an int in [0, 2**64)."""
    if addr is None:
        return 0
    if not _is_int(addr) or not 0 <= int(addr) <= _UINT64_MAX:
        raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                          f"{api}: {what} must be an int address in [0, 2**64) or None, "
                          f"got {addr!r}.")
    return int(addr)


def _enum_arg(converter, value, what: str, api: str):
    try:
        return converter(value)
    except (TypeError, ValueError) as exc:
        raise _ParamError(ACLNN_ERR_PARAM_INVALID, f"{api}: invalid {what}: {exc}.") from None


def contiguous_strides(dims: Sequence[int]) -> tuple[int, ...]:
    """Row-major contiguous strides (in elements) of a shape.

    Same formula as the ``CreateAclTensor`` helper of the official samples
    (api.md §3): ``strides[-1] = 1; strides[i] = dims[i+1] * strides[i+1]``.
    ``contiguous_strides((2, 3, 4)) == (12, 4, 1)``; ``() -> ()``.
    """
    strides = [1] * len(dims)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = int(dims[i + 1]) * strides[i + 1]
    return tuple(strides)


def _parse_tensor_args(api, viewDims, dataType, stride, offset, format, storageDims, tensorData):
    """Shared checks of aclCreateTensor / aclInitTensor; returns the fields."""
    view_dims = _int64_tuple(viewDims, "viewDims", api, non_negative=True)
    storage_dims = _int64_tuple(storageDims, "storageDims", api, non_negative=True)
    data_type = _enum_arg(to_acl_data_type, dataType, "dataType", api)
    acl_format = _enum_arg(to_acl_format, format, "format", api)
    if stride is None:
        strides = contiguous_strides(view_dims)
    else:
        strides = _int64_tuple(stride, "stride", api, non_negative=False)
        if len(strides) != len(view_dims):
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: stride has {len(strides)} entries but viewDims has "
                              f"{len(view_dims)}.")
    if not _is_int(offset):
        raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                          f"{api}: offset must be an int (elements), got {offset!r}.")
    if not 0 <= int(offset) <= _INT64_MAX:
        raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                          f"{api}: offset = {int(offset)} must be >= 0 (elements).")
    address = _address(tensorData, "tensorData", api)
    return view_dims, data_type, strides, int(offset), acl_format, storage_dims, address


class _AclObject:
    """Common base: the ``destroyed`` flag set by the ``aclDestroy*`` APIs."""

    destroyed: bool = False


class aclTensor(_AclObject):
    """An aclnn tensor descriptor (``typedef struct aclTensor aclTensor;``, api.md §2).

    Create it with :func:`aclCreateTensor`. It describes memory, it does not
    own it: ``tensor_data`` is the device address of the *storage* base and
    ``offset`` the element offset of the view's first element (the
    convention torch_npu uses, api.md §2).

    Attributes:
        view_dims: logical shape, ``tuple[int]``.
        data_type: :class:`aclDataType`.
        strides: view strides in elements, ``tuple[int]``.
        offset: offset of the first view element from the storage base, in elements.
        format: :class:`aclFormat`.
        storage_dims: physical shape, ``tuple[int]``.
        tensor_data: device address of the storage (``int``; 0 = null).
        destroyed: set by :func:`aclDestroyTensor`.
    """

    def __init__(self, view_dims, data_type, strides, offset, format, storage_dims,
                 tensor_data) -> None:
        self.view_dims: tuple[int, ...] = tuple(view_dims)
        self.data_type: aclDataType = aclDataType(data_type)
        self.strides: tuple[int, ...] = tuple(strides)
        self.offset: int = int(offset)
        self.format: aclFormat = aclFormat(format)
        self.storage_dims: tuple[int, ...] = tuple(storage_dims)
        self.tensor_data: int = int(tensor_data or 0)
        self.destroyed = False

    @property
    def itemsize(self) -> int:
        """Bytes per element, :func:`aclDataTypeSize` of ``data_type``."""
        return aclDataTypeSize(self.data_type)

    @property
    def np_dtype(self) -> np.dtype:
        """numpy dtype of ``data_type``; ``ValueError`` when it has none."""
        return acl_dtype_to_numpy(self.data_type)

    @property
    def ndim(self) -> int:
        """Number of view dimensions."""
        return len(self.view_dims)

    def numel(self) -> int:
        """Number of elements of the view (1 for a 0-D tensor)."""
        return math.prod(self.view_dims)

    def storage_numel(self) -> int:
        """Number of elements of the storage shape."""
        return math.prod(self.storage_dims)

    def is_empty(self) -> bool:
        """True when a view dimension is 0 (the view has no elements)."""
        return any(d == 0 for d in self.view_dims)

    def is_contiguous(self) -> bool:
        """True when the strides are the row-major contiguous strides of the view.

        Dimensions of size 1 are ignored (their stride never matters), and an
        empty view is contiguous -- both as in PyTorch. The api.md §2
        transpose example (view (4, 2), strides (1, 4)) is not contiguous.
        """
        if self.is_empty():
            return True
        expected = 1
        for dim, stride in zip(reversed(self.view_dims), reversed(self.strides)):
            if dim != 1:
                if stride != expected:
                    return False
                expected *= dim
        return True

    def in_storage_bounds(self) -> bool:
        """True when every element the view addresses lies inside the storage.

        Checks ``0 <= offset + sum(i_k * strides[k]) < storage_numel()`` over
        all view indices. CANN does not check this; ops can use it to reject
        inconsistent descriptors. An empty view is always in bounds.
        """
        if self.is_empty():
            return True
        low = high = self.offset
        for dim, stride in zip(self.view_dims, self.strides):
            span = (dim - 1) * stride
            if span < 0:
                low += span
            else:
                high += span
        return low >= 0 and high < self.storage_numel()

    def storage_nbytes(self) -> int:
        """Bytes of the storage: ``prod(storage_dims) * itemsize``."""
        return self.storage_numel() * self.itemsize

    def view_nbytes(self) -> int:
        """Bytes of the view's elements: ``numel() * itemsize``."""
        return self.numel() * self.itemsize

    def data_address(self) -> int:
        """Device address of the first view element.

        ``tensor_data + offset * itemsize``; 0 while ``tensor_data`` is null
        (a null base plus an offset is not an address).
        """
        if not self.tensor_data:
            return 0
        return self.tensor_data + self.offset * self.itemsize

    def __repr__(self) -> str:
        state = ", destroyed" if self.destroyed else ""
        return (f"aclTensor(shape={self.view_dims}, strides={self.strides}, "
                f"offset={self.offset}, dtype={self.data_type.name}, "
                f"format={self.format.name}, storage={self.storage_dims}, "
                f"addr={self.tensor_data:#x}{state})")


class aclScalar(_AclObject):
    """An aclnn scalar (``typedef struct aclScalar aclScalar;``, api.md §2).

    Attributes:
        value: the value as a numpy scalar of ``data_type``'s dtype
            (e.g. ``np.float32`` for ``ACL_FLOAT``).
        data_type: :class:`aclDataType`.
        destroyed: set by :func:`aclDestroyScalar`.
    """

    def __init__(self, value: np.generic, data_type: aclDataType) -> None:
        self.value = value
        self.data_type: aclDataType = aclDataType(data_type)
        self.destroyed = False

    @property
    def np_dtype(self) -> np.dtype:
        """numpy dtype of the stored value."""
        return acl_dtype_to_numpy(self.data_type)

    def to(self, np_dtype) -> np.generic:
        """The value converted to ``np_dtype`` (a numpy dtype-like or an :class:`aclDataType`)."""
        if isinstance(np_dtype, aclDataType):
            np_dtype = acl_dtype_to_numpy(np_dtype)
        return np.dtype(np_dtype).type(self.value)

    def __repr__(self) -> str:
        state = ", destroyed" if self.destroyed else ""
        return f"aclScalar({self.value!r}, dtype={self.data_type.name}{state})"


class _AclArray(_AclObject):
    """Common base of aclIntArray / aclFloatArray / aclBoolArray: an immutable copy."""

    def __init__(self, values: Sequence) -> None:
        self.values: tuple = tuple(values)
        self.destroyed = False

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator:
        return iter(self.values)

    def __getitem__(self, index):
        return self.values[index]

    def __repr__(self) -> str:
        state = ", destroyed" if self.destroyed else ""
        return f"{type(self).__name__}({list(self.values)!r}{state})"


class aclIntArray(_AclArray):
    """``aclIntArray`` (api.md §2): a copied tuple of int64 values in ``values``."""


class aclFloatArray(_AclArray):
    """``aclFloatArray`` (api.md §2): a copied tuple of float32-rounded Python floats."""


class aclBoolArray(_AclArray):
    """``aclBoolArray`` (api.md §2): a copied tuple of Python bools."""


class aclTensorList(_AclArray):
    """``aclTensorList`` (api.md §2): a tuple of :class:`aclTensor` (or ``None``) in ``values``.

    The list refers to the same tensor objects it was created from and
    destroys them in :func:`aclDestroyTensorList`.
    """


class aclScalarList(_AclArray):
    """``aclScalarList`` (api.md §2): a tuple of :class:`aclScalar` (or ``None``) in ``values``.

    Destroys its scalars in :func:`aclDestroyScalarList`.
    """


# ---------------------------------------------------------------------------
# Creation
# ---------------------------------------------------------------------------
def aclCreateTensor(viewDims, dataType, stride, offset, format, storageDims,
                    tensorData) -> aclTensor | None:
    """Create an :class:`aclTensor` descriptor.

    C (api.md §2, ``acl_meta.h``)::

        aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum,
            aclDataType dataType, const int64_t* stride, int64_t offset, aclFormat format,
            const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData);

    Args:
        viewDims: logical shape, a sequence of ints >= 0 (``()`` for 0-D).
        dataType: :class:`aclDataType` or its int value.
        stride: view strides in **elements**, one per view dim; ``None`` means
            contiguous strides (:func:`contiguous_strides`). Not otherwise
            checked, as in CANN (0 and negative strides are accepted).
        offset: offset of the first view element from ``tensorData`` in
            **elements** (torch_npu passes ``storage_offset()``); int >= 0.
        format: :class:`aclFormat` or its int value.
        storageDims: physical shape, a sequence of ints >= 0. torch_npu
            passes one dim, the storage element count.
        tensorData: device address (``int``) of the storage, or ``None`` / 0
            (CANN does not check it; docs say it must be 32-byte aligned).

    Returns:
        The tensor, or ``None`` (C ``nullptr``) when ``viewDims`` or
        ``storageDims`` is ``None`` (CANN's only documented check) or -- as
        simulator checks -- when a dim is negative or not an int, the stride
        count differs from the view dim count, the offset is negative,
        ``dataType``/``format`` is not an enumerator, or ``tensorData`` is not
        an address. Each ``None`` leaves a message for ``aclGetRecentErrMsg``.
    """
    api = "aclCreateTensor"
    try:
        fields = _parse_tensor_args(api, viewDims, dataType, stride, offset, format,
                                    storageDims, tensorData)
    except _ParamError as err:
        report_error(err.code, err.message)
        return None
    return aclTensor(*fields)


def aclInitTensor(tensor, viewDims, dataType, stride, offset, format, storageDims,
                  tensorData) -> int:
    """Re-initialise an existing :class:`aclTensor` in place.

    C (api.md §2)::

        aclnnStatus aclInitTensor(aclTensor* tensor, const int64_t* viewDims,
            uint64_t viewDimsNum, aclDataType dataType, const int64_t* stride, int64_t offset,
            aclFormat format, const int64_t* storageDims, uint64_t storageDimsNum,
            void* tensorDataAddr);

    Arguments and units as :func:`aclCreateTensor`.

    Returns:
        ``ACLNN_SUCCESS`` (0); ``ACLNN_ERR_PARAM_NULLPTR`` (161001) when
        ``tensor``, ``viewDims`` or ``storageDims`` is ``None``;
        ``ACLNN_ERR_PARAM_INVALID`` (161002) when ``tensor`` is not a live
        aclTensor or an argument fails the :func:`aclCreateTensor` checks
        [R: CANN only checks ``tensor``]. On error the tensor is unchanged.
    """
    api = "aclInitTensor"
    status = _check_object(tensor, aclTensor, "tensor", api)
    if status != ACLNN_SUCCESS:
        return status
    try:
        fields = _parse_tensor_args(api, viewDims, dataType, stride, offset, format,
                                    storageDims, tensorData)
    except _ParamError as err:
        return report_error(err.code, err.message)
    tensor.__init__(*fields)
    return ACLNN_SUCCESS


def aclCreateScalar(value, dataType) -> aclScalar | None:
    """Create an :class:`aclScalar` holding ``value`` as ``dataType``.

    C (api.md §2)::

        aclScalar* aclCreateScalar(void* value, aclDataType dataType);

    C reads ``*value`` from host memory as ``dataType``; here ``value`` is a
    Python or numpy number (or 0-d array) converted with the dtype's numpy
    scalar type: ``ACL_FLOAT`` -> ``np.float32(value)``, ``ACL_BF16`` ->
    ``ml_dtypes.bfloat16(value)``, ``ACL_INT64`` -> ``np.int64(value)`` ...
    A float too large for a float dtype becomes ``inf`` (IEEE cast).

    Returns:
        The scalar, or ``None`` (C ``nullptr``) when ``value`` is ``None`` (as
        in CANN) or -- simulator checks -- when ``dataType`` has no numpy
        dtype (:data:`aclnn.constants.ACL_TO_NUMPY`), ``value`` is a string /
        non-scalar, or numpy cannot convert it (e.g. a Python int out of the
        integer dtype's range). A message is left for ``aclGetRecentErrMsg``.
    """
    api = "aclCreateScalar"
    if value is None:
        report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: value is nullptr (None).")
        return None
    try:
        data_type = _enum_arg(to_acl_data_type, dataType, "dataType", api)
    except _ParamError as err:
        report_error(err.code, err.message)
        return None
    try:
        np_dtype = acl_dtype_to_numpy(data_type)
    except ValueError as exc:
        report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: {exc}.")
        return None
    if isinstance(value, np.ndarray):
        if value.ndim != 0:
            report_error(ACLNN_ERR_PARAM_INVALID,
                         f"{api}: value must be a scalar, got an array of shape {value.shape}.")
            return None
        value = value[()]
    if isinstance(value, (str, bytes)):
        report_error(ACLNN_ERR_PARAM_INVALID, f"{api}: value must be a number, got {value!r}.")
        return None
    try:
        with np.errstate(over="ignore"):  # a float too large for the dtype becomes inf
            converted = np_dtype.type(value)
    except Exception as exc:  # numpy, or the object's own conversion, failed
        report_error(ACLNN_ERR_PARAM_INVALID,
                     f"{api}: cannot convert value {value!r} to {data_type.name}: {exc}.")
        return None
    if not isinstance(converted, np.generic):
        # numpy turns a list into an array: C reads one element, so a sequence is no scalar
        report_error(ACLNN_ERR_PARAM_INVALID,
                     f"{api}: value must be a single number, got {type(value).__name__} "
                     f"{value!r}.")
        return None
    return aclScalar(converted, data_type)


def _create_array(api: str, values, cls, convert) -> _AclArray | None:
    try:
        items = _as_sequence(values, "value", api)
        converted = [convert(i, v) for i, v in enumerate(items)]
    except _ParamError as err:
        report_error(err.code, err.message)
        return None
    return cls(converted)


def aclCreateIntArray(values) -> aclIntArray | None:
    """Create an :class:`aclIntArray` holding a copy of ``values``.

    C (api.md §2)::

        aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size);

    ``values``: a sequence of ints in the int64 range (``[]`` is allowed).
    CANN copies the values ("Its value will be copied to the aclIntArray").

    Returns:
        The array, or ``None`` with a message when ``values`` is ``None``, not
        a sequence, or holds a non-int / out-of-int64 value [R: simulator
        checks].
    """
    api = "aclCreateIntArray"

    def convert(i, v):
        if not _is_int(v) or not _INT64_MIN <= int(v) <= _INT64_MAX:
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: value[{i}] must be an int64, got {v!r}.")
        return int(v)

    return _create_array(api, values, aclIntArray, convert)


def aclCreateFloatArray(values) -> aclFloatArray | None:
    """Create an :class:`aclFloatArray` holding a copy of ``values``.

    C (api.md §2)::

        aclFloatArray* aclCreateFloatArray(const float* value, uint64_t size);

    ``values``: a sequence of real numbers (ints or floats, not bools). C's
    ``float`` is 32-bit, so each value is rounded to float32 and stored as a
    Python float (``aclCreateFloatArray([0.1])[0] == float(np.float32(0.1))``).

    Returns:
        The array, or ``None`` with a message when ``values`` is ``None``, not
        a sequence, or holds a non-number [R: simulator checks].
    """
    api = "aclCreateFloatArray"

    def convert(i, v):
        is_real = isinstance(v, (int, float, np.integer, np.floating))
        if isinstance(v, (bool, np.bool_)) or not is_real:
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: value[{i}] must be a real number, got {v!r}.")
        with np.errstate(over="ignore"):
            return float(np.float32(v))

    return _create_array(api, values, aclFloatArray, convert)


def aclCreateBoolArray(values) -> aclBoolArray | None:
    """Create an :class:`aclBoolArray` holding a copy of ``values``.

    C (api.md §2)::

        aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size);

    ``values``: a sequence of bools (``bool``, ``np.bool_``, or the ints 0/1).

    Returns:
        The array, or ``None`` with a message when ``values`` is ``None``, not
        a sequence, or holds anything else [R: simulator checks].
    """
    api = "aclCreateBoolArray"

    def convert(i, v):
        if isinstance(v, (bool, np.bool_)):
            return bool(v)
        if _is_int(v) and int(v) in (0, 1):
            return bool(v)
        raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                          f"{api}: value[{i}] must be a bool, got {v!r}.")

    return _create_array(api, values, aclBoolArray, convert)


def _element_checker(api: str, cls):
    seen: set[int] = set()

    def convert(i, v):
        if v is None:
            return None
        if not isinstance(v, cls):
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: value[{i}] must be an {cls.__name__} or None, "
                              f"got {type(v).__name__}.")
        if v.destroyed:
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: value[{i}] is an {cls.__name__} that was already "
                              "destroyed.")
        if id(v) in seen:
            raise _ParamError(ACLNN_ERR_PARAM_INVALID,
                              f"{api}: value[{i}] repeats an earlier element; the list would "
                              f"destroy that {cls.__name__} twice.")
        seen.add(id(v))
        return v

    return convert


def aclCreateTensorList(tensors) -> aclTensorList | None:
    """Create an :class:`aclTensorList` of ``tensors``.

    C (api.md §2)::

        aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size);

    ``tensors``: a sequence of :class:`aclTensor` (``None`` entries are kept,
    as C would keep null pointers). The list takes ownership:
    :func:`aclDestroyTensorList` destroys the tensors.

    Returns:
        The list, or ``None`` with a message when ``tensors`` is ``None`` or an
        entry is not an aclTensor, is destroyed, or appears twice (it would be
        destroyed twice) [R: simulator checks].
    """
    api = "aclCreateTensorList"
    return _create_array(api, tensors, aclTensorList, _element_checker(api, aclTensor))


def aclCreateScalarList(scalars) -> aclScalarList | None:
    """Create an :class:`aclScalarList` of ``scalars``.

    C (api.md §2)::

        aclScalarList* aclCreateScalarList(const aclScalar* const* value, uint64_t size);

    Same rules as :func:`aclCreateTensorList`, for :class:`aclScalar`;
    :func:`aclDestroyScalarList` destroys the scalars.
    """
    api = "aclCreateScalarList"
    return _create_array(api, scalars, aclScalarList, _element_checker(api, aclScalar))


# ---------------------------------------------------------------------------
# Destruction
# ---------------------------------------------------------------------------
def _destroy(obj, cls, api: str, what: str) -> int:
    """Mark ``obj`` destroyed; ``what`` is the C parameter's name, for the message."""
    if obj is None:
        return ACLNN_SUCCESS
    if not isinstance(obj, cls):
        return report_error(ACLNN_ERR_PARAM_INVALID,
                            f"{api}: {what}: expected an {cls.__name__}, got "
                            f"{type(obj).__name__}.")
    if obj.destroyed:
        return report_error(ACLNN_ERR_PARAM_INVALID,
                            f"{api}: {what}: the {cls.__name__} was already destroyed.")
    obj.destroyed = True
    return ACLNN_SUCCESS


def _destroy_list(array, cls, element_destroy, api: str) -> int:
    status = _destroy(array, cls, api, "array")
    if array is None or status != ACLNN_SUCCESS:
        return status
    for element in array.values:
        element_status = element_destroy(element)
        if element_status != ACLNN_SUCCESS and status == ACLNN_SUCCESS:
            status = element_status
    return status


def aclDestroyTensor(tensor) -> int:
    """Destroy an :class:`aclTensor`.

    C (api.md §2)::

        aclnnStatus aclDestroyTensor(const aclTensor* tensor);

    Returns:
        ``ACLNN_SUCCESS`` (0), also for ``None`` as in CANN (``aclDestroyTensor(nullptr)``
        returns ``OK``). ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message
        when the object was already destroyed or is not an aclTensor --
        **[R]** simulator choice: in C both are undefined behaviour (double
        ``delete``). The object is marked ``destroyed``.
    """
    return _destroy(tensor, aclTensor, "aclDestroyTensor", "tensor")


def aclDestroyScalar(scalar) -> int:
    """Destroy an :class:`aclScalar`.

    C (api.md §2)::

        aclnnStatus aclDestroyScalar(const aclScalar* scalar);

    Returns:
        ``ACLNN_SUCCESS`` (0), also for ``None`` as in CANN (``aclDestroyScalar(nullptr)``
        returns ``OK``). ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message
        when the object was already destroyed or is not an aclScalar --
        **[R]** simulator choice: in C both are undefined behaviour (double
        ``delete``). The object is marked ``destroyed``.
    """
    return _destroy(scalar, aclScalar, "aclDestroyScalar", "scalar")


def aclDestroyIntArray(array) -> int:
    """Destroy an :class:`aclIntArray`.

    C (api.md §2)::

        aclnnStatus aclDestroyIntArray(const aclIntArray* array);

    Returns:
        ``ACLNN_SUCCESS`` (0), also for ``None`` as in CANN (``aclDestroyIntArray(nullptr)``
        returns ``OK``). ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message
        when the object was already destroyed or is not an aclIntArray --
        **[R]** simulator choice: in C both are undefined behaviour (double
        ``delete``). The object is marked ``destroyed``.
    """
    return _destroy(array, aclIntArray, "aclDestroyIntArray", "array")


def aclDestroyFloatArray(array) -> int:
    """Destroy an :class:`aclFloatArray`.

    C (api.md §2)::

        aclnnStatus aclDestroyFloatArray(const aclFloatArray* array);

    Returns:
        ``ACLNN_SUCCESS`` (0), also for ``None`` as in CANN (``aclDestroyFloatArray(nullptr)``
        returns ``OK``). ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message
        when the object was already destroyed or is not an aclFloatArray --
        **[R]** simulator choice: in C both are undefined behaviour (double
        ``delete``). The object is marked ``destroyed``.
    """
    return _destroy(array, aclFloatArray, "aclDestroyFloatArray", "array")


def aclDestroyBoolArray(array) -> int:
    """Destroy an :class:`aclBoolArray`.

    C (api.md §2)::

        aclnnStatus aclDestroyBoolArray(const aclBoolArray* array);

    Returns:
        ``ACLNN_SUCCESS`` (0), also for ``None`` as in CANN (``aclDestroyBoolArray(nullptr)``
        returns ``OK``). ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message
        when the object was already destroyed or is not an aclBoolArray --
        **[R]** simulator choice: in C both are undefined behaviour (double
        ``delete``). The object is marked ``destroyed``.
    """
    return _destroy(array, aclBoolArray, "aclDestroyBoolArray", "array")


def aclDestroyTensorList(array) -> int:
    """Destroy an :class:`aclTensorList`.

    C (api.md §2)::

        aclnnStatus aclDestroyTensorList(const aclTensorList* array);

    Returns:
        ``ACLNN_SUCCESS`` (0), also for ``None`` as in CANN (``aclDestroyTensorList(nullptr)``
        returns ``OK``). ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message
        when the object was already destroyed or is not an aclTensorList --
        **[R]** simulator choice: in C both are undefined behaviour (double
        ``delete``). The object is marked ``destroyed``.

    Like CANN, it also calls ``aclDestroyTensor`` on every element (``None`` elements
    are skipped). The list is destroyed even if an element fails; the first
    element error is returned.
    """
    return _destroy_list(array, aclTensorList, aclDestroyTensor, "aclDestroyTensorList")


def aclDestroyScalarList(array) -> int:
    """Destroy an :class:`aclScalarList`.

    C (api.md §2)::

        aclnnStatus aclDestroyScalarList(const aclScalarList* array);

    Returns:
        ``ACLNN_SUCCESS`` (0), also for ``None`` as in CANN (``aclDestroyScalarList(nullptr)``
        returns ``OK``). ``ACLNN_ERR_PARAM_INVALID`` (161002) with a message
        when the object was already destroyed or is not an aclScalarList --
        **[R]** simulator choice: in C both are undefined behaviour (double
        ``delete``). The object is marked ``destroyed``.

    Like CANN, it also calls ``aclDestroyScalar`` on every element (``None`` elements
    are skipped). The list is destroyed even if an element fails; the first
    element error is returned.
    """
    return _destroy_list(array, aclScalarList, aclDestroyScalar, "aclDestroyScalarList")


# ---------------------------------------------------------------------------
# Getters (pyACL convention: values first, status last)
# ---------------------------------------------------------------------------
def _check_object(obj, cls, what: str, api: str) -> int:
    """0 when ``obj`` is a live ``cls``; else report and return the status."""
    if obj is None:
        return report_error(ACLNN_ERR_PARAM_NULLPTR, f"{api}: {what} is nullptr (None).")
    if not isinstance(obj, cls):
        return report_error(ACLNN_ERR_PARAM_INVALID,
                            f"{api}: {what} must be an {cls.__name__}, got {type(obj).__name__}.")
    if obj.destroyed:
        return report_error(ACLNN_ERR_PARAM_INVALID,
                            f"{api}: {what} is an {cls.__name__} that was already destroyed.")
    return ACLNN_SUCCESS


def _getter(obj, cls, what: str, api: str, read):
    status = _check_object(obj, cls, what, api)
    if status != ACLNN_SUCCESS:
        return None, status
    return read(obj), ACLNN_SUCCESS


def aclGetViewShape(tensor):
    """The view (logical) shape of a tensor, as a new list of ints.

    C (api.md §2)::

        aclnnStatus aclGetViewShape(const aclTensor* tensor, int64_t** viewDims,
                                    uint64_t* viewDimsNum);

    Python (pyACL convention, api.md §5): ``view_dims, ret = aclGetViewShape(tensor)``.

    Returns:
        ``(view_dims, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``tensor`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclTensor [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(tensor, aclTensor, "tensor", "aclGetViewShape", lambda t: list(t.view_dims))


def aclGetStorageShape(tensor):
    """The storage (physical) shape of a tensor, as a new list of ints.

    C (api.md §2)::

        aclnnStatus aclGetStorageShape(const aclTensor* tensor, int64_t** storageDims,
                                       uint64_t* storageDimsNum);

    Python (pyACL convention, api.md §5): ``storage_dims, ret = aclGetStorageShape(tensor)``.

    Returns:
        ``(storage_dims, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``tensor`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclTensor [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(tensor, aclTensor, "tensor", "aclGetStorageShape",
                   lambda t: list(t.storage_dims))


def aclGetViewStrides(tensor):
    """The view strides of a tensor in elements, as a new list of ints.

    C (api.md §2)::

        aclnnStatus aclGetViewStrides(const aclTensor* tensor, int64_t** stridesValue,
                                      uint64_t* stridesNum);

    Python (pyACL convention, api.md §5): ``strides, ret = aclGetViewStrides(tensor)``.

    Returns:
        ``(strides, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``tensor`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclTensor [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(tensor, aclTensor, "tensor", "aclGetViewStrides", lambda t: list(t.strides))


def aclGetViewOffset(tensor):
    """The view offset of a tensor from its storage base, in elements.

    C (api.md §2)::

        aclnnStatus aclGetViewOffset(const aclTensor* tensor, int64_t* offset);

    Python (pyACL convention, api.md §5): ``offset, ret = aclGetViewOffset(tensor)``.

    Returns:
        ``(offset, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``tensor`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclTensor [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(tensor, aclTensor, "tensor", "aclGetViewOffset", lambda t: t.offset)


def aclGetFormat(tensor):
    """The :class:`aclFormat` of a tensor.

    C (api.md §2)::

        aclnnStatus aclGetFormat(const aclTensor* tensor, aclFormat* format);

    Python (pyACL convention, api.md §5): ``format, ret = aclGetFormat(tensor)``.

    Returns:
        ``(format, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``tensor`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclTensor [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(tensor, aclTensor, "tensor", "aclGetFormat", lambda t: t.format)


def aclGetDataType(tensor):
    """The :class:`aclDataType` of a tensor.

    C (api.md §2)::

        aclnnStatus aclGetDataType(const aclTensor* tensor, aclDataType* dataType);

    Python (pyACL convention, api.md §5): ``data_type, ret = aclGetDataType(tensor)``.

    Returns:
        ``(data_type, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``tensor`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclTensor [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(tensor, aclTensor, "tensor", "aclGetDataType", lambda t: t.data_type)


def aclGetIntArraySize(array):
    """The element count of an aclIntArray.

    C (api.md §2)::

        aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size);

    Python (pyACL convention, api.md §5): ``size, ret = aclGetIntArraySize(array)``.

    Returns:
        ``(size, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``array`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclIntArray [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(array, aclIntArray, "array", "aclGetIntArraySize", len)


def aclGetFloatArraySize(array):
    """The element count of an aclFloatArray.

    C (api.md §2)::

        aclnnStatus aclGetFloatArraySize(const aclFloatArray* array, uint64_t* size);

    Python (pyACL convention, api.md §5): ``size, ret = aclGetFloatArraySize(array)``.

    Returns:
        ``(size, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``array`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclFloatArray [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(array, aclFloatArray, "array", "aclGetFloatArraySize", len)


def aclGetBoolArraySize(array):
    """The element count of an aclBoolArray.

    C (api.md §2)::

        aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size);

    Python (pyACL convention, api.md §5): ``size, ret = aclGetBoolArraySize(array)``.

    Returns:
        ``(size, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``array`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclBoolArray [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(array, aclBoolArray, "array", "aclGetBoolArraySize", len)


def aclGetTensorListSize(tensorList):
    """The element count of an aclTensorList.

    C (api.md §2)::

        aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size);

    Python (pyACL convention, api.md §5): ``size, ret = aclGetTensorListSize(tensorList)``.

    Returns:
        ``(size, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``tensorList`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclTensorList [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(tensorList, aclTensorList, "tensorList", "aclGetTensorListSize", len)


def aclGetScalarListSize(scalarList):
    """The element count of an aclScalarList.

    C (api.md §2)::

        aclnnStatus aclGetScalarListSize(const aclScalarList* scalarList, uint64_t* size);

    Python (pyACL convention, api.md §5): ``size, ret = aclGetScalarListSize(scalarList)``.

    Returns:
        ``(size, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``scalarList`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclScalarList [R: simulator check; use after destroy is undefined in C].
    """
    return _getter(scalarList, aclScalarList, "scalarList", "aclGetScalarListSize", len)


def aclSetRawTensorAddr(tensor, addr) -> int:
    """Set the device address of a tensor's storage (``tensor.tensor_data``).

    C (api.md §2)::

        aclnnStatus aclSetRawTensorAddr(aclTensor* tensor, void* addr);

    ``addr``: device address (``int``), or ``None`` / 0 for null (CANN does
    not check ``addr``). The view offset is unchanged.

    Returns:
        ``ACLNN_SUCCESS`` (0); ``ACLNN_ERR_PARAM_NULLPTR`` (161001) when
        ``tensor`` is ``None``, as in CANN; ``ACLNN_ERR_PARAM_INVALID``
        (161002) when ``tensor`` is not a live aclTensor or ``addr`` is not an
        address [R: simulator checks].
    """
    api = "aclSetRawTensorAddr"
    status = _check_object(tensor, aclTensor, "tensor", api)
    if status != ACLNN_SUCCESS:
        return status
    try:
        tensor.tensor_data = _address(addr, "addr", api)
    except _ParamError as err:
        return report_error(err.code, err.message)
    return ACLNN_SUCCESS


def aclGetRawTensorAddr(tensor):
    """The device address of a tensor's storage (``tensor.tensor_data``).

    C (api.md §2)::

        aclnnStatus aclGetRawTensorAddr(const aclTensor* tensor, void** addr);

    Python: ``addr, ret = aclGetRawTensorAddr(tensor)``; ``addr`` is an
    ``int`` (0 = null) -- the storage base, not offset by the view (see
    :meth:`aclTensor.data_address` for that).

    Returns:
        ``(addr, ACLNN_SUCCESS)``; ``(None, ACLNN_ERR_PARAM_NULLPTR)``
        (161001) when ``tensor`` is ``None``, as in CANN;
        ``(None, ACLNN_ERR_PARAM_INVALID)`` (161002) when it is not a live
        aclTensor [R].
    """
    return _getter(tensor, aclTensor, "tensor", "aclGetRawTensorAddr", lambda t: t.tensor_data)
