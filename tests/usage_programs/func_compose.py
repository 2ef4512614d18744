"""Transforms composed with each other and with the rest of torch: vmap(jvp), vmap over vjp's pullback, a grad
result flowing into backward(), autograd.Function under vmap and grad, functional_call's several dicts, tied weights
and strict, BatchNorm under vmap after replace_all_batch_norm_modules_, and what torch refuses."""
import torch
import torch.nn as nn
from torch.func import functional_call, grad, jacrev, jvp, replace_all_batch_norm_modules_, vjp, vmap

torch.manual_seed(21)
dd = torch.float64
xs = torch.randn(4, 3, dtype=dd)
ts = torch.randn(4, 3, dtype=dd)


def wave(a):
    return a.sin() * a.sum() + a.roll(1)


# a batch of Jacobian-vector products, one primal and one tangent per row
outs, tans = vmap(lambda a, t: jvp(wave, (a,), (t,)))(xs, ts)
print("vmap(jvp)", tuple(tans.shape))
print(tans)
print("rows agree with J @ t:", torch.allclose(tans, torch.stack([jacrev(wave)(a) @ t for a, t in zip(xs, ts)])))

# one vjp, its pullback vmapped over a basis of cotangents: the rows of the Jacobian
out, pullback = vjp(wave, xs[0])
rows = vmap(pullback)(torch.eye(3, dtype=dd))[0]
print("vmap(pullback) == jacrev:", torch.allclose(rows, jacrev(wave)(xs[0])))

# a closed-over tensor that requires grad: grad's result stays differentiable with respect to it
w = torch.randn(3, dtype=dd, requires_grad=True)
g = grad(lambda v: (v * w).tanh().pow(2).sum())(xs[0])
print("grad result requires_grad:", g.requires_grad)
g.sum().backward()
print("w.grad", w.grad)
w.grad = None
per_row = vmap(grad(lambda v: (v * w).tanh().pow(2).sum()))(xs)
per_row.pow(2).sum().backward()
print("through vmap(grad): w.grad", w.grad)


# an autograd.Function with its own backward and forward-mode rule, made vmappable by generate_vmap_rule
class Cube(torch.autograd.Function):
    generate_vmap_rule = True

    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * grad_out

    @staticmethod
    def jvp(ctx, x_t):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * x_t


print("Function under vmap:", torch.allclose(vmap(Cube.apply)(xs), xs ** 3))
print("vmap(grad(Function)):", vmap(grad(lambda a: Cube.apply(a).sum()))(xs)[1])
print("jvp(Function):", jvp(Cube.apply, (xs[2],), (torch.ones(3, dtype=dd),))[1])

# functional_call: parameters and buffers from several dicts, tied weights, strict checking
torch.manual_seed(22)
net = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.Linear(3, 3)).double().eval()
net[2].weight = net[0].weight       # tied
params = {k: v.detach() + 0.1 for k, v in net.named_parameters()}
buffers = {k: v.clone() for k, v in net.named_buffers()}
print("named parameters (tied counted once):", list(params))
y1 = functional_call(net, (params, buffers), (xs,))
y2 = functional_call(net, {**params, **buffers}, (xs,))
print("two dicts == one dict:", torch.equal(y1, y2))
print(y1[:2])
h = torch.nn.functional.linear(xs, params["0.weight"], params["0.bias"])
h = (h - buffers["1.running_mean"]) / (buffers["1.running_var"] + 1e-5).sqrt() * params["1.weight"] + params["1.bias"]
by_hand = torch.nn.functional.linear(h, params["0.weight"], params["2.bias"])
print("the tied 2.weight follows 0.weight:", torch.allclose(y1, by_hand))
print("module's own weights untouched:", not torch.equal(net[0].weight.detach(), params["0.weight"]))
try:
    functional_call(net, {"0.weight": params["0.weight"]}, (xs,), strict=True)
except RuntimeError as e:
    print("strict:", type(e).__name__, "Missing key(s)" in str(e))
try:
    functional_call(net, ({"0.weight": params["0.weight"]}, {"0.weight": params["0.weight"]}), (xs,))
except ValueError as e:
    print("the same key twice:", type(e).__name__)

# BatchNorm in training mode under vmap: running stats cannot be updated per example, so stop tracking them
torch.manual_seed(23)
bn_net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 1)).double()
replace_all_batch_norm_modules_(bn_net)
print("running_mean after replace:", bn_net[1].running_mean, bn_net[1].track_running_stats)
groups = torch.randn(5, 6, 3, dtype=dd)          # 5 independent minibatches of 6
out_v = vmap(bn_net)(groups)
out_l = torch.stack([bn_net(gr) for gr in groups])
print("BatchNorm per minibatch under vmap == loop:", tuple(out_v.shape), torch.allclose(out_v, out_l))
print(out_v[0, :3].detach())

# what torch refuses
for label, fn in [
    ("autograd.grad inside vmap", lambda: vmap(lambda a: torch.autograd.grad((a * w).sum(), w)[0])(xs)),
    ("requires_grad_ inside grad", lambda: grad(lambda a: a.detach().requires_grad_().sum() + a.sum())(xs[0])),
    ("vmap over a 0-d input", lambda: vmap(torch.sin)(torch.tensor(1.0))),
    ("out_dims=None for a batched output", lambda: vmap(torch.sin, out_dims=None)(xs)),
    ("non-tensor output", lambda: vmap(lambda a: 3)(xs)),
]:
    try:
        fn()
        print(label, "-> no error")
    except Exception as e:
        print(label, "->", type(e).__name__)
