"""Per-sample gradients of a small CNN on MNIST-shaped data: vmap(grad(loss)) through functional_call vs a loop."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, grad_and_value, vmap


class TinyConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.conv2 = nn.Conv2d(4, 6, 3, stride=2)
        self.fc1 = nn.Linear(6 * 6 * 6, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)      # 28 -> 26 -> 13
        x = F.relu(self.conv2(x))                         # 13 -> 6
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


torch.manual_seed(0)
model = TinyConvNet().double()
n = 12
images = torch.randn(n, 1, 28, 28, dtype=torch.float64)
labels = torch.randint(0, 10, (n,))

params = {name: p.detach() for name, p in model.named_parameters()}
buffers = {name: b.detach() for name, b in model.named_buffers()}
print("parameters:", [(name, tuple(p.shape)) for name, p in params.items()])


def loss_of_one(params, buffers, image, label):
    # the model expects a batch: give it a batch of one, as a loop over samples would
    logits = functional_call(model, (params, buffers), (image.unsqueeze(0),))
    return F.cross_entropy(logits, label.unsqueeze(0))


# the slow way: one backward per sample
loop_grads = {name: [] for name in params}
loop_losses = []
for i in range(n):
    loss = F.cross_entropy(model(images[i:i + 1]), labels[i:i + 1])
    gs = torch.autograd.grad(loss, list(model.parameters()))
    loop_losses.append(loss.item())
    for name, g in zip(params, gs):
        loop_grads[name].append(g)
loop_grads = {name: torch.stack(gs) for name, gs in loop_grads.items()}

# the transform way: every sample at once
per_sample = vmap(grad(loss_of_one), in_dims=(None, None, 0, 0))(params, buffers, images, labels)
print(type(per_sample).__name__, sorted(per_sample))
for name, g in per_sample.items():
    ref = loop_grads[name]
    norms = g.flatten(1).norm(dim=1)
    print(f"{name:12s} {tuple(g.shape)} norms[:3] {[f'{v:.6f}' for v in norms[:3].tolist()]}"
          f" max|g| {g.abs().max().item():.6f} allclose {torch.allclose(g, ref, atol=1e-12, rtol=1e-9)}")

# grad_and_value gives the per-sample losses too
grads2, losses = vmap(grad_and_value(loss_of_one), in_dims=(None, None, 0, 0))(params, buffers, images, labels)
print("losses", [f"{v:.6f}" for v in losses.tolist()])
print("losses match loop:", torch.allclose(losses, torch.tensor(loop_losses, dtype=torch.float64)))
print("same grads:", all(torch.equal(grads2[k], per_sample[k]) for k in params))

# the mean of the per-sample gradients is the gradient of the mean loss
batch_loss = F.cross_entropy(model(images), labels)
batch_grads = torch.autograd.grad(batch_loss, list(model.parameters()))
print("mean == batch grad:", all(torch.allclose(per_sample[k].mean(0), g) for k, g in zip(params, batch_grads)))

# per-sample gradient with respect to the input image (a saliency map per sample)
saliency = vmap(grad(loss_of_one, argnums=2), in_dims=(None, None, 0, 0))(params, buffers, images, labels)
print("saliency", tuple(saliency.shape), f"{saliency.abs().sum().item():.6f}")
print("saliency of sample 0 rows 10..12, cols 10..14:")
print(saliency[0, 0, 10:12, 10:14])

# clip each sample's gradient to norm 1 and average (the DP-SGD recipe)
flat = torch.cat([g.flatten(1) for g in per_sample.values()], dim=1)
total_norm = flat.norm(dim=1)
scale = (1.0 / total_norm).clamp(max=1.0)
clipped = {k: (g * scale.view(-1, *[1] * (g.dim() - 1))).mean(0) for k, g in per_sample.items()}
print("per-sample norms", [f"{v:.5f}" for v in total_norm.tolist()])
print("clipped fc2.bias", clipped["fc2.bias"])
