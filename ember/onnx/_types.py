"""The exporter's enums: PyTorch's TrainingMode, OperatorExportTypes, TensorProtoDataType and JitScalarType."""
from __future__ import annotations

import enum

from . import errors


class TrainingMode(enum.IntEnum):
    """The mode the model is exported in (PyTorch's torch.onnx.TrainingMode)."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    """Which operators the TorchScript exporter could write (ember writes standard ONNX: ``ONNX``)."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TensorProtoDataType(enum.IntEnum):
    """ONNX's element types (onnx.TensorProto.DataType)."""
    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E4M3FNUZ = 18
    FLOAT8E5M2 = 19
    FLOAT8E5M2FNUZ = 20


# JitScalarType: PyTorch's scalar types in c10's order, with their dtype, names and ONNX type
_SCALARS = [  # (name, ember dtype name, scalar_name, torch_name, onnx type name)
    ("UINT8", "uint8", "Byte", "uint8_t", "UINT8"), ("INT8", "int8", "Char", "int8_t", "INT8"),
    ("INT16", "int16", "Short", "int16_t", "INT16"), ("INT", "int32", "Int", "int", "INT32"),
    ("INT64", "int64", "Long", "int64_t", "INT64"), ("HALF", "float16", "Half", "half", "FLOAT16"),
    ("FLOAT", "float32", "Float", "float", "FLOAT"), ("DOUBLE", "float64", "Double", "double", "DOUBLE"),
    ("COMPLEX32", "complex32", "ComplexHalf", "complex32", "UNDEFINED"),
    ("COMPLEX64", "complex64", "ComplexFloat", "complex64", "COMPLEX64"),
    ("COMPLEX128", "complex128", "ComplexDouble", "complex128", "COMPLEX128"), ("BOOL", "bool", "Bool", "bool", "BOOL"),
    ("QINT8", "qint8", "QInt8", "qint8", "INT8"), ("QUINT8", "quint8", "QUInt8", "quint8", "UINT8"),
    ("QINT32", "qint32", "QInt32", "qint32", "INT32"), ("BFLOAT16", "bfloat16", "BFloat16", "bfloat16", "BFLOAT16"),
    ("FLOAT8E5M2", "float8_e5m2", "Float8E5M2", "float8_e5m2", "FLOAT8E5M2"),
    ("FLOAT8E4M3FN", "float8_e4m3fn", "Float8E4M3FN", "float8_e4m3fn", "FLOAT8E4M3FN"),
    ("FLOAT8E5M2FNUZ", "float8_e5m2fnuz", "Float8E5M2FNUZ", "float8_e5m2fnuz", "FLOAT8E5M2FNUZ"),
    ("FLOAT8E4M3FNUZ", "float8_e4m3fnuz", "Float8E4M3FNUZ", "float8_e4m3fnuz", "FLOAT8E4M3FNUZ"),
    ("UNDEFINED", None, None, None, "UNDEFINED")]


class JitScalarType(enum.IntEnum):
    """Scalar types defined in torch; converts between dtypes, their names and ONNX's types."""
    UINT8 = 0
    INT8 = 1
    INT16 = 2
    INT = 3
    INT64 = 4
    HALF = 5
    FLOAT = 6
    DOUBLE = 7
    COMPLEX32 = 8
    COMPLEX64 = 9
    COMPLEX128 = 10
    BOOL = 11
    QINT8 = 12
    QUINT8 = 13
    QINT32 = 14
    BFLOAT16 = 15
    FLOAT8E5M2 = 16
    FLOAT8E4M3FN = 17
    FLOAT8E5M2FNUZ = 18
    FLOAT8E4M3FNUZ = 19
    UNDEFINED = 20

    @classmethod
    def from_dtype(cls, dtype) -> "JitScalarType":
        from .. import _dtype as D
        if not isinstance(dtype, D.dtype):
            raise errors.OnnxExporterError(f"dtype must be a torch.dtype, got {type(dtype)}")
        for name, dt, _, _, _ in _SCALARS:
            if dt is not None and getattr(D, dt, None) is dtype:
                return cls[name]
        raise errors.OnnxExporterError(f"Unknown dtype: {dtype}")

    @classmethod
    def from_value(cls, value, default=None) -> "JitScalarType":
        from .._tensor import Tensor
        if isinstance(value, Tensor):
            return cls.from_dtype(value.dtype)
        if default is not None:
            return default
        raise errors.OnnxExporterError(f"Cannot determine scalar type for this '{type(value)}' instance and a "
                                       "default value was not provided.")

    @classmethod
    def from_onnx_type(cls, onnx_type) -> "JitScalarType":
        t = TensorProtoDataType(int(onnx_type))
        for name, _, _, _, onnx_name in _SCALARS:
            if onnx_name == t.name:
                return cls[name]
        raise errors.OnnxExporterError(f"Unknown onnx_type: {onnx_type}")

    def scalar_name(self) -> str:
        if self == JitScalarType.UNDEFINED:
            raise errors.OnnxExporterError(f"Unknown scalar type: {self}")
        return _SCALARS[self.value][2]

    def torch_name(self) -> str:
        if self == JitScalarType.UNDEFINED:
            raise errors.OnnxExporterError(f"Unknown scalar type: {self}")
        return _SCALARS[self.value][3]

    def dtype(self):
        from .. import _dtype as D
        name = _SCALARS[self.value][1]
        dt = getattr(D, name, None) if name else None
        if dt is None:
            raise errors.OnnxExporterError(f"Unknown dtype for {self.name}")
        return dt

    def onnx_type(self) -> TensorProtoDataType:
        t = TensorProtoDataType[_SCALARS[self.value][4]]
        if t == TensorProtoDataType.UNDEFINED and self != JitScalarType.UNDEFINED:
            raise errors.OnnxExporterError(f"Scalar type {self.scalar_name()} cannot be converted to ONNX")
        return t

    def onnx_compatible(self) -> bool:
        return self.name not in ("UNDEFINED", "COMPLEX32", "QINT8", "QUINT8", "QINT32")
