"""Save a whole model with torch.save(model) and load it back with weights_only=False."""
import io
import warnings

import torch
import torch.nn as nn

torch.manual_seed(6)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.rnn = nn.LSTM(4, 6, batch_first=True)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(6, 10)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        out, _ = self.rnn(self.emb(x))
        return self.head(self.drop(out))


net = Net().eval()
x = torch.randint(0, 10, (2, 5))
y = net(x)
buf = io.BytesIO()
torch.save(net, buf)
buf.seek(0)
try:
    torch.load(buf)
except Exception as e:
    print(type(e).__name__, [l for l in str(e).splitlines() if "Unsupported global" in l])
buf.seek(0)
net2 = torch.load(buf, weights_only=False)
print(type(net2).__name__, net2.training)
print(net2)
print(torch.equal(net2(x), y))
print([(k, tuple(v.shape)) for k, v in net2.state_dict().items()])
buf.seek(0)
with torch.serialization.safe_globals([Net, nn.Embedding, nn.LSTM, nn.Dropout, nn.Linear, set]):
    try:
        net3 = torch.load(buf)
        print("safe load ok", type(net3).__name__)
    except Exception as e:
        print(type(e).__name__, [l for l in str(e).splitlines() if "Unsupported global" in l])
buf2 = io.BytesIO()
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
net(x).sum().backward()
opt.step()
torch.save(opt, buf2)
buf2.seek(0)
opt2 = torch.load(buf2, weights_only=False)
print(type(opt2).__name__, opt2.defaults)
print(opt2)
import numpy as np
buf3 = io.BytesIO()
torch.save({"arr": np.arange(4.0), "t": torch.arange(3)}, buf3)
buf3.seek(0)
print(torch.load(buf3, weights_only=False))
