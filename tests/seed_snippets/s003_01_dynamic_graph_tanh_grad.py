# Seed 003_0dd00481b1bebfcc.txt - "Dynamic vs Static Graphs", with the check a held-out run added: the tanh
# branch's gradient against the formula written out (torch: False; its float32 tanh(4.7471) is correctly
# rounded and its backward's 1 - tanh^2 is one fused multiply-add)
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

torch.manual_seed(0)
x = torch.randn(3, requires_grad=True)

# Two different graphs based on the condition
loss1 = forward(x, use_relu=True)
loss2 = forward(x, use_relu=False)  # Different graph!
loss2.backward()
print(x.grad)
print(torch.allclose(x.grad, 2 * x * (1 - torch.tanh(x**2)**2)))
