"""``python -m ember``: a guided tour of autograd, run live on ember.

Each step shows a line of code (``>>>``) and then what it prints, as in an interactive session.
The tour uses only ember and the standard library. It exits with status 1 if a step that should
work raises (so a broken feature is noticed), after printing the rest of the tour.
"""
from __future__ import annotations

import ast
import sys
import textwrap

WIDTH = 100


class Tour:
    """Runs snippets in one shared namespace and echoes them REPL-style."""

    def __init__(self, lib, out=None):
        self.ns = {"torch": lib}
        self.out = out or sys.stdout
        self.failures = []

    def say(self, text: str = "") -> None:
        for para in text.split("\n"):
            print(textwrap.fill(para, WIDTH) if para else "", file=self.out)

    def section(self, title: str, text: str = "") -> None:
        print(file=self.out)
        print(f"== {title} " + "=" * max(0, WIDTH - len(title) - 4), file=self.out)
        if text:
            self.say(text)

    def run(self, src: str, error: bool = False) -> None:
        """Echo and run each top-level statement of ``src``; show the value of expressions.

        With ``error=True`` the last statement is expected to raise: its message is printed.
        """
        src = textwrap.dedent(src).strip("\n")
        lines = src.split("\n")
        stmts = ast.parse(src).body
        for k, stmt in enumerate(stmts):
            end = stmts[k + 1].lineno - 1 if k + 1 < len(stmts) else len(lines)
            chunk = [ln for ln in lines[stmt.lineno - 1:end] if ln.strip()]
            for j, ln in enumerate(chunk):
                print((">>> " if j == 0 else "... ") + ln, file=self.out)
            try:
                if isinstance(stmt, ast.Expr):
                    code = compile(ast.Expression(stmt.value), "<tour>", "eval")
                    value = eval(code, self.ns)
                    if value is not None:
                        print(repr(value), file=self.out)
                else:
                    exec(compile(ast.Module([stmt], []), "<tour>", "exec"), self.ns)
            except Exception as e:  # noqa: BLE001 -- the tour shows errors instead of dying
                msg = f"{type(e).__name__}: {e}"
                print(textwrap.fill(msg, WIDTH, subsequent_indent="    "), file=self.out)
                if not (error and k == len(stmts) - 1):
                    self.failures.append(f"{src.splitlines()[0]!r}: {msg}")
                    print("    ^ unexpected: this step should have worked", file=self.out)
                return
        if error:
            self.failures.append(f"{src.splitlines()[-1]!r} did not raise")
            print("    ^ unexpected: this step should have raised an error", file=self.out)


def graph_tree(root, names=None) -> str:
    """The backward graph under ``root`` (a grad_fn) as an indented tree.

    Walks ``next_functions`` with an explicit stack (no recursion, so any depth works). Leaves are
    ``AccumulateGrad`` nodes; ``names`` maps id(leaf tensor) to a name to print with its value. A
    node reached a second time is marked, since its gradients from every path are summed.
    """
    names = names or {}
    out = []
    seen = set()
    stack = [(root, "", "")]  # (node, prefix of its own line, prefix of its children's lines)
    while stack:
        node, head, tail = stack.pop()
        if node is None:
            out.append(head + "None  (input that does not require grad)")
            continue
        label = type(node).__name__
        var = getattr(node, "variable", None)
        if var is not None:
            label += f"  {names.get(id(var), 'leaf')} = {var!r}"
        if id(node) in seen:
            out.append(head + label + "  (same node again)")
            continue
        seen.add(id(node))
        out.append(head + label)
        children = [n for n, _ in node.next_functions]
        for i in reversed(range(len(children))):
            last = i == len(children) - 1
            stack.append((children[i], tail + ("`-- " if last else "+-- "), tail + ("    " if last else "|   ")))
    return "\n".join(out)


def main(lib=None, out=None) -> int:
    if lib is None:
        import ember as lib
    t = Tour(lib, out)
    t.ns["graph_tree"] = graph_tree
    t.say("ember: PyTorch's autograd rebuilt in Python on NumPy. `import ember as torch`, then:")

    t.section("1. requires_grad and grad_fn",
              "Ops on a tensor with requires_grad=True record a node (grad_fn) that sends gradients back.")
    t.run("""
        x = torch.tensor([2., 3.], requires_grad=True)
        z = x * 2 + 1
        z
        z.grad_fn
        z.grad_fn.next_functions
    """)

    t.section("2. Leaves and non-leaves",
              "Only leaves (made by you) keep .grad; a computed tensor keeps it if you call retain_grad().")
    t.run("""
        x.is_leaf, z.is_leaf
        z.retain_grad()
        z.sum().backward()
        x.grad
        z.grad
    """)

    t.section("3. The chain rule", "z = (x + y)^2, so dz/dx = dz/dy = 2(x + y) = 6.")
    t.run("""
        x = torch.tensor(1., requires_grad=True)
        y = torch.tensor(2., requires_grad=True)
        z = (x + y) ** 2
        z.backward()
        x.grad, y.grad
    """)

    t.section("4. backward() with a gradient vector (a vector-Jacobian product)",
              "For a non-scalar output, backward(v) computes v^T J. Here J = diag(2x).")
    t.run("""
        x = torch.tensor([1., 2., 3.], requires_grad=True)
        y = x ** 2
        y.backward(torch.tensor([1., 0.1, 0.01]))
        x.grad
    """)
    t.run("(x ** 2).backward()", error=True)

    t.section("5. Gradients accumulate",
              ".grad is added to on every backward, not replaced, so training loops zero it.")
    t.run("""
        x = torch.tensor([1., 2.], requires_grad=True)
        for _ in range(3):
            (x * x).sum().backward()
        x.grad
        x.grad.zero_()
    """)

    t.section("6. no_grad, enable_grad, detach",
              "no_grad stops recording, enable_grad restarts it, detach() cuts a tensor off the graph.")
    t.run("""
        with torch.no_grad():
            y = x * 2
        y.requires_grad, y.grad_fn
        with torch.no_grad():
            with torch.enable_grad():
                y = x * 2
        y.requires_grad, y.grad_fn
        d = x.detach()
        d.requires_grad, d.is_leaf
    """)

    t.section("7. retain_graph",
              "backward() frees saved values; retain_graph=True keeps them for a second backward.")
    t.run("""
        x = torch.tensor(3., requires_grad=True)
        y = x ** 2
        y.backward(retain_graph=True)
        y.backward()
        x.grad
    """)
    t.run("y.backward()", error=True)

    t.section("8. The in-place pitfall",
              "exp saves its output for backward; modifying it in place is caught by its version counter.")
    t.run("""
        a = torch.tensor([1., 2.], requires_grad=True)
        b = a.exp()
        b.add_(1)
        b.sum().backward()
    """, error=True)
    t.say("The fix is an out-of-place op: b = a.exp() + 1.")

    t.section("9. Higher-order derivatives",
              "create_graph=True: a gradient you can differentiate again. f = exp(x^2), f' = 2xf, "
              "f'' = (2+4x^2)f.")
    t.run("""
        x = torch.tensor(1., requires_grad=True)
        d1, = torch.autograd.grad(torch.exp(x ** 2), x, create_graph=True)
        d2, = torch.autograd.grad(d1, x, create_graph=True)
        d3, = torch.autograd.grad(d2, x)
        d1, d2, d3
    """)

    t.section("10. Custom autograd.Function",
              "Square saves its input; StraightThrough rounds forward and passes the gradient straight back.")
    t.run("""
        class Square(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x
            @staticmethod
            def backward(ctx, grad):
                x, = ctx.saved_tensors
                return 2 * x * grad
        class StraightThrough(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x): return torch.round(x)
            @staticmethod
            def backward(ctx, grad): return grad
        x = torch.tensor([0.3, 1.6, 2.4], requires_grad=True)
        y = Square.apply(x)
        y
        y.sum().backward()
        x.grad
        x.grad = None
        r = StraightThrough.apply(x)
        r
        (r * torch.tensor([1., 2., 3.])).sum().backward()
        x.grad
    """)

    t.section("11. The graph, as text",
              "Walk grad_fn.next_functions with a stack (no recursion); AccumulateGrad nodes are leaves.")
    t.run("""
        x = torch.tensor([2.], requires_grad=True)
        y = torch.tensor([3.], requires_grad=True)
        w = x * y + x ** 2
        print(graph_tree(w.grad_fn, {id(x): "x", id(y): "y"}))
        w.backward()
        x.grad, y.grad
    """)
    t.say("x feeds two nodes, so its gradient is the sum: y + 2x = 7.")

    print(file=t.out)
    if t.failures:
        print(f"Tour finished with {len(t.failures)} unexpected result(s):", file=t.out)
        for f in t.failures:
            print("  - " + f, file=t.out)
        return 1
    print("End of the tour. The README lists what ember supports; the tests compare it with PyTorch.",
          file=t.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
