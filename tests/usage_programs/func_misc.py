"""A tour of torch.func's smaller features: grad_and_value/vjp/jvp with has_aux, linearize, vmap's in_dims/out_dims
pytrees and chunk_size, randomness modes, dict outputs, nested vmap, grad(grad), jacrev(jacfwd), and a few errors."""
from collections import namedtuple

import torch
from torch.func import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, linearize, vjp, vmap

torch.manual_seed(11)
dd = torch.float64
x = torch.randn(4, dtype=dd)
y = torch.randn(4, dtype=dd)


# grad_and_value with has_aux: the aux output rides along undifferentiated
def loss_with_stats(w, data):
    pred = data * w
    loss = (pred - 1.0).pow(2).mean()
    return loss, {"pred_mean": pred.mean(), "max": pred.max()}


g, (value, aux) = grad_and_value(loss_with_stats, has_aux=True)(x, y)
print("grad", g)
print(f"value {value.item():.8f} aux {aux['pred_mean'].item():.8f} {aux['max'].item():.8f}")
print("aux requires_grad:", aux["pred_mean"].requires_grad)

# grad with argnums as a tuple gives a tuple of gradients
gw, gd = grad(lambda w, d: loss_with_stats(w, d)[0], argnums=(0, 1))(x, y)
print("argnums=(0, 1):", torch.allclose(gw, g), gd)


# vjp and jvp with has_aux
def f_aux(a):
    out = torch.sin(a) * a.exp()
    return out, out.sum()


out, pullback, aux = vjp(f_aux, x, has_aux=True)
(ct,) = pullback(torch.ones_like(out))
print("vjp", ct, f"aux {aux.item():.8f}")
out2, tangent_out, aux2 = jvp(f_aux, (x,), (torch.ones_like(x),), has_aux=True)
print("jvp", tangent_out)
print("elementwise: vjp(ones) == jvp(ones):", torch.allclose(ct, tangent_out), torch.equal(out, out2))

# linearize: evaluate once, push many tangents through the linear map
out3, jvp_fn = linearize(lambda a: torch.tanh(a) @ a.outer(a), x)
tangents = torch.randn(3, 4, dtype=dd)
lin = torch.stack([jvp_fn(t) for t in tangents])
ref = torch.stack([jvp(lambda a: torch.tanh(a) @ a.outer(a), (x,), (t,))[1] for t in tangents])
print("linearize", out3, "agrees with jvp:", torch.allclose(lin, ref))

# vmap: in_dims and out_dims as pytrees
Pair = namedtuple("Pair", ["left", "right"])


def combine(pair, scale):
    return {"sum": (pair.left + pair.right) * scale["a"], "prod": pair.left * pair.right + scale["b"]}


lefts = torch.arange(6, dtype=dd).view(3, 2)
rights = torch.arange(6, dtype=dd).view(2, 3) / 10
scale = {"a": torch.tensor(2.0, dtype=dd), "b": torch.tensor([1.0, -1.0], dtype=dd)}
res = vmap(combine, in_dims=(Pair(0, 1), {"a": None, "b": None}),
           out_dims={"sum": 0, "prod": 1})(Pair(lefts, rights), scale)
print("dict out:", sorted(res), tuple(res["sum"].shape), tuple(res["prod"].shape))
print(res["sum"])
print(res["prod"])

# in_dims=1 and out_dims=1, negative dims, and a non-tensor argument passed through with None
m = torch.arange(12, dtype=dd).view(3, 4)
print(vmap(lambda col, k: col * k, in_dims=(1, None), out_dims=1)(m, 3.0))
print(vmap(torch.sum, in_dims=-1)(m))

# chunk_size splits the batch and gives the same answer
big = torch.randn(10, 3, dtype=dd)
full = vmap(lambda r: r.softmax(0) @ r)(big)
chunked = vmap(lambda r: r.softmax(0) @ r, chunk_size=3)(big)
print("chunk_size=3:", torch.equal(full, chunked), [f"{v:.6f}" for v in full[:4].tolist()])

# randomness: "different" draws independently per batch element, "same" shares one draw
base = torch.zeros(4, 3)
torch.manual_seed(0)
diff = vmap(lambda r: r + torch.rand(3), randomness="different")(base)
torch.manual_seed(0)
same = vmap(lambda r: r + torch.rand(3), randomness="same")(base)
print(diff)
print(same)
print("different rows distinct:", len({tuple(r) for r in diff.tolist()}) == 4)
print("same rows equal:", all(torch.equal(same[0], r) for r in same))
torch.manual_seed(0)
print("'different' draws what one rand(4, 3) draws:", torch.equal(diff, torch.rand(4, 3)))
torch.manual_seed(0)
print("'same' draws what one rand(3) draws:", torch.equal(same[0], torch.rand(3)))
try:
    vmap(lambda r: r + torch.rand(3))(base)
except RuntimeError as e:
    print("randomness='error' (default) refuses rand:", type(e).__name__, "randomness" in str(e))
torch.manual_seed(3)
drop = vmap(lambda r: torch.nn.functional.dropout(r, 0.5), randomness="different")(torch.ones(5, 8))
print("dropout per row kept:", drop.ne(0).sum(1).tolist(), "scale:", drop.max().item())
torch.manual_seed(3)
noise = vmap(lambda r: r * torch.randn_like(r), in_dims=1, randomness="same")(torch.ones(3, 5, dtype=dd))
print("randn_like, same, in_dims=1:", tuple(noise.shape), torch.equal(noise[0], noise[4]))
print(noise[0])

# nested vmap: a pairwise distance matrix without broadcasting by hand
a = torch.randn(3, 2, dtype=dd)
b = torch.randn(4, 2, dtype=dd)
dist = torch.vmap(torch.vmap(lambda p, q: (p - q).norm(), in_dims=(None, 0)), in_dims=(0, None))(a, b)
print("torch.vmap is torch.func.vmap:", torch.vmap is vmap)
print("pairwise", tuple(dist.shape), torch.allclose(dist, torch.cdist(a, b)))
print(dist)


# grad(grad(f)) and higher: derivatives of a scalar function, vmapped over points
def h(t):
    return torch.sin(t) * t ** 2


pts = torch.linspace(-1.0, 1.0, 5, dtype=dd)
d1 = vmap(grad(h))(pts)
d2 = vmap(grad(grad(h)))(pts)
d3 = vmap(grad(grad(grad(h))))(pts)
exact2 = 2 * torch.sin(pts) + 4 * pts * torch.cos(pts) - pts ** 2 * torch.sin(pts)
print("h'  ", d1)
print("h'' ", d2, torch.allclose(d2, exact2))
print("h'''", d3)


# jacrev(jacfwd(f)) is a Hessian; jacfwd(jacrev) too; hessian is jacfwd(jacrev)
def q(v):
    return (v[0] ** 2 * v[1] + torch.exp(v[1] * v[2]) + v.prod())


v0 = torch.tensor([0.5, -1.0, 0.25], dtype=dd)
H1 = jacrev(jacfwd(q))(v0)
H2 = jacfwd(jacrev(q))(v0)
print(H1)
print("jacrev(jacfwd) == jacfwd(jacrev) == hessian:", torch.allclose(H1, H2), torch.allclose(H1, hessian(q)(v0)))

# jvp of grad (a Hessian-vector product) vs vjp of grad
u = torch.tensor([1.0, 0.0, -1.0], dtype=dd)
hvp_fwd = jvp(grad(q), (v0,), (u,))[1]
hvp_rev = vjp(grad(q), v0)[1](u)[0]
print("hvp", hvp_fwd, torch.allclose(hvp_fwd, hvp_rev), torch.allclose(hvp_fwd, H1 @ u))

# vmap over a function that calls grad inside, batched over the inputs and over a closed-over weight
ws = torch.randn(3, 4, dtype=dd)
per_w = vmap(lambda w: grad(lambda z: (torch.tanh(z * w)).sum())(x))(ws)
print("per-weight grads", tuple(per_w.shape), torch.allclose(per_w[1], ws[1] / torch.cosh(x * ws[1]) ** 2))

# errors as PyTorch reports them
for label, fn in [
    ("item() inside vmap", lambda: vmap(lambda r: r.sum().item())(m)),
    ("if on a batched tensor", lambda: vmap(lambda r: r if r.sum() > 0 else -r)(m)),
    ("mismatched batch sizes", lambda: vmap(torch.add)(torch.ones(2), torch.ones(3))),
    ("grad of a non-scalar", lambda: grad(torch.sin)(x)),
    ("in_dims out of range", lambda: vmap(torch.sin, in_dims=2)(x)),
]:
    try:
        fn()
        print(label, "-> no error")
    except Exception as e:
        print(label, "->", type(e).__name__)
