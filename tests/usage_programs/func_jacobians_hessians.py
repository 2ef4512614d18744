"""Jacobians and Hessians with torch.func: jacrev, jacfwd, hessian, argnums, has_aux, batched by vmap,
checked against torch.autograd.functional and a row-by-row autograd loop."""
import torch
import torch.nn.functional as F
from torch.autograd.functional import hessian as af_hessian, jacobian as af_jacobian
from torch.func import hessian, jacfwd, jacrev, vmap

torch.manual_seed(1)
D_in, D_out = 5, 4
W = torch.randn(D_out, D_in, dtype=torch.float64)
b = torch.randn(D_out, dtype=torch.float64)
x = torch.randn(D_in, dtype=torch.float64)


def layer(W, b, x):
    """A tanh layer with a softplus skip term: R^5 -> R^4 for a single input."""
    return torch.tanh(F.linear(x, W, b)) + 0.1 * F.softplus(x[..., :D_out])


print("f(x) =", layer(W, b, x))

# Jacobian with respect to x, row by row with autograd (the slow way)
xr = x.clone().requires_grad_()
out = layer(W, b, xr)
rows = [torch.autograd.grad(out, xr, e, retain_graph=True)[0] for e in torch.eye(D_out, dtype=torch.float64)]
J_loop = torch.stack(rows)

J_rev = jacrev(layer, argnums=2)(W, b, x)
J_fwd = jacfwd(layer, argnums=2)(W, b, x)
J_af = af_jacobian(lambda x: layer(W, b, x), x)
print("J_rev", tuple(J_rev.shape))
print(J_rev)
print("rev == loop:", torch.allclose(J_rev, J_loop), " fwd == rev:", torch.allclose(J_fwd, J_rev),
      " autograd.functional:", torch.allclose(J_af, J_rev))
print(f"max |J_fwd - J_rev| < 1e-14: {(J_fwd - J_rev).abs().max().item() < 1e-14}")

# several argnums: a tuple of Jacobians, one per argument
J_W, J_b = jacrev(layer, argnums=(0, 1))(W, b, x)
print("d/dW", tuple(J_W.shape), "d/db", tuple(J_b.shape))
print("d/db is diagonal:", torch.allclose(J_b, torch.diag(torch.diagonal(J_b))))
print("diag d/db", torch.diagonal(J_b))
J_W_fwd, J_b_fwd = jacfwd(layer, argnums=(0, 1))(W, b, x)
print("jacfwd agrees:", torch.allclose(J_W, J_W_fwd), torch.allclose(J_b, J_b_fwd))
J_af_W, J_af_b = af_jacobian(lambda W, b: layer(W, b, x), (W, b))
print("autograd.functional agrees:", torch.allclose(J_W, J_af_W), torch.allclose(J_b, J_af_b))


# has_aux: a function returning (output, something to carry along)
def layer_aux(x):
    y = layer(W, b, x)
    return y, {"norm": y.norm(), "argmax": y.argmax()}


J_aux, aux = jacrev(layer_aux, has_aux=True)(x)
print("has_aux:", torch.equal(J_aux, J_rev), f"{aux['norm'].item():.8f}", aux["argmax"].item())

# batched Jacobians: vmap over a batch of inputs
xs = torch.randn(6, D_in, dtype=torch.float64)
J_batch = vmap(jacrev(layer, argnums=2), in_dims=(None, None, 0))(W, b, xs)
J_batch_fwd = vmap(jacfwd(layer, argnums=2), in_dims=(None, None, 0))(W, b, xs)
print("batched", tuple(J_batch.shape), torch.allclose(J_batch, J_batch_fwd))
print("batched == loop:", torch.allclose(J_batch, torch.stack([jacrev(layer, argnums=2)(W, b, xi) for xi in xs])))


# the trick without vmap: sum the outputs over the batch (samples are independent), then move the batch dim first
def batch_sum(x):
    return layer(W, b, x).sum(0)


J_sum = jacrev(batch_sum)(xs).movedim(1, 0)
print("sum trick agrees:", torch.allclose(J_sum, J_batch))
print("J_batch[2]")
print(J_batch[2])


# Hessians of a scalar function
def energy(x):
    return (x.sin() * x.roll(1)).sum() + 0.5 * (x ** 4).sum() / x.numel()


H = hessian(energy)(x)
H_af = af_hessian(energy, x)
H_fr = jacfwd(jacrev(energy))(x)
H_rr = jacrev(jacrev(energy))(x)
print("H", tuple(H.shape), "symmetric:", torch.allclose(H, H.T))
print(H)
print("hessian == autograd.functional:", torch.allclose(H, H_af), " fwd-over-rev:", torch.allclose(H, H_fr),
      " rev-over-rev:", torch.allclose(H, H_rr))
print("eigenvalues", torch.linalg.eigvalsh(H))

# batched Hessians
Hs = vmap(hessian(energy))(xs)
print("batched hessians", tuple(Hs.shape), torch.allclose(Hs[3], hessian(energy)(xs[3])))
print(f"trace of each: {[round(v, 6) for v in torch.diagonal(Hs, dim1=1, dim2=2).sum(-1).tolist()]}")


# Hessian with respect to two arguments: nested tuples
def bilinear(a, c):
    return (a.outer(c) ** 2).sum() + (a[:2] * c).sum().exp()


a = torch.randn(3, dtype=torch.float64) * 0.5
c = torch.randn(2, dtype=torch.float64) * 0.5
Haa_ac, Hca_cc = hessian(bilinear, argnums=(0, 1))(a, c)
print("blocks", [tuple(t.shape) for t in Haa_ac], [tuple(t.shape) for t in Hca_cc])
print("off-diagonal blocks transpose:", torch.allclose(Haa_ac[1], Hca_cc[0].T))
print(Haa_ac[1])
H_af_blocks = af_hessian(bilinear, (a, c))
print("autograd.functional blocks:", all(torch.allclose(p, q) for row, row_af in zip((Haa_ac, Hca_cc), H_af_blocks)
                                         for p, q in zip(row, row_af)))

# a Jacobian of a function with several outputs
def polar(r_theta):
    r, theta = r_theta[0], r_theta[1]
    return r * theta.cos(), r * theta.sin()


J_polar = jacrev(polar)(torch.tensor([2.0, 0.3], dtype=torch.float64))
print("polar", J_polar)
print(f"det = r: {torch.linalg.det(torch.stack(J_polar)).item():.12f}")
