"""Review findings on issue 8, each against PyTorch: the nested-tensor TransformerEncoder path, Lazy* modules
loading a state dict, rnn utils given lists, optimizers after a dtype change, full backward hooks, swa_utils."""
import warnings

import pytest

import ember

from parity import raises_same, same

torch = pytest.importorskip("torch")

_PADS = {
    "tail": [[0] * 5, [0] * 3 + [1] * 2],
    "tail_all_rows": [[0] * 3 + [1] * 2] * 2,
    "not_left_aligned": [[0] * 5, [1, 0, 0, 1, 0]],
    "row_all_padded": [[0] * 5, [1] * 5],
    "all_padded": [[1] * 5] * 2,
}


@pytest.mark.parametrize("pad", list(_PADS))
@pytest.mark.parametrize("mode", ["nested", "no_mask_check", "grad", "train", "norm", "float_mask", "layer"])
def test_encoder_nested_path_zeroes_padding(pad, mode):
    def fn(lib):
        nn = lib.nn
        lib.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
            enc = nn.TransformerEncoder(layer, 2, mask_check=mode != "no_mask_check",
                                        norm=nn.LayerNorm(8) if mode == "norm" else None)
        enc.train(mode == "train")
        if mode == "norm":
            with lib.no_grad():
                enc.norm.bias.fill_(0.25)
        x = lib.randn(2, 5, 8)
        m = lib.tensor([[bool(v) for v in r] for r in _PADS[pad]])
        if mode == "float_mask":
            m = lib.zeros(2, 5).masked_fill(m, float("-inf"))
        with lib.set_grad_enabled(mode == "grad"):
            if mode == "layer":  # the fused layer path keeps the values at padded positions
                return layer.eval()(x, src_key_padding_mask=m).detach()
            return enc(x, src_key_padding_mask=m).detach()
    same(fn, atol=1e-5)


def test_encoder_nested_path_frozen_weights_with_grad_enabled():
    def fn(lib):
        lib.manual_seed(0)
        enc = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1).eval()
        enc.requires_grad_(False)
        out = enc(lib.randn(2, 4, 8), src_key_padding_mask=lib.tensor([[False] * 4, [False, False, True, True]]))
        return out, out[1, 2:].abs().sum()
    same(fn, atol=1e-5)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("masks", ["padding", "attn", "both", "float_padding", "none"])
def test_fused_attention_paths_nan_fully_masked_rows(masks, grad):
    """PyTorch's fused kernels (MHA fast path, fused encoder layer) give NaN rows where every key is masked."""
    def fn(lib):
        lib.manual_seed(0)
        layer = lib.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True).eval()
        x = lib.randn(2, 5, 8)
        kpm = lib.tensor([[False] * 5, [True] * 5]) if masks in ("padding", "both", "float_padding") else None
        if masks == "float_padding":
            kpm = lib.zeros(2, 5).masked_fill(kpm, float("-inf"))
        am = None
        if masks in ("attn", "both"):
            am = lib.zeros(5, 5, dtype=lib.bool)
            am[1, :] = True
        with lib.set_grad_enabled(grad):
            a = layer(x, src_mask=am, src_key_padding_mask=kpm)
            hooked = layer.register_forward_hook(lambda *args: None)  # hooks keep PyTorch off the fused path
            b = layer(x, src_mask=am, src_key_padding_mask=kpm)
            hooked.remove()
            c = layer.self_attn(x, x, x, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0]
            d = layer.self_attn(x, x.clone(), x, key_padding_mask=kpm, attn_mask=am, need_weights=False)[0]
        return a.detach(), b.detach(), c.detach(), d.detach()
    same(fn, atol=1e-5)
