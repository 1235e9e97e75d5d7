"""Learning PyTorch with examples: fit sin(x) with a cubic polynomial, five ways."""
import math


def run(torch):
    out = {}
    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 200, device=device, dtype=dtype)
    y = torch.sin(x)
    out["x"] = (tuple(x.shape), str(x.dtype), round(float(x[0]), 5), round(float(x[-1]), 5))

    # tensors, manual gradients
    a, b, c, d = (torch.tensor(v, device=device, dtype=dtype) for v in (0.1, -0.2, 0.3, 0.05))
    learning_rate = 1e-6
    for _t in range(200):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum().item()
        grad_y_pred = 2.0 * (y_pred - y)
        grad_a = grad_y_pred.sum()
        grad_b = (grad_y_pred * x).sum()
        grad_c = (grad_y_pred * x ** 2).sum()
        grad_d = (grad_y_pred * x ** 3).sum()
        a -= learning_rate * grad_a
        b -= learning_rate * grad_b
        c -= learning_rate * grad_c
        d -= learning_rate * grad_d
    out["manual"] = [round(v.item(), 3) for v in (a, b, c, d)] + [round(loss, 1)]

    # autograd
    a, b, c, d = (torch.tensor(v, dtype=dtype, requires_grad=True) for v in (0.1, -0.2, 0.3, 0.05))
    for _t in range(200):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    out["autograd"] = f"Result: y = {a.item():.3f} + {b.item():.3f} x + {c.item():.3f} x^2 + {d.item():.3f} x^3"

    # custom autograd Function (Legendre polynomial P3)
    class LegendrePolynomial3(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    a = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    b = torch.full((), -1.0, device=device, dtype=dtype, requires_grad=True)
    c = torch.full((), 0.0, device=device, dtype=dtype, requires_grad=True)
    d = torch.full((), 0.3, device=device, dtype=dtype, requires_grad=True)
    learning_rate = 5e-6
    for _t in range(200):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        with torch.no_grad():
            for p in (a, b, c, d):
                p -= learning_rate * p.grad
                p.grad = None
    out["legendre"] = [round(v.item(), 3) for v in (a, b, c, d)]
    out["legendre_fn"] = type(y_pred.grad_fn).__name__

    # nn
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    out["xx"] = (tuple(xx.shape), str(xx.dtype))
    model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
    with torch.no_grad():
        model[0].weight.copy_(torch.tensor([[0.1, 0.2, -0.1]]))
        model[0].bias.fill_(0.0)
    loss_fn = torch.nn.MSELoss(reduction='sum')
    for _t in range(100):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= 1e-6 * param.grad
    linear_layer = model[0]
    out["nn"] = (round(linear_layer.bias.item(), 3), [round(v, 3) for v in linear_layer.weight[:, 0].tolist()],
                 round(linear_layer.weight[:, 1].item(), 3))
    out["nn_fn"] = (type(loss.grad_fn).__name__, type(y_pred.grad_fn).__name__)

    # optim (RMSprop)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3)
    for _t in range(50):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    out["rmsprop"] = round(loss.item(), 1)

    # custom nn Module
    class Polynomial3(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Parameter(torch.tensor(0.1))
            self.b = torch.nn.Parameter(torch.tensor(0.2))
            self.c = torch.nn.Parameter(torch.tensor(-0.1))
            self.d = torch.nn.Parameter(torch.tensor(0.05))

        def forward(self, x):
            return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

        def string(self):
            return f'y = {self.a.item()} + {self.b.item()} x + {self.c.item()} x^2 + {self.d.item()} x^3'

    model = Polynomial3()
    criterion = torch.nn.MSELoss(reduction='sum')
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-6)
    for _t in range(100):
        y_pred = model(x)
        loss = criterion(y_pred, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    out["poly3"] = [round(v.item(), 3) for v in model.parameters()]
    out["poly3_named"] = [n for n, _ in model.named_parameters()]
    out["param_repr"] = repr(torch.nn.Parameter(torch.tensor([1.0, 2.0])))
    return out
