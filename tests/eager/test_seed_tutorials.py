"""The PyTorch code of the seed tutorials, run with `import eager as torch`.

Each snippet is kept as the tutorial prints it; the only edit is the import line
(`import torch` -> `import eager as torch`), applied by `run()`. Where a tutorial shows an
interactive session (`In [1]:` / `>>` prompts) the prompts are dropped; where a tutorial
only describes code in prose, or its code block was garbled in the copy we have, the
snippet is reconstructed from the description and says so. Left out: the IPython display
import (`from IPython.display import display, Math`, notebook rendering, not tensor or
autograd basics: stand-ins that collect the text are provided instead), pseudo-code
(`def backward(self, incoming_gradients)` "not the actual implementation",
`with torch.no_grad: inference code goes here`).
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import eager


def run(snippet: str, **namespace) -> dict:
    code = snippet.replace("import torch", "import eager as torch")
    assert "import eager as torch" in code or "torch" in namespace
    exec(compile(code, "<tutorial>", "exec"), namespace)  # noqa: S102
    return namespace


# -- 000: "Understanding Graphs, Automatic Differentiation and Autograd" -------------------------
S000_TENSOR = """
import torch
tsr = torch.Tensor(3,5)
tsr
"""

S000_REQUIRES_GRAD = """
import torch
t1 = torch.randn((3,3), requires_grad = True)
t2 = torch.FloatTensor(3,3) # No way to specify requires_grad while initiating
t2.requires_grad = True
"""

# the graph the 000 tutorial builds in three of its snippets, which then go on differently
_S000_GRAPH = """
import torch
a = torch.randn((3,3), requires_grad = True)
w1 = torch.randn((3,3), requires_grad = True)
w2 = torch.randn((3,3), requires_grad = True)
w3 = torch.randn((3,3), requires_grad = True)
w4 = torch.randn((3,3), requires_grad = True)
b = w1*a
c = w2*a
d = w3*b + w4*c
"""

S000_GRAD_FN = _S000_GRAPH + """L = 10 - d
print("The grad fn for a is", a.grad_fn)
print("The grad fn for d is", d.grad_fn)
"""

S000_NON_SCALAR = _S000_GRAPH + """L = (10 - d)
L.backward()
"""

S000_SUM = _S000_GRAPH + """# Replace L = (10 - d) by
L = (10 -d).sum()
L.backward()
"""

S000_ONES = """
# Replace L.backward() with
L.backward(torch.ones(L.shape))
"""

S000_UPDATE = """
w1 = w1 - learning_rate * w1.grad
"""

S000_DYNAMIC = """
a = torch.randn((3,3), requires_grad = True) #No graph yet, as a is a leaf
w1 = torch.randn((3,3), requires_grad = True) #Same logic as above
b = w1*a #Graph with node `mulBackward` is created.
"""

S000_RETAIN = """
loss.backward(retain_graph = True)
"""


def test_000_legacy_tensor_constructor():
    ns = run(S000_TENSOR)
    assert ns["tsr"].shape == (3, 5) and ns["tsr"].dtype is eager.float32


def test_000_requires_grad_two_ways():
    ns = run(S000_REQUIRES_GRAD)
    assert ns["t1"].requires_grad and ns["t2"].requires_grad
    assert ns["t1"].is_leaf and ns["t2"].is_leaf and ns["t2"].shape == (3, 3)


def test_000_grad_fn_printout(capsys):
    ns = run(S000_GRAD_FN)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "The grad fn for a is None"
    assert re.fullmatch(r"The grad fn for d is <AddBackward0 object at 0x[0-9a-f]+>", out[1])
    assert ns["L"].grad_fn.name() == "RsubBackward1"
    assert ns["a"].is_leaf and not ns["d"].is_leaf


def test_000_vector_backward_raises_the_tutorials_error():
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        run(S000_NON_SCALAR)


def test_000_sum_then_backward_gives_the_chain_rule_gradients():
    ns = run(S000_SUM)
    a, w1, w2, w3, w4 = (ns[k].detach().numpy() for k in ("a", "w1", "w2", "w3", "w4"))
    np.testing.assert_allclose(ns["w4"].grad.numpy(), -w2 * a, rtol=1e-5)
    np.testing.assert_allclose(ns["w3"].grad.numpy(), -w1 * a, rtol=1e-5)
    np.testing.assert_allclose(ns["w1"].grad.numpy(), -w3 * a, rtol=1e-5)
    np.testing.assert_allclose(ns["a"].grad.numpy(), -(w3 * w1 + w4 * w2), rtol=1e-5)


def test_000_backward_with_ones_and_the_update_step():
    ns = run(S000_NON_SCALAR.replace("L.backward()\n", ""))
    run(S000_ONES, **ns)
    a, w2 = ns["a"].detach().numpy(), ns["w2"].detach().numpy()
    np.testing.assert_allclose(ns["w4"].grad.numpy(), -w2 * a, rtol=1e-5)
    old = ns["w1"].detach().numpy().copy()
    grad = ns["w1"].grad.numpy().copy()
    ns["learning_rate"] = 0.01  # the tutorial leaves the learning rate to the reader
    ns = run(S000_UPDATE, **ns)
    np.testing.assert_allclose(ns["w1"].detach().numpy(), old - 0.01 * grad, rtol=1e-6)
    assert ns["w1"].grad_fn.name() == "SubBackward0"  # out of place: w1 is now a graph node


def test_000_dynamic_graph_node_names():
    ns = run(S000_DYNAMIC, torch=eager)
    assert ns["a"].grad_fn is None and ns["w1"].grad_fn is None
    assert ns["b"].grad_fn.name() == "MulBackward0"


def test_000_backward_twice_needs_retain_graph():
    ns = run(S000_SUM)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        ns["L"].backward()
    ns = run(S000_SUM.replace("L.backward()", "loss = L"))
    first = None
    for _ in range(2):
        run(S000_RETAIN, **ns)
        if first is None:
            first = ns["w1"].grad.numpy().copy()
    np.testing.assert_allclose(ns["w1"].grad.numpy(), 2 * first, rtol=1e-6)  # accumulated


# -- 001: "PyTorch Autograd Module" (code described in prose; reconstructed) ----------------------
S001_LOSS = """
import torch
x = torch.tensor([1., 2., 3., 4., 5.])
loss = x**2 - 5
x = torch.tensor([1., 2., 3., 4., 5.], requires_grad=True)
loss = x**2 - 5
print(loss)
print(loss.grad_fn)
loss.backward(torch.ones(5))
print(x.grad)
print(2*x)
"""

S001_DETACH_NO_GRAD = """
import torch
a = torch.rand(2, 2, requires_grad=True)
b = a.detach()
print(b.requires_grad)
c = torch.rand(2, 2, requires_grad=True)
with torch.no_grad():
    d = c**2
print(d.requires_grad)
"""


def test_001_loss_gradients_equal_two_x(capsys):
    ns = run(S001_LOSS)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "tensor([-4., -1.,  4., 11., 20.], grad_fn=<SubBackward0>)"
    assert re.fullmatch(r"<SubBackward0 object at 0x[0-9a-f]+>", out[1])
    assert out[2] == "tensor([ 2.,  4.,  6.,  8., 10.])"
    assert out[3] == "tensor([ 2.,  4.,  6.,  8., 10.], grad_fn=<MulBackward0>)"
    assert eager.equal(ns["x"].grad, 2 * ns["x"].detach())


def test_001_detach_and_no_grad(capsys):
    run(S001_DETACH_NO_GRAD)
    assert capsys.readouterr().out.splitlines() == ["False", "False"]


# -- 002: "PyTorch Autograd" (the copy's code blocks are garbled; reconstructed) --------------------
S002_WAYS = """
import torch
import numpy as np
x = torch.randn(2, 2, requires_grad = True)
# From numpy
x = np.array([1., 2., 3.]) #Only Tensors of floating point dtype can require gradients
x = torch.from_numpy(x)
# Now enable gradient
x.requires_grad_(True)
#_ above makes the change in-place (its a common pytorch thing)
"""

S002_SCALAR = """
import torch
x = torch.tensor(1.0, requires_grad = True)
y = torch.tensor(2.0)
z = x * y
# Displaying
for i, name in zip([x, y, z], "xyz"):
    print(f"{name}\\ndata: {i.data}\\nrequires_grad: {i.requires_grad}\\n\\
grad: {i.grad}\\ngrad_fn: {i.grad_fn}\\nis_leaf: {i.is_leaf}\\n")
"""

S002_NO_GRAD = """
import torch
x = torch.tensor(1.0, requires_grad = True)
y = torch.tensor(2.0, requires_grad = True)
with torch.no_grad():
    z = x * 2
    print(z.requires_grad)
"""

S002_BACKWARD = """
import torch
x = torch.tensor(1.0, requires_grad = True)
z = x ** 3
z.backward() #Computes the gradient
print(x.grad.data) #Prints '3' which is dz/dx
"""

S002_VECTOR = """
import torch
x = torch.tensor([0.0, 2.0, 8.0], requires_grad = True)
y = torch.tensor([5.0 , 1.0 , 7.0], requires_grad = True)
z = x * y
z.backward(torch.FloatTensor([1.0, 1.0, 1.0]))
"""


def test_002_ways_to_make_gradient_enabled_tensors():
    ns = run(S002_WAYS)
    assert ns["x"].requires_grad and ns["x"].dtype is eager.float64 and ns["x"].is_leaf


def test_002_scalar_graph_members(capsys):
    with pytest.warns(UserWarning, match="is not a leaf Tensor"):  # z.grad, as PyTorch warns
        run(S002_SCALAR)
    out = capsys.readouterr().out
    # (PyTorch 2 formats a 0-d tensor in an f-string as its number: "data: 1.0")
    assert "x\ndata: 1.0\nrequires_grad: True\ngrad: None\ngrad_fn: None\nis_leaf: True" in out
    assert re.search(r"z\ndata: 2.0\nrequires_grad: True\ngrad: None\ngrad_fn: <MulBackward0 object at 0x[0-9a-f]+>"
                     r"\nis_leaf: False", out)


def test_002_no_grad_and_backward(capsys):
    run(S002_NO_GRAD)
    run(S002_BACKWARD)
    assert capsys.readouterr().out.splitlines() == ["False", "tensor(3.)"]


def test_002_vector_backward_needs_external_gradient():
    ns = run(S002_VECTOR)
    assert ns["x"].grad.tolist() == [5.0, 1.0, 7.0] and ns["y"].grad.tolist() == [0.0, 2.0, 8.0]
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        run(S002_VECTOR.replace("z.backward(torch.FloatTensor([1.0, 1.0, 1.0]))", "z.backward()"))


# -- 003: "Back-propagation Demystified [Part 2]" ----------------------------------------------------
S003_CONTAGION = """
import torch

x = torch.randn(3,3) #requires_grad=False by default
y = torch.randn(3,3) #requires_grad=False by default
z = torch.randn((3,3),requires_grad=True)

a = x+y # since both x and y don't require gradients, a also doesn't require gradients
print(a.requires_grad) #output: False

b = a+z #since z requires gradient, b also requires gradient
print(b.requires_grad) #output: True
"""

# The IPython import line is left out (display stand-ins are passed in instead).
S003_GRAPH = """
import torch
# Define the graph a,b,c,d are leaf nodes and e is the root node
# The graph is constructed with every line since the
# computational graphs are dynamic in PyTorch

a = torch.tensor([2.0],requires_grad=True)
b = torch.tensor([3.0],requires_grad=True)
c = torch.tensor([5.0],requires_grad=True)
d = torch.tensor([10.0],requires_grad=True)
u = a*b
t = torch.log(d)
v = t*c
e = u+v
"""

# The notebook calls e.backward() between the two cells (the post shows its effect).
S003_GRADS = """
e.backward()
display(Math(fr'\\frac{{\\partial e}}{{\\partial a}} = {a.grad.item()}'))
display(Math(fr'\\frac{{\\partial e}}{{\\partial b}} = {b.grad.item()}'))
display(Math(fr'\\frac{{\\partial e}}{{\\partial c}} = {c.grad.item()}'))
display(Math(fr'\\frac{{\\partial e}}{{\\partial d}} = {d.grad.item()}'))
"""


def test_003_requires_grad_contagion(capsys):
    run(S003_CONTAGION)
    assert capsys.readouterr().out.splitlines() == ["False", "True"]


def test_003_graph_and_leaf_gradients():
    shown = []
    ns = run(S003_GRAPH, display=shown.append, Math=lambda s: s)
    assert [ns[k].is_leaf for k in "abcdutve"] == [True] * 4 + [False] * 4
    assert ns["e"].grad_fn.name() == "AddBackward0" and ns["t"].grad_fn.name() == "LogBackward0"
    assert all(ns[k].grad is None for k in "abcd")
    run(S003_GRADS, **ns)
    assert shown[0] == r"\frac{\partial e}{\partial a} = 3.0"
    assert shown[1] == r"\frac{\partial e}{\partial b} = 2.0"
    assert float(shown[2].split("= ")[1]) == pytest.approx(np.log(10.0), rel=1e-6)
    assert float(shown[3].split("= ")[1]) == pytest.approx(0.5, rel=1e-6)
    assert ns["a"].grad.item() == 3.0 and ns["b"].grad.item() == 2.0  # the tensors hold what was shown
    assert ns["c"].grad.item() == pytest.approx(np.log(10.0), rel=1e-6)
    assert ns["d"].grad.item() == pytest.approx(0.5, rel=1e-6)
