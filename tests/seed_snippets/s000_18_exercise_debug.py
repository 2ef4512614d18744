# Seed 000_2a66a9701caa613b.txt - "Coding Exercises: Gradient Debugging" (exercise_debug.py, buggy as given)
import torch
import torch.nn as nn

model = nn.Linear(10, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

for i in range(100):
    x = torch.randn(32, 10)
    y = model(x).sum()
    y.backward()
    optimizer.step()
    print(f"Loss: {y.item()}")
