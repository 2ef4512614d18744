"""torch.onnx.errors: the exporter's exceptions (PyTorch's classes and bases)."""
from __future__ import annotations

__all__ = ["OnnxExporterError", "OnnxExporterWarning", "SymbolicValueError", "UnsupportedOperatorError"]


class OnnxExporterWarning(UserWarning):
    """Warnings from the ONNX exporter."""


class OnnxExporterError(RuntimeError):
    """Errors raised by the ONNX exporter. This is the base class for all exporter errors."""


class UnsupportedOperatorError(OnnxExporterError):
    """Raised when an operator is unsupported by the exporter."""

    def __init__(self, name: str, version: int, supported_version: int | None = None) -> None:
        if supported_version is not None:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not supported. "
                   f"Support for this operator was added in version {supported_version}, try exporting with "
                   "this version.")
        else:
            msg = (f"Exporting the operator '{name}' to ONNX opset version {version} is not supported. "
                   "ember's exporter has no translation for it.")
        super().__init__(msg)


class SymbolicValueError(OnnxExporterError):
    """Errors around a value of the graph being exported (ember: which op and input)."""
