"""Export a small model to ONNX and run it in onnxruntime; compare with eager."""
import io

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn as nn

torch.manual_seed(11)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return torch.softmax(self.fc(x.flatten(1)), dim=-1)


model = Net().eval()
x = torch.randn(2, 1, 8, 8)
f = io.BytesIO()
torch.onnx.export(model, (x,), f, input_names=["input"], output_names=["probs"],
                  dynamic_axes={"input": {0: "batch"}, "probs": {0: "batch"}}, opset_version=17, dynamo=False)
m = onnx.load_from_string(f.getvalue())
onnx.checker.check_model(m)
print([i.name for i in m.graph.input], [o.name for o in m.graph.output])
print([d.dim_param or d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim])
sess = ort.InferenceSession(f.getvalue())
for n in (2, 5):
    xi = torch.randn(n, 1, 8, 8)
    out = sess.run(None, {"input": xi.numpy()})[0]
    ref = model(xi).detach().numpy()
    print(n, out.shape, np.allclose(out, ref, atol=1e-5))
print([(o.domain, o.version) for o in m.opset_import], m.ir_version)
print([(i.name, i.data_type, list(i.dims)) for i in m.graph.initializer][:0])
