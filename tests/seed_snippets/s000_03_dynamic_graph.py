# Seed 000_2a66a9701caa613b.txt - "Dynamic vs Static Graphs" (dynamic_graph.py)
import torch

def forward(x, use_relu=True):
    """Dynamic graph changes based on Python conditions"""
    y = x ** 2

    # This Python if-statement works naturally!
    if use_relu:
        y = torch.relu(y)
    else:
        y = torch.tanh(y)

    return y.sum()

x = torch.randn(3, requires_grad=True)

# Two different graphs based on the condition
loss1 = forward(x, use_relu=True)
loss2 = forward(x, use_relu=False)  # Different graph!
