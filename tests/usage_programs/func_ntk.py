"""Empirical neural tangent kernels: by contracting per-sample Jacobians (vmap(jacrev)) and by NTK-vector products
(vjp, then jvp, vmapped over a basis of output vectors); full, trace and diagonal kernels of a small CNN and an MLP."""
import torch
import torch.nn as nn
from torch.func import functional_call, jacrev, jvp, vjp, vmap


class SmallCNN(nn.Module):
    def __init__(self, n_out=3):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(2, 4, 3), nn.Tanh(), nn.Conv2d(4, 4, 3, padding=1), nn.GELU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(4, n_out)

    def forward(self, x):
        return self.head(self.body(x))


def single_output(model, params):
    """f(params, x) for one sample x: the model sees a batch of one."""
    def f(p, x):
        return functional_call(model, p, (x.unsqueeze(0),)).squeeze(0)
    return f


def ntk_by_jacobians(f, params, x1, x2, mode):
    # per-sample Jacobians of the outputs w.r.t. every parameter, flattened over the parameter's own dims
    jac1 = vmap(jacrev(f), in_dims=(None, 0))(params, x1)
    jac2 = vmap(jacrev(f), in_dims=(None, 0))(params, x2)
    total = 0
    for name in params:
        j1 = jac1[name].flatten(2)    # (N1, O, P)
        j2 = jac2[name].flatten(2)    # (N2, O, P)
        if mode == "full":
            total = total + torch.einsum("aip,bjp->abij", j1, j2)
        elif mode == "trace":
            total = total + torch.einsum("aip,bip->ab", j1, j2)
        else:  # "diagonal"
            total = total + torch.einsum("aip,bip->abi", j1, j2)
    return total


def ntk_by_products(f, params, x1, x2, mode):
    def kernel_block(a, b):
        # J(a) J(b)^T applied to each basis vector of the output space: vjp at a, then jvp at b
        out, pullback = vjp(lambda p: f(p, a), params)

        def one_column(v):
            (cotangent,) = pullback(v)
            return jvp(lambda p: f(p, b), (params,), (cotangent,))[1]

        basis = torch.eye(out.numel(), dtype=out.dtype).view(out.numel(), *out.shape)
        block = vmap(one_column)(basis)        # (O, O)
        if mode == "full":
            return block
        if mode == "trace":
            return torch.trace(block)
        return torch.diagonal(block)

    return vmap(vmap(kernel_block, in_dims=(None, 0)), in_dims=(0, None))(x1, x2)


torch.manual_seed(7)
net = SmallCNN().double()
params = {k: v.detach() for k, v in net.named_parameters()}
f = single_output(net, params)
x_train = torch.randn(5, 2, 6, 6, dtype=torch.float64)
x_test = torch.randn(3, 2, 6, 6, dtype=torch.float64)
print("outputs", net(x_train).detach()[:2])

for mode in ("full", "trace", "diagonal"):
    k_jac = ntk_by_jacobians(f, params, x_train, x_test, mode)
    k_vp = ntk_by_products(f, params, x_train, x_test, mode)
    print(f"{mode:8s} {tuple(k_jac.shape)} agree {torch.allclose(k_jac, k_vp, rtol=1e-10, atol=1e-12)}"
          f" sum {k_jac.sum().item():.8f}")
k_full = ntk_by_jacobians(f, params, x_train, x_test, "full")
k_trace = ntk_by_jacobians(f, params, x_train, x_test, "trace")
traces = torch.diagonal(k_full, dim1=2, dim2=3).sum(-1)
print("trace of the full kernel == trace kernel:", torch.allclose(traces, k_trace))
print("k_full[0, 0]")
print(k_full[0, 0])

# the kernel of the training set with itself is symmetric positive semi-definite
k_tt = ntk_by_jacobians(f, params, x_train, x_train, "trace")
print("train/train trace kernel")
print(k_tt)
print("symmetric:", torch.allclose(k_tt, k_tt.T), "psd:", torch.linalg.eigvalsh(k_tt).min().item() > -1e-10)

# check one entry against autograd: <dtrace f(x1), ...>: J(x1) . J(x2)^T summed over outputs
def flat_jacobian(x):
    rows = []
    for i in range(3):
        net.zero_grad()
        net(x.unsqueeze(0))[0, i].backward()
        rows.append(torch.cat([p.grad.flatten() for p in net.parameters()]))
    return torch.stack(rows)


J0, J1 = flat_jacobian(x_train[0]), flat_jacobian(x_test[1])
print("autograd entry agrees:", torch.allclose((J0 * J1).sum(), k_trace[0, 1]))

# an MLP in float32, as the tutorial's sizes would be
torch.manual_seed(8)
mlp = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 2))
mp = {k: v.detach() for k, v in mlp.named_parameters()}
g = single_output(mlp, mp)
a = torch.randn(6, 4)
k1 = ntk_by_jacobians(g, mp, a, a, "full")
k2 = ntk_by_products(g, mp, a, a, "full")
print("mlp", tuple(k1.shape), k1.dtype, "agree:", torch.allclose(k1, k2, rtol=1e-4, atol=1e-5))
self_kernels = torch.stack([k1[i, i] for i in range(6)]).diagonal(dim1=1, dim2=2)    # (6, 2)
print("mlp self-kernels", [f"{v:.4f}" for v in self_kernels.flatten()[:6].tolist()])
