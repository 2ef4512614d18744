"""The raw namespace (plain backward) and ember's graph namespace (create_graph) must mirror each other,
so that every derivative rule runs both ways."""
import ast
import inspect

import numpy as np

import ember
from ember.devices.cpu import namespace as _numpy_ns
from ember.devices.cpu import nn_rnn as _rnn_loops
from ember.devices.cpu import optim as _raw_only
from ember.ops import graph_names, graph_ns, raw_names

# Kernels no derivative rule calls (the optimizers' and nn.utils' in-place updates and LAPACK pieces, run on raw
# arrays only): the raw namespace has them, graph_ns needs no twin.
RAW_ONLY = set(_raw_only.__all__) | set(_rnn_loops.NAMESPACE_NAMES)   # (and the recurrent layers' time loops)


def test_both_namespaces_export_the_same_names():
    assert raw_names() - RAW_ONLY == graph_names()


def test_raw_only_kernels_are_in_the_raw_namespace_only():
    assert RAW_ONLY <= raw_names()
    assert not RAW_ONLY & graph_names()


def test_every_xp_attribute_used_by_a_rule_exists_in_both():
    import ember.ops as ops_pkg
    used = set()
    for mod in ops_pkg.FAMILIES + (ops_pkg._views,):
        for node in ast.walk(ast.parse(inspect.getsource(mod))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "xp":
                used.add(node.attr)
    assert used, "the op modules should reach array functions through xp"
    used.discard("backend")   # the device's data services (xp.backend.copyto, ...), outside the rules
    assert used <= raw_names(), used - raw_names()
    assert used <= graph_names(), used - graph_names()


def test_op_table_never_names_numpy_in_rules():
    # Rules get their array functions from xp, so a CuPy namespace can slot in for 'cuda'.
    import ember.ops as ops_pkg
    for mod in ops_pkg.FAMILIES + (ops_pkg._views,):
        for node in ast.walk(ast.parse(inspect.getsource(mod))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "defprim":
                for sub in ast.walk(node):
                    assert not (isinstance(sub, ast.Name) and sub.id == "np"), ast.unparse(node)[:80]


def test_graph_namespace_results_are_differentiable():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = graph_ns.sum_to(graph_ns.expand(x * 2, (2, 3)), (3,))
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 4.0, 4.0])


def test_raw_sum_to_undoes_broadcasting():
    g = np.ones((4, 2, 3))
    np.testing.assert_allclose(_numpy_ns.sum_to(g, (2, 1)), np.full((2, 1), 12.0))
    np.testing.assert_allclose(_numpy_ns.sum_to(g, ()), 24.0)
