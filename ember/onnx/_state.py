"""Whether an export is running (``torch.onnx.is_in_onnx_export``); its own module so that ``import ember`` loads
nothing else of the exporter."""
exporting = [False]


def is_in_onnx_export() -> bool:
    """Returns whether it is in the middle of ONNX export."""
    return exporting[0]
