"""graph_ns's indexing functions (what derivative rules call as ``xp.getitem`` and friends under ``create_graph``
and in forward mode) read a tensor inside an index as public indexing does: a one-element integer tensor is an
index array (its dim kept), not an int."""
import numpy as np
import pytest

import ember
from ember.autograd._primitive import graph_ns

T = ember.tensor


def _x():
    return ember.arange(12.0).reshape(3, 2, 2).requires_grad_()


@pytest.mark.parametrize("index", [
    (T([1]),),
    T([1]),
    (T(1),),
    (T([2, 0]),),
    (slice(None), T([True, False])),
    (T([[0], [2]]), slice(None), T([1])),
    (T([1], dtype=ember.int32),),
], ids=repr)
def test_graph_getitem_matches_public_indexing(index):
    x = _x()
    r, expected = graph_ns.getitem(x, index), x[index]
    assert r.shape == expected.shape
    np.testing.assert_array_equal(r.detach().numpy(), expected.detach().numpy())
    g, = ember.autograd.grad(r.sum(), x)
    ge, = ember.autograd.grad(expected.sum(), x)
    np.testing.assert_array_equal(g.numpy(), ge.numpy())


def test_graph_index_put_zeros_keeps_the_dim():
    r = graph_ns.index_put_zeros(ember.ones(1, 2, 2), (T([1]),), (3, 2, 2))
    assert r.shape == (3, 2, 2)
    np.testing.assert_array_equal(r.sum((1, 2)).numpy(), [0.0, 4.0, 0.0])


def test_graph_index_put_add_and_fill_index():
    r = graph_ns.index_put_add(ember.zeros(3, 2), (T([1]),), ember.ones(1, 2))
    np.testing.assert_array_equal(r.numpy(), [[0, 0], [1, 1], [0, 0]])
    r = graph_ns.fill_index(ember.zeros(3, 2), (T([2]),), 5.0)
    np.testing.assert_array_equal(r.numpy(), [[0, 0], [0, 0], [5, 5]])
