"""ember.onnx.export: small models exported by ember, checked by onnx.checker, run in onnxruntime against ember's
forward (float32 tolerance, another batch size when axes are dynamic), and for a few models compared with the
file torch 2.13 exports (its TorchScript exporter: the default one needs onnxscript, not installed)."""
from __future__ import annotations

import io
import math
import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import torch  # noqa: E402

import ember  # noqa: E402
import ember.onnx  # noqa: E402

nn = ember.nn
F = ember.nn.functional


def _flat(obj) -> list:
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _flat(o)]
    return [] if obj is None else [obj]


def export(model, args, **kw) -> bytes:
    f = io.BytesIO()
    ember.onnx.export(model, args, f, **kw)
    data = f.getvalue()
    onnx.checker.check_model(onnx.load_from_string(data), full_check=True)
    return data


def run_ort(data: bytes, inputs: list) -> list:
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    return s.run(None, {n: t.numpy() for n, t in zip(names, inputs)})


def check(model, args, others=(), atol=1e-5, **kw) -> onnx.ModelProto:
    """Export on ``args``, then compare onnxruntime with ember's forward on ``args`` and on each of ``others``."""
    model.eval()
    data = export(model, args, **kw)
    for a in (args,) + tuple(others):
        a = a if isinstance(a, tuple) else (a,)
        with ember.no_grad():
            want = _flat(model(*a))
        got = run_ort(data, _flat(a))
        assert len(got) == len(want)
        for w, g in zip(want, got):
            assert tuple(w.shape) == g.shape
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=atol)
    return onnx.load_from_string(data)


def torch_export(model, args, **kw) -> onnx.ModelProto:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), args, f, dynamo=False, **kw)
    return onnx.load_from_string(f.getvalue())


def to_torch(model_e, model_t):
    model_t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model_e.state_dict().items()})
    return model_t.eval()


def names(m: onnx.ModelProto) -> tuple:
    return ([i.name for i in m.graph.input], [o.name for o in m.graph.output],
            sorted(i.name for i in m.graph.initializer))


# ----- models -------------------------------------------------------------------------------------------------

def test_mlp_matches_torch_file():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 3), nn.Tanh())
    kw = dict(input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}})
    mine = check(m, ember.randn(4, 6), [ember.randn(9, 6)], **kw)
    tm = to_torch(m, torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Dropout(0.5),
                                         torch.nn.Linear(8, 3), torch.nn.Tanh()))
    theirs = torch_export(tm, (torch.randn(4, 6),), **kw)
    assert names(mine) == names(theirs)
    assert [n.op_type for n in mine.graph.node] == [n.op_type for n in theirs.graph.node]   # Gemm, Relu, Gemm, Tanh
    assert mine.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    for v in (17, 20):   # the opset's IR version (17 -> 8), as PyTorch writes: older runtimes read the file
        a, b = check(m, ember.randn(4, 6), [], opset_version=v), torch_export(tm, (torch.randn(4, 6),), opset_version=v)
        assert a.ir_version == b.ir_version
    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    a = ort.InferenceSession(mine.SerializeToString()).run(None, {"x": x})[0]
    b = ort.InferenceSession(theirs.SerializeToString()).run(None, {"x": x})[0]
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def cnn(mod):
    class CNN(mod.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = mod.Conv2d(1, 4, 3, padding=1)
            self.bn1 = mod.BatchNorm2d(4)
            self.pool = mod.MaxPool2d(2)
            self.conv2 = mod.Conv2d(4, 6, 3, stride=2, bias=False)
            self.avg = mod.AvgPool2d(2, stride=1)
            self.fc = mod.Linear(6, 5)

        def forward(self, x):
            x = self.pool(mod_relu(self.bn1(self.conv1(x)), x))
            x = self.avg(self.conv2(x))
            return self.fc(x.flatten(1)).log_softmax(-1)
    return CNN()


def mod_relu(h, x):
    return h.relu_()   # an in-place op on the traced value


def test_cnn_conv_batchnorm_pool():
    ember.manual_seed(1)
    m = cnn(nn)
    m.bn1.running_mean.normal_()
    m.bn1.running_var.uniform_(0.5, 2.0)
    kw = dict(input_names=["image"], output_names=["logp"], dynamic_axes={"image": {0: "n"}})
    mine = check(m, ember.randn(2, 1, 10, 10), [ember.randn(5, 1, 10, 10)], **kw)
    theirs = torch_export(to_torch(m, cnn(torch.nn)), (torch.randn(2, 1, 10, 10),), **kw)
    assert names(mine)[:2] == names(theirs)[:2]
    # torch folds the eval BatchNorm into the convolution; the rest keep PyTorch's names
    assert {"conv2.weight", "fc.weight", "fc.bias"} <= set(names(mine)[2]) & set(names(theirs)[2])
    assert {"bn1.running_mean", "bn1.running_var", "conv1.weight"} <= set(names(mine)[2])
    assert mine.graph.output[0].type.tensor_type.shape.dim[0].dim_param == "n"
    feed = [ember.randn(3, 1, 10, 10)]
    np.testing.assert_allclose(run_ort(mine.SerializeToString(), feed)[0], run_ort(theirs.SerializeToString(), feed)[0],
                               rtol=1e-5, atol=1e-5)


def test_conv1d_groupnorm_gelu_pools():
    ember.manual_seed(2)
    m = nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.GELU(), nn.AvgPool1d(2),
                      nn.MaxPool1d(2), nn.LayerNorm(2), nn.SiLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten())
    check(m, ember.randn(2, 2, 8), [ember.randn(3, 2, 8)], input_names=["x"], dynamic_axes={"x": [0]})


def rnn_model(mod, F, *args):
    class RNNModel(mod.Module):
        """pytorch/examples' word_language_model RNNModel: encoder, recurrent layers, decoder."""

        def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5):
            super().__init__()
            self.drop = mod.Dropout(dropout)
            self.encoder = mod.Embedding(ntoken, ninp)
            if rnn_type in ("LSTM", "GRU"):
                self.rnn = getattr(mod, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
                self.rnn = mod.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
            self.decoder = mod.Linear(nhid, ntoken)
            self.ntoken = ntoken

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden
    return RNNModel(*args)


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU", "RNN_TANH"])
def test_word_language_model(rnn_type):
    ember.manual_seed(3)
    m = rnn_model(nn, F, rnn_type, 20, 8, 6, 2)

    def inputs(seq, batch):
        tokens = ember.randint(0, 20, (seq, batch))
        h = ember.randn(2, batch, 6)
        return (tokens, (h, ember.randn(2, batch, 6)) if rnn_type == "LSTM" else h)
    hidden_names = ["h0", "c0"] if rnn_type == "LSTM" else ["h0"]
    out_names = ["logp"] + (["hn", "cn"] if rnn_type == "LSTM" else ["hn"])
    dyn = {"tokens": {0: "seq", 1: "batch"}, "logp": {0: "seq_x_batch"}}
    dyn.update({n: {1: "batch"} for n in hidden_names + out_names[1:]})
    kw = dict(input_names=["tokens"] + hidden_names, output_names=out_names, dynamic_axes=dyn)
    mine = check(m, inputs(5, 3), [inputs(7, 2), inputs(1, 4)], **kw)
    assert rnn_type.split("_")[0] in {n.op_type for n in mine.graph.node}
    assert "encoder.weight" in names(mine)[2] and "decoder.weight" in names(mine)[2]
    if rnn_type == "LSTM":   # torch's file: the same names outside, the same numbers from onnxruntime
        tm = to_torch(m, rnn_model(torch.nn, torch.nn.functional, rnn_type, 20, 8, 6, 2))
        tin = inputs(4, 2)
        theirs = torch_export(tm, (torch.tensor(tin[0].numpy()), tuple(torch.tensor(h.numpy()) for h in tin[1])), **kw)
        assert names(mine)[:2] == names(theirs)[:2]
        # torch folds the gate reordering and the decoder's transpose into new constants (onnx::LSTM_*, MatMul_*)
        assert {"encoder.weight", "decoder.bias"} <= set(names(theirs)[2])
        feed = _flat(inputs(6, 5))
        for a, b in zip(run_ort(mine.SerializeToString(), feed), run_ort(theirs.SerializeToString(), feed)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_lstm_bidirectional_batch_first():
    ember.manual_seed(4)
    m = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    check(m, ember.randn(2, 5, 3), [ember.randn(3, 6, 3)], input_names=["x"],
          dynamic_axes={"x": {0: "batch", 1: "seq"}})


def test_unbatched_recurrent_layers():
    ember.manual_seed(13)
    check(nn.GRU(3, 4, num_layers=2, bidirectional=True), (ember.randn(5, 3), ember.randn(4, 4)))
    check(nn.LSTM(3, 4), ember.randn(6, 3))


def test_transformer_encoder_layer():
    ember.manual_seed(5)
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1)
    check(m, ember.randn(5, 2, 8), [ember.randn(5, 4, 8)], atol=1e-4, input_names=["src"],
          dynamic_axes={"src": {1: "batch"}})
    m2 = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True, norm_first=True, activation="gelu")
    check(m2, ember.randn(2, 5, 8), [ember.randn(3, 5, 8)], atol=1e-4, input_names=["src"],
          dynamic_axes={"src": {0: "batch"}})


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
def test_transformer_with_masks():
    ember.manual_seed(11)
    m = nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=16)
    tgt_mask = nn.Transformer.generate_square_subsequent_mask(4)
    check(m, (ember.randn(5, 2, 8), ember.randn(4, 2, 8), None, tgt_mask), [(ember.randn(5, 3, 8), ember.randn(4, 3, 8),
          None, tgt_mask)], atol=1e-4, input_names=["src", "tgt", "tgt_mask"],
          dynamic_axes={"src": {1: "b"}, "tgt": {1: "b"}})

    class Encoder(nn.Module):   # a key padding mask (bool) made into -inf additions by new_zeros/masked_fill
        def __init__(self):
            super().__init__()
            self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 2,
                                             enable_nested_tensor=False)

        def forward(self, x, pad):
            return self.enc(x, src_key_padding_mask=pad)
    pad = ember.tensor([[False, False, True], [False, False, False]])
    pad3 = ember.tensor([[False, False, True], [False, False, False], [False, True, True]])
    check(Encoder(), (ember.randn(2, 3, 8), pad), [(ember.randn(3, 3, 8), pad3)], atol=1e-4, input_names=["x", "pad"],
          dynamic_axes={"x": {0: "b"}, "pad": {0: "b"}})


def test_more_layers():
    ember.manual_seed(12)
    m = nn.Sequential(nn.Conv1d(2, 4, 3, padding="same", dilation=2), nn.BatchNorm1d(4), nn.PReLU(),
                      nn.InstanceNorm1d(4, affine=True), nn.Upsample(scale_factor=2), nn.ConvTranspose1d(4, 2, 3, stride=2),
                      nn.Upsample(scale_factor=2, mode="linear"), nn.ReplicationPad1d(2), nn.Hardtanh(), nn.Softplus(2.0))
    check(m, ember.randn(2, 2, 8), [ember.randn(3, 2, 8)], atol=1e-4, input_names=["x"], dynamic_axes={"x": {0: "b"}})
    m2 = nn.Sequential(nn.Conv2d(3, 4, 3, groups=1, padding=(1, 2)), nn.ReLU6(), nn.Conv2d(4, 4, 3, groups=2),
                       nn.AdaptiveAvgPool2d((2, 2)), nn.Upsample(scale_factor=2, mode="bilinear"), nn.AdaptiveMaxPool2d(1),
                       nn.Flatten(), nn.Linear(4, 2), nn.LogSigmoid())
    check(m2, ember.randn(2, 3, 8, 8), [ember.randn(1, 3, 8, 8)], atol=1e-4, input_names=["x"],
          dynamic_axes={"x": {0: "b"}})


class EmbedAttend(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(12, 8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.q = nn.Linear(8, 8)

    def forward(self, tokens):
        h = self.emb(tokens)
        a, _ = self.attn(h, h, h)
        q = self.q(h).view(h.size(0), -1, 2, 4).transpose(1, 2)
        s = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        return a + s.transpose(1, 2).reshape(h.size(0), -1, 8)


def test_embedding_and_attention():
    ember.manual_seed(6)
    t = ember.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    check(EmbedAttend(), t, [ember.tensor([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 0]])],
          input_names=["tokens"], dynamic_axes={"tokens": {0: "batch"}})


class Elementwise(nn.Module):
    def forward(self, x, y):
        a = x.exp() + x.sin() * x.cos() - x.abs().sqrt() / (1 + x.pow(2)) + ember.tanh(x).sigmoid()
        b = ember.clamp(x, -0.5, 0.5) + ember.where(x > 0, x, -x) + x.floor() + x.ceil() + x.round()
        c = F.gelu(x) + F.silu(x) + F.softmax(x, -1) + F.log_softmax(x, 1) + F.leaky_relu(x, 0.1) + F.elu(x)
        d = F.softplus(x) + F.hardtanh(x) + F.relu6(x) + F.hardsigmoid(x) + F.hardswish(x) + F.mish(x)
        e = ember.maximum(x, y) - ember.minimum(x, y) + (x * 2 - 3) / 4 + x.abs().rsqrt() + x.neg() + x.sign()
        f = ember.erf(x) + x.masked_fill(x < 0, 0.5) + (x >= y).float() + (x != y).to(ember.float32) + x.log1p().abs()
        g = 2 - x + 1 / (x.abs() + 1) + x.reciprocal().clamp(min=-3) + ember.remainder(x, 0.7) + x ** 3
        return a + b + c + d + e + f + g, (x == y) | (x < 0), x.argmax(1), ember.logical_not(x > 1)


def test_elementwise_zoo():
    ember.manual_seed(7)
    x, y = ember.randn(3, 6), ember.randn(3, 6)
    check(Elementwise(), (x, y), [(ember.randn(5, 6), ember.randn(5, 6))], atol=1e-5,
          input_names=["x", "y"], dynamic_axes={"x": {0: "b"}, "y": {0: "b"}})


class Reductions(nn.Module):
    def forward(self, x):
        f = x.sum(1, keepdim=True) + x.mean(-1, keepdim=True) + x.amax(1, keepdim=True)
        f = f + x.max(1, keepdim=True)[0] + x.var(1, keepdim=True) + x.std(1, keepdim=True)
        f = f + x.prod(1, keepdim=True) + x.norm(dim=1, keepdim=True) + x.logsumexp(1, keepdim=True)
        return f, x.sum(), x.mean(0), x.cumsum(1), x.min(), x.amin(0)


def test_reduction_zoo():
    ember.manual_seed(8)
    check(Reductions(), ember.randn(3, 5), atol=1e-5)


def test_reductions_over_a_dynamic_axis():
    class M(nn.Module):
        def forward(self, x):
            return x.var(0), x.std(0, keepdim=True), x[-1], x.select(0, -2), x.unbind(1)[-1], x.mean(0), x.max(0)
    check(M(), ember.randn(4, 3), [ember.randn(7, 3)], input_names=["x"], dynamic_axes={"x": {0: "n"}})


def test_setitem_in_forward():
    class M(nn.Module):
        def forward(self, x, v):
            y = x * 2
            y[:, 1] = 0.5
            y[0, 2:4] = v[0, :2]
            y[..., -1] = v[:, 0]
            z = x.clone()
            z[1] = y[0]
            return y, z + 1
    check(M(), (ember.randn(3, 5), ember.randn(3, 5)), [(ember.randn(3, 5), ember.randn(3, 5))])


class Shapes(nn.Module):
    def forward(self, x):
        n = x.size(0)
        g = x.view(n, 3, -1).permute(2, 0, 1).transpose(0, 1).reshape(n, -1)
        h = ember.cat([x, x * 2], 1) + ember.stack([x, x], 0).sum(0).repeat(1, 2)
        i = x[:, 1:3] + x[0, 2:4] + x.unsqueeze(0).squeeze(0)[:, None, :].expand(n, 3, 6)[:, 0, 1:3]
        j = x @ x.t() + ember.matmul(x, x.transpose(0, 1)) + ember.bmm(x.unsqueeze(0), x.t().unsqueeze(0))[0]
        k = x.chunk(2, 1)[0] + x.split(3, 1)[1] + x.flip(1)[:, :3] + x[:, -3:] + x.narrow(1, 2, 3)
        l = F.pad(x, (1, 2)) + x.flatten().view(n, 6).contiguous().clone().tril()[:, [0]]
        return g, h, i, j, k, l, ember.unbind(x, 1)[2], x[..., ::2], x.unflatten(1, (2, 3)).movedim(1, 2)


def test_shape_zoo():
    ember.manual_seed(9)
    check(Shapes(), ember.randn(4, 6), [ember.randn(2, 6)], input_names=["x"], dynamic_axes={"x": {0: "n"}})


# nanoGPT's model (karpathy/nanoGPT model.py), small: sizes read with x.size(), a causal-mask buffer sliced to T,
# positions from arange(0, t), weight tying, the flash path through scaled_dot_product_attention

class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd=16, n_head=2, block_size=8, flash=False):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd); self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(0.1); self.resid_dropout = nn.Dropout(0.1)
        self.n_head = n_head; self.n_embd = n_embd; self.flash=flash
        self.register_buffer("bias", ember.tril(ember.ones(block_size, block_size)).view(1, 1, block_size, block_size))
    def forward(self, x):
        B, T, C = x.size()
        q, k, v  = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:,:,:T,:T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))
class Block(nn.Module):
    def __init__(self, flash):
        super().__init__()
        self.ln_1 = nn.LayerNorm(16); self.attn = CausalSelfAttention(flash=flash); self.ln_2 = nn.LayerNorm(16)
        self.mlp = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16), nn.Dropout(0.1))
    def forward(self, x):
        x = x + self.attn(self.ln_1(x)); return x + self.mlp(self.ln_2(x))
class GPT(nn.Module):
    def __init__(self, flash=False):
        super().__init__()
        self.wte = nn.Embedding(50, 16); self.wpe = nn.Embedding(8, 16); self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([Block(flash) for _ in range(2)]); self.ln_f = nn.LayerNorm(16)
        self.lm_head = nn.Linear(16, 50, bias=False); self.wte.weight = self.lm_head.weight
    def forward(self, idx):
        b, t = idx.size()
        pos = ember.arange(0, t, dtype=ember.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h: x = block(x)
        x = self.ln_f(x)
        return self.lm_head(x[:, [-1], :])


@pytest.mark.parametrize("flash", [False, True])
def test_nanogpt(flash):
    ember.manual_seed(10)
    mine = check(GPT(flash), ember.randint(0, 50, (2, 5)), [ember.randint(0, 50, (3, 7)), ember.randint(0, 50, (1, 1))],
                 atol=1e-4, input_names=["idx"], dynamic_axes={"idx": {0: "b", 1: "t"}})
    inits = names(mine)[2]
    assert "wte.weight" in inits and "wpe.weight" in inits and "lm_head.weight" not in inits   # tied: one name
    assert "Range" in {n.op_type for n in mine.graph.node}


# ----- what the API does besides ---------------------------------------------------------------------------------

def test_returns_program_or_none_and_saves(tmp_path):
    m = nn.Linear(3, 2)
    x = ember.randn(2, 3)
    prog = ember.onnx.export(m, (x,))
    assert isinstance(prog, ember.onnx.ONNXProgram)
    assert isinstance(prog.model_proto, onnx.ModelProto)
    assert [i.name for i in prog.model_proto.graph.input] == ["input"]   # forward's argument name
    prog.save(tmp_path / "m.onnx")
    loaded = onnx.load(str(tmp_path / "m.onnx"))
    assert sorted(i.name for i in loaded.graph.initializer) == ["bias", "weight"]
    np.testing.assert_allclose(prog(x)[0].numpy(), m(x).detach().numpy(), rtol=1e-6)
    assert ember.onnx.export(m, (x,), str(tmp_path / "n.onnx"), dynamo=False) is None
    assert onnx.load(str(tmp_path / "n.onnx")).graph.node[0].op_type == "Gemm"
    unparam = onnx.load_from_string(export(m, (x,), export_params=False))
    assert not unparam.graph.initializer and [i.name for i in unparam.graph.input] == ["input", "weight", "bias"]


def test_exportable_module_and_dynamic_shapes():
    class M(ember.onnx.ExportableModule):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x).relu()

        def example_arguments(self):
            return (ember.randn(2, 3),), None

        def input_names(self):
            return ("features",)

        def dynamic_shapes(self):
            return {"x": {0: "batch"}}
    m = M()
    prog = m.to_onnx()
    proto = prog.model_proto
    assert [i.name for i in proto.graph.input] == ["features"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    x = ember.randn(5, 3)
    np.testing.assert_allclose(prog(x)[0].numpy(), m(x).detach().numpy(), rtol=1e-6)
    with pytest.raises(TypeError):
        ember.onnx.ExportableModule()   # abstract: example_arguments
    plain = nn.Linear(3, 2)
    proto = ember.onnx.export(plain, (ember.randn(2, 3),), dynamic_shapes=({0: "n"},)).model_proto
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "n"


def test_is_in_onnx_export_and_modes():
    seen = []

    class M(nn.Module):
        def forward(self, x):
            seen.append((ember.onnx.is_in_onnx_export(), self.training))
            return x * 2
    m = M()
    m.train()
    export(m, (ember.randn(2),))
    assert seen and all(s == (True, False) for s in seen) and m.training
    assert not ember.onnx.is_in_onnx_export()
    with ember.onnx.select_model_mode_for_export(m, ember.onnx.TrainingMode.EVAL):
        assert not m.training
    assert m.training
    with pytest.raises(TypeError, match="'mode' should be a torch.onnx.TrainingMode enum"):
        with ember.onnx.select_model_mode_for_export(m, 0):
            pass


def test_enums_match_torch():
    for name in ("TrainingMode", "OperatorExportTypes", "TensorProtoDataType"):
        theirs = {k: int(v) for k, v in getattr(torch.onnx, name).__members__.items()}
        assert {k: int(v) for k, v in getattr(ember.onnx, name).__members__.items()} == theirs
    J, TJ = ember.onnx.JitScalarType, torch.onnx.JitScalarType
    assert {k: int(v) for k, v in J.__members__.items()} == {k: int(v) for k, v in TJ.__members__.items()}
    for dt in ("float32", "float64", "int64", "bool", "float16", "bfloat16", "uint8"):
        j, tj = J.from_dtype(getattr(ember, dt)), TJ.from_dtype(getattr(torch, dt))
        assert (int(j), j.scalar_name(), j.torch_name(), int(j.onnx_type())) == \
            (int(tj), tj.scalar_name(), tj.torch_name(), int(tj.onnx_type()))
        assert j.dtype() is getattr(ember, dt)
    assert J.from_value(ember.ones(2)) == J.FLOAT
    assert issubclass(ember.onnx.OnnxExporterError, RuntimeError)


def test_unsupported_op_names_it():
    class M(nn.Module):
        def forward(self, x):
            return ember.special.digamma(x) + 1
    with pytest.raises(ember.onnx.errors.UnsupportedOperatorError,
                       match="Exporting the operator 'aten::digamma' to ONNX opset version 18 is not supported"):
        ember.onnx.export(M(), (ember.rand(3) + 1,), io.BytesIO())
    with pytest.raises(ember.onnx.OnnxExporterError, match="opset versions 17 to 21"):
        ember.onnx.export(nn.Linear(2, 2), (ember.randn(1, 2),), io.BytesIO(), opset_version=9)


def test_a_failing_forward_leaves_nothing_patched():
    before = (ember.Tensor.__eq__, ember.Tensor.max, ember.arange, F.embedding, nn.LSTM.forward)
    from ember.autograd import _primitive
    result = _primitive._result

    class M(nn.Module):
        def forward(self, x):
            raise ValueError("boom")
    with pytest.raises(ValueError, match="boom"):
        ember.onnx.export(M(), (ember.randn(2),), io.BytesIO())
    assert (ember.Tensor.__eq__, ember.Tensor.max, ember.arange, F.embedding, nn.LSTM.forward) == before
    assert _primitive._result is result and not ember.onnx.is_in_onnx_export()


def test_training_mode_is_refused():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2), nn.Dropout(0.5))
    for kw in ({"training": ember.onnx.TrainingMode.TRAINING}, {"training": ember.onnx.TrainingMode.PRESERVE}):
        m.train()
        with pytest.raises(ember.onnx.OnnxExporterError, match="writes inference graphs"):
            ember.onnx.export(m, (ember.randn(3, 2),), io.BytesIO(), **kw)
        assert m.training and int(m[1].num_batches_tracked) == 0   # mode restored, nothing ran
    m.eval()
    export(m, (ember.randn(3, 2),), training=ember.onnx.TrainingMode.PRESERVE)


def test_constant_made_from_input_sizes_is_an_error():
    class M(nn.Module):
        def forward(self, x):
            return x + ember.ones(x.size(0)).cumsum(0)   # a constant of the traced size
    export(M(), (ember.randn(3),))   # fixed sizes: fine
    with pytest.raises(ember.onnx.OnnxExporterError, match="made inside forward from the input's values or sizes"):
        ember.onnx.export(M(), (ember.randn(3),), io.BytesIO(), input_names=["x"], dynamic_axes={"x": [0]})
