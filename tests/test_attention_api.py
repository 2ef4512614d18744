"""ember.nn.attention against torch.nn.attention on the CPU: SDPBackend, sdpa_kernel (the switches it sets,
what scaled_dot_product_attention does under it: computes, or PyTorch's warnings and error), SDPAParams and the
can_use_* checks, the flash-attention implementation registry."""
import logging
import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention as TA

import ember
import ember.nn.attention as EA

LIBS = ((torch, TA), (ember, EA))


def test_sdpbackend_enum():
    assert list(EA.SDPBackend.__members__) == list(TA.SDPBackend.__members__)
    for name, t in TA.SDPBackend.__members__.items():
        e = getattr(EA.SDPBackend, name)
        assert (repr(e), str(e), int(e), e.value, e.name) == (repr(t), str(t), int(t), t.value, t.name)
        assert (e == int(e)) == (t == int(t))
    assert EA.SDPBackend.__module__ == "ember.nn.attention" and TA.SDPBackend.__module__ == "torch.nn.attention"
    assert ember.backends.cuda.SDPBackend is EA.SDPBackend


def _switches(lib):
    c = lib.backends.cuda
    return (c.flash_sdp_enabled(), c.mem_efficient_sdp_enabled(), c.math_sdp_enabled(), c.cudnn_sdp_enabled())


SETS = [["MATH"], ["FLASH_ATTENTION"], ["EFFICIENT_ATTENTION"], ["CUDNN_ATTENTION"], ["OVERRIDEABLE"], ["ERROR"],
        [], ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"], ["EFFICIENT_ATTENTION", "MATH", "MATH"], "single"]


def _backends(A, names):
    return A.SDPBackend.FLASH_ATTENTION if names == "single" else [getattr(A.SDPBackend, n) for n in names]


def _run_sdpa(lib, names, make):
    """What scaled_dot_product_attention(make(lib)) does under sdpa_kernel(names): (output or error,
    warning texts, switches inside, switches after)."""
    A = TA if lib is torch else EA
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = None
        with A.sdpa_kernel(_backends(A, names)) as ctx:
            assert ctx == {}
            inside = _switches(lib)
            try:
                result = lib.nn.functional.scaled_dot_product_attention(*make(lib)).detach().numpy()
            except RuntimeError as e:
                result = str(e)
    texts = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    return result, texts, inside, _switches(lib)


def _qkv(shape_q=(2, 2, 4, 8), shape_k=None, shape_v=None, **kw):
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s or shape_q).astype(np.float32) for s in (shape_q, shape_k, shape_v)]

    def make(lib):
        q, k, v = (lib.from_numpy(a.copy()) for a in arrs)
        extra = []
        if "transpose" in kw:
            q, k, v = (t.transpose(-1, -2) for t in (q, k, v))
        if "mask" in kw:
            extra = [lib.from_numpy(kw["mask"])]
        if "dropout" in kw:
            extra = [None, kw["dropout"]]
        return (q, k, v, *extra)
    return make


INPUTS = {
    "plain": _qkv(),
    "dropout": _qkv(dropout=0.5),
    "3d": _qkv((2, 4, 8)),
    "head_dim": _qkv(shape_v=(2, 2, 4, 6)),
    "num_heads": _qkv(shape_k=(2, 1, 4, 8), shape_v=(2, 1, 4, 8)),
    "batch": _qkv(shape_k=(1, 2, 4, 8), shape_v=(1, 2, 4, 8)),
    "stride": _qkv(transpose=True),
    "bool_mask": _qkv(mask=np.tril(np.ones((4, 4), bool))),
    "mask_3d": _qkv(mask=np.zeros((2, 4, 4), np.float32)),
    "float64": lambda lib: [t.double() for t in _qkv()(lib)],
}


@pytest.mark.parametrize("names", range(len(SETS)), ids=[str(s) for s in SETS])
@pytest.mark.parametrize("inputs", sorted(INPUTS))
def test_sdpa_under_sdpa_kernel(names, inputs):
    before = _switches(ember)
    (tr, tw, tin, tafter), (er, ew, ein, eafter) = (_run_sdpa(lib, SETS[names], INPUTS[inputs]) for lib, _ in LIBS)
    assert ein == tin and eafter == tafter == before
    assert type(er) is type(tr)
    if isinstance(tr, str):
        assert er == tr
    elif inputs != "dropout":
        # ember computes with its math kernel; torch's CPU flash kernel (its default choice) rounds differently
        np.testing.assert_allclose(er, tr, rtol=1e-5, atol=1e-6)
    assert ew == tw


def test_set_priority_and_nesting():
    for lib, A in LIBS:
        B = A.SDPBackend
        before = A._cur_sdpa_kernel_backends(with_priority=True) if lib is torch else \
            A._enabled_backends(with_priority=True)
        assert [int(b) for b in before] == [1, 2, 0, 3, 4]
    for lib, A in LIBS:
        B = A.SDPBackend
        with A.sdpa_kernel([B.MATH, B.FLASH_ATTENTION], set_priority=True):
            order = list(torch._C._get_sdp_priority_order()) if lib is torch else list(ember.backends.cuda._sdp_priority)
            assert order == [0, 1, 2, 3, 4]
            with A.sdpa_kernel(B.EFFICIENT_ATTENTION):
                assert _switches(lib) == (False, True, False, False)
            assert _switches(lib) == (True, False, True, False)
        order = list(torch._C._get_sdp_priority_order()) if lib is torch else list(ember.backends.cuda._sdp_priority)
        assert order == [1, 2, 0, 3, 4]


@pytest.mark.parametrize("bad", ["math", (0,), None, 0])
def test_sdpa_kernel_bad_argument(bad):
    msgs = []
    for lib, A in LIBS:
        with pytest.raises(AssertionError) as info:
            with A.sdpa_kernel(bad):
                pass
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_switches_restored_after_error():
    for lib, A in LIBS:
        with pytest.raises(ValueError):
            with A.sdpa_kernel(A.SDPBackend.MATH):
                raise ValueError
        assert _switches(lib) == (True, True, True, True)


def test_sdpa_params_and_can_use():
    for lib, A in LIBS:
        q = lib.randn(1, 2, 3, 4)
        p = A.SDPAParams(q, q, q, None, 0.0, True, False)
        assert p.query is q and p.attn_mask is None and p.dropout == 0.0 and p.is_causal and not p.enable_gqa
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert A.can_use_flash_attention(p) is False and A.can_use_flash_attention(p, True) is False
            assert A.can_use_efficient_attention(p) is False and A.can_use_efficient_attention(p, True) is False
            assert lib.backends.cuda.can_use_cudnn_attention(p, True) is False
        assert caught == []


def test_flash_attention_registry(caplog):
    for lib, A in LIBS:
        assert A.list_flash_attention_impls() == ["FA3", "FA4"] and A.current_flash_attention_impl() is None
        with pytest.raises(ModuleNotFoundError, match="flash_attn_interface"):
            A.activate_flash_attention_impl("FA3")
        with pytest.raises(ValueError) as info:
            A.activate_flash_attention_impl("nope")
        assert str(info.value) == "Unknown flash attention impl 'nope'. Available implementations: ['FA3', 'FA4']"
        removed = []

        class Handle:
            def remove(self):
                removed.append(1)
        try:
            A.register_flash_attention_impl("mine", register_fn=Handle)
            A.activate_flash_attention_impl("mine")
            assert A.current_flash_attention_impl() == "mine"
            A.restore_flash_attention_impl()
            assert removed == [1] and A.current_flash_attention_impl() is None
            with caplog.at_level(logging.WARNING):
                caplog.clear()
                A.restore_flash_attention_impl()
            if lib is ember:   # (torch's logger writes to its own handler, not to the root logger)
                assert [r.getMessage() for r in caplog.records] == [
                    "Trying to restore default FA2 impl when no custom impl was activated"]
        finally:
            (torch.nn.attention._registry._FLASH_ATTENTION_IMPLS if lib is torch
             else EA._FLASH_ATTENTION_IMPLS).pop("mine", None)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "bool", "int8", "int16"])
@pytest.mark.parametrize("shape", [(2, 2), (2, 2, 2), (1, 1, 2, 2)])
def test_integer_inputs_as_torch(dtype, shape):
    """PyTorch's math path refuses integer inputs at its first float product (mm's or bmm's message)."""
    msgs = []
    for lib, _ in LIBS:
        q = lib.ones(*shape, dtype=getattr(lib, dtype))
        with pytest.raises(RuntimeError) as info:
            lib.nn.functional.scaled_dot_product_attention(q, q, q)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
