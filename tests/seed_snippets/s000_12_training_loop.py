# Seed 000_2a66a9701caa613b.txt - "Example 1: Neural Network Training Loop" (training_loop.py)
import torch
import torch.nn as nn

# Simple model
model = nn.Linear(10, 1)
criterion = nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

# Training data
X = torch.randn(32, 10)
y = torch.randn(32, 1)

# Training loop
for epoch in range(100):
    # Forward pass
    predictions = model(X)
    loss = criterion(predictions, y)

    # Backward pass
    optimizer.zero_grad()  # CRITICAL: zero gradients!
    loss.backward()        # Compute gradients
    optimizer.step()       # Update parameters

    if epoch % 20 == 0:
        print(f"Epoch {epoch}, Loss: {loss.item():.4f}")
