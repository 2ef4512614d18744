"""scaled_dot_product_attention under sdpa_kernel, a causal self-attention block, MultiheadAttention."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

torch.manual_seed(13)
q, k, v = (torch.randn(2, 4, 5, 8, dtype=torch.float64) for _ in range(3))
ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
with sdpa_kernel(SDPBackend.MATH):
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
print(torch.allclose(ref, out), out.shape, out[0, 0, :2])
with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
    m = torch.tril(torch.ones(5, 5, dtype=torch.bool))
    print(torch.allclose(F.scaled_dot_product_attention(q, k, v, attn_mask=m), ref))
print(SDPBackend.MATH, repr(SDPBackend.MATH), sorted(SDPBackend.__members__), SDPBackend.MATH.name, int(SDPBackend.MATH.value))
mha = nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64)
x = torch.randn(2, 5, 8, dtype=torch.float64)
y, w = mha(x, x, x, need_weights=True, attn_mask=torch.triu(torch.ones(5, 5, dtype=torch.bool), 1))
print(y.shape, w.shape, w[0, -1], y.sum())
y2, w2 = mha(x, x, x, need_weights=True, average_attn_weights=False)
print(w2.shape)
print(mha)
layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, dtype=torch.float64)
print(layer(x)[0, :2], layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64), is_causal=True)[1, -1])
print(nn.Transformer.generate_square_subsequent_mask(3))
try:
    F.scaled_dot_product_attention(q, k[..., :4], v)
except RuntimeError as e:
    print("RuntimeError", str(e)[:200])
