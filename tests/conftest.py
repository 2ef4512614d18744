"""Test-run configuration: the slow tiers carry the ``slow`` marker (registered in pyproject.toml).

The default run (`python -m pytest -q -n 2`, what CI runs) is the whole suite, slow tiers included;
``python -m pytest -q -m "not slow"`` leaves them out for a quick loop while editing (46,000 of the 60,000
tests, under a third of the time). ``EMBER_SLOW=1`` widens several of these tiers to exhaustive sweeps (every
sample, every seed).
"""
from __future__ import annotations

import pytest

# "file::test function" -> why it is slow. Together 72% of the default run's time (pytest --durations,
# 2026-11-28: 759 of 1060 s of test time, on a shared, loaded machine).
SLOW_TIERS = {
    "test_ops.py::test_gradcheck": "the op database: first derivatives by central differences, every sample",
    "test_ops.py::test_gradgrad_numeric": "the op database: second derivatives by central differences of the VJP",
    "test_gradcheck.py::test_op_db_gradcheck": "gradcheck over every op of the op database",
    "test_gradcheck.py::test_op_db_gradgradcheck": "gradgradcheck over every op of the op database",
    "test_gradcheck.py::test_op_db_fwd_over_rev_matches_torch": "forward-over-reverse gradgradcheck, every op",
    "test_batched_grad.py::test_op_db_batched": "batched gradients against row by row, every op-database sample",
    "test_batched_grad.py::test_op_db_batched_through_a_gradient": "the same through a create_graph gradient",
    "test_seeds.py::test_seed_snippet": "each seed snippet in fresh processes, under ember and torch",
    "test_grad_warnings.py::test_warnings_as_torch": "each case in a fresh process, under ember and torch",
    "test_fp_warnings.py::test_no_numpy_warning_and_torch_values": "NumPy warnings as errors, against torch",
    "test_misuse.py::test_misuse": "3000+ bad calls under torch and ember",
    "test_libm.py::test_random_streams_with_avx2_dispatch": "a fresh process per NumPy SIMD dispatch",
    "test_libm.py::test_random_streams_with_glibc_plain_build": "a fresh process per NumPy SIMD dispatch",
    "test_libm.py::test_random_streams_with_native_dispatch": "a fresh process per NumPy SIMD dispatch",
    "test_engine.py::test_million_node_chain": "a graph of a million nodes",
    "test_checkpoint.py::test_intermediates_are_not_kept": "memory measured over long chains",
    "test_demo.py::*": "the demo's training runs, against torch",
    "test_programs.py::*": "nanoGPT and pytorch/examples programs in fresh processes, under ember and torch",
    "test_viz_browser.py::*": "a headless browser",
    "test_hypothesis_families.py::*": "hypothesis draws for every op family",
}


def _tier(item) -> str:
    return f"{item.path.name}::{getattr(item, 'originalname', item.name)}"


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if _tier(item) in SLOW_TIERS or f"{item.path.name}::*" in SLOW_TIERS:
            item.add_marker(pytest.mark.slow)
