"""set_printoptions against torch 2.13: repr and str of every kind of tensor (float, double, half, bfloat16,
float8, integers, bool, complex, summarised, 0-dim, empty, meta, requires_grad / grad_fn suffixes, Parameter) under
each option and combinations of them, and with float64 as the default dtype. Every test restores the defaults."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


@pytest.fixture(autouse=True)
def _defaults():
    """Default print options and dtype before and after each test, in both libraries."""
    for lib in (torch, ember):
        lib.set_printoptions(profile="default")
    yield
    for lib in (torch, ember):
        lib.set_printoptions(profile="default")
        lib.set_default_dtype(lib.float32)


def _tensors(m):
    r = np.random.RandomState(0)
    a = r.randn(4, 5).astype(np.float32)
    yield m.tensor(a)
    yield m.tensor(a.astype(np.float64) * 1e5)
    yield m.tensor(a, dtype=m.float16)
    yield m.tensor(a, dtype=m.bfloat16)
    yield m.tensor(r.randn(6).astype(np.float32)).to(m.float8_e4m3fn)
    yield m.tensor(r.randint(-1000, 1000, (3, 7)))
    yield m.tensor(r.randint(-100, 100, (3, 7)), dtype=m.int8)
    yield m.tensor(r.randint(0, 255, (20, 70)), dtype=m.uint8)
    yield m.tensor(r.rand(3, 4) > 0.5)
    yield m.tensor(a[:2] + 1j * a[2:])
    yield m.tensor((a[:2] + 1j * a[2:]).astype(np.complex128) * 1e-5)
    yield m.tensor([1e-8 + 1e8j, 3 + 4j])
    yield m.arange(2000.).reshape(40, 50) / 7
    yield m.arange(3000).reshape(10, 15, 20)
    yield m.tensor(r.randn(3, 4, 5, 20).astype(np.float32))
    yield m.tensor((r.randn(30, 40) + 1j * r.randn(30, 40)).astype(np.complex64))
    yield m.tensor(r.rand(2000) > 0.5)
    yield m.tensor(r.randn(1, 1500).astype(np.float32))
    yield m.arange(100.) * 1.5
    yield m.tensor(3.14159265)
    yield m.tensor(7)
    yield m.tensor(True)
    yield m.tensor(1 + 2j)
    yield m.tensor([])
    yield m.zeros(0, 3)
    yield m.zeros(2, 0, dtype=m.int64)
    yield m.ones(3, 4, device="meta")
    yield m.tensor([float("nan"), float("inf"), -float("inf"), 0., -0., 1e-10, 1e10])
    yield m.tensor([1., 2., 300., -4.])
    yield m.tensor([1e-5, 2e-5])
    yield m.tensor([65504., -65504., 1e-7], dtype=m.float16)
    yield m.tensor([123456.789, -0.000123, 1.0])
    yield m.zeros(3)
    yield m.tensor([1.5, 2.5], requires_grad=True)
    yield m.tensor([1.5, 2.5], requires_grad=True) * 2
    yield (m.tensor([[1.5, 2.5]], requires_grad=True) * 2).sum()
    yield m.tensor([1.123456789, 2.0], dtype=m.float64, requires_grad=True).exp()
    yield m.tensor([1 + 1j, 2 - 1j], requires_grad=True) * 2
    yield m.nn.Parameter(m.tensor([[1.0, 2.0], [3.0, 4.0]]))


OPTIONS = [
    dict(precision=0), dict(precision=2), dict(precision=8), dict(threshold=0), dict(threshold=5),
    dict(threshold=float("inf")), dict(edgeitems=0), dict(edgeitems=1), dict(edgeitems=5), dict(linewidth=1),
    dict(linewidth=30), dict(linewidth=200), dict(profile="short"), dict(profile="full"), dict(profile="default"),
    dict(profile="unknown"), dict(sci_mode=True), dict(sci_mode=False), dict(sci_mode=None),
    dict(precision=2, sci_mode=True), dict(precision=6, sci_mode=False),
    dict(profile="short", precision=5, linewidth=30),
    dict(threshold=10, edgeitems=2, linewidth=50, sci_mode=True), dict(edgeitems=0, threshold=2),
    dict(profile="full", sci_mode=True), dict(threshold=1, edgeitems=1, precision=3),
]


def _check(opts):
    for lib in (torch, ember):
        lib.set_printoptions(**opts)
    for mine, theirs in zip(_tensors(ember), _tensors(torch), strict=True):
        assert repr(mine) == repr(theirs), (opts, repr(theirs))
        assert str(mine) == str(theirs), (opts, str(theirs))


@pytest.mark.parametrize("opts", OPTIONS, ids=[",".join(f"{k}={v}" for k, v in o.items()) for o in OPTIONS])
def test_print_options_as_torch(opts):
    _check(opts)


@pytest.mark.parametrize("opts", [dict(), dict(precision=2), dict(sci_mode=True), dict(linewidth=30, threshold=5)])
def test_print_options_with_float64_default(opts):
    for lib in (torch, ember):
        lib.set_default_dtype(lib.float64)
    _check(opts)


def test_options_accumulate_and_sci_mode_resets():
    """Each call keeps the options it does not name (a profile resets the four), except sci_mode: None unless
    given, as in PyTorch."""
    steps = [dict(precision=2), dict(sci_mode=True), dict(linewidth=40), dict(profile="short"), dict(edgeitems=1),
             dict(precision=6, sci_mode=False), dict(threshold=3)]
    for step in steps:
        for lib in (torch, ember):
            lib.set_printoptions(**step)
        for make in (lambda m: m.tensor([1.123456789, 1e-3, 250.5, 7.0]), lambda m: m.arange(12.).reshape(3, 4)):
            assert repr(make(ember)) == repr(make(torch)), step


def test_positional_arguments():
    for lib in (torch, ember):
        lib.set_printoptions(3, 5, 1, 60)
    assert repr(ember.arange(10.) / 3) == repr(torch.arange(10.) / 3)
