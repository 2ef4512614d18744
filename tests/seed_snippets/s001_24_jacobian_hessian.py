# Seed 001_07e3a7e51895e890.txt - "Jacobian and Hessian: Matrix Derivatives"
import torch
from torch.autograd.functional import jacobian, hessian

def f(x):
    return x ** 3  # Element-wise cubing

x = torch.tensor([1.0, 2.0, 3.0])

# Jacobian: matrix of all partial derivatives
jac = jacobian(f, x)
print(jac)  # Diagonal matrix: [3, 12, 27] = [3*1², 3*2², 3*3²]

# Hessian: matrix of all second partial derivatives
try:
    hess = hessian(f, x)
    print(hess.diag())  # Diagonal: [6, 12, 18] = [6*1, 6*2, 6*3]
except Exception as e:
    print(f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
