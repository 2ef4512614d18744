"""ember.accelerator against torch.accelerator in PyTorch's CPU-only build: the same answers and errors."""
import warnings

import pytest
import torch

import ember

CALLS = ["is_available()", "device_count()", "current_accelerator()", "current_accelerator(check_available=True)",
         "current_device_index()", "current_device_idx()", "set_device_index(0)", "set_device_idx(0)",
         "get_device_capability()", "get_device_capability('cpu')", "current_stream()", "synchronize()",
         "get_memory_info()", "memory_allocated()", "max_memory_allocated()", "memory_reserved()",
         "max_memory_reserved()", "memory_stats()", "reset_accumulated_memory_stats()", "reset_peak_memory_stats()",
         "empty_cache()", "empty_host_cache()", "Graph()", "set_stream(None)"]


def _outcome(lib, call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("value", eval("lib.accelerator." + call))
        except RuntimeError as e:
            result = ("error", str(e))
    return result, [(w.category, str(w.message)) for w in caught]


@pytest.mark.parametrize("call", CALLS)
def test_as_torch(call):
    if call == "set_stream(None)":
        call = "set_stream(lib.Stream())" if hasattr(ember, "Stream") else "set_stream(None)"
    assert _outcome(ember, call) == _outcome(torch, call.replace("None", "torch.Stream()"))


def test_names_and_device_index():
    assert sorted(ember.accelerator.__all__) == sorted(torch.accelerator.__all__)
    for lib in (torch, ember):
        with lib.accelerator.device_index(None):
            pass
        with pytest.raises(RuntimeError, match="none is available"):
            with lib.accelerator.device_index(0):
                pass
    device = ember.accelerator.current_accelerator() if ember.accelerator.is_available() else ember.device("cpu")
    assert device == ember.device("cpu")
