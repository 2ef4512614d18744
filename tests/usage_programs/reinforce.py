"""REINFORCE with a Categorical policy on a toy bandit-like environment."""
import torch
import torch.nn as nn
from torch.distributions import Categorical

torch.manual_seed(1)
policy = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3))
opt = torch.optim.SGD(policy.parameters(), lr=0.1)
target = torch.tensor([2, 0, 1, 2])


def env_step(state, action):
    idx = int(state.argmax())
    return 1.0 if action == int(target[idx]) else -0.1


for episode in range(8):
    log_probs, rewards, ents = [], [], []
    for t in range(6):
        state = torch.eye(4)[torch.randint(0, 4, ()).item()]
        dist = Categorical(logits=policy(state))
        a = dist.sample()
        log_probs.append(dist.log_prob(a))
        ents.append(dist.entropy())
        rewards.append(env_step(state, a.item()))
    returns = torch.tensor(rewards).flip(0).cumsum(0).flip(0)
    returns = (returns - returns.mean()) / (returns.std() + 1e-8)
    loss = -(torch.stack(log_probs) * returns).sum() - 0.01 * torch.stack(ents).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"ep {episode} R {sum(rewards):+.2f} loss {loss.item():.4f}")
d = Categorical(probs=torch.tensor([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]]))
print(d)
print(d.probs, d.logits)
print(d.enumerate_support())
print(d.sample((4,)))
print(d.mode, d.mean if False else d.param_shape)
print(d.expand((3, 2)).batch_shape)
try:
    Categorical(probs=torch.tensor([0.5, -0.1]))
except ValueError as e:
    print("ValueError:", e)
