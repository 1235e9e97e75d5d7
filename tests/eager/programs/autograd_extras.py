"""Custom autograd Functions as the extending-PyTorch tutorial writes them, gradcheck,
WGAN-GP's gradient penalty (autograd.grad with create_graph), hooks, retain_grad."""


def run(torch):
    from ._common import det_input, fill_params, rounded
    nn = torch.nn
    out = {}

    class LinearFunction(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, bias=None):
            ctx.save_for_backward(input, weight, bias)
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    class MulConstant(torch.autograd.Function):
        @staticmethod
        def forward(tensor, constant):
            return tensor * constant

        @staticmethod
        def setup_context(ctx, inputs, output):
            tensor, constant = inputs
            ctx.constant = constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    class MyLinear(nn.Module):
        def __init__(self, input_features, output_features, bias=True):
            super().__init__()
            self.input_features = input_features
            self.output_features = output_features
            self.weight = nn.Parameter(torch.empty(output_features, input_features))
            if bias:
                self.bias = nn.Parameter(torch.empty(output_features))
            else:
                self.register_parameter('bias', None)
            self.weight.data.uniform_(-0.1, 0.1)
            if self.bias is not None:
                self.bias.data.uniform_(-0.1, 0.1)

        def forward(self, input):
            return LinearFunction.apply(input, self.weight, self.bias)

        def extra_repr(self):
            return f'input_features={self.input_features}, output_features={self.output_features}, bias={self.bias is not None}'

    lin = fill_params(torch, MyLinear(3, 2))
    x = det_input(torch, 4, 3).requires_grad_()
    y = lin(x)
    y.sum().backward()
    out["linear_fn"] = (rounded(y[0]), rounded(lin.weight.grad[0]), rounded(x.grad[1]), repr(lin),
                        type(y.grad_fn).__name__)
    inp = (torch.randn(5, 3, dtype=torch.double, requires_grad=True),
           torch.randn(2, 3, dtype=torch.double, requires_grad=True))
    out["gradcheck"] = torch.autograd.gradcheck(LinearFunction.apply, inp, eps=1e-6, atol=1e-4)
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    m = MulConstant.apply(a, 3.0)
    m.sum().backward()
    out["setup_context"] = (m.tolist(), a.grad.tolist())

    # WGAN-GP gradient penalty
    D = fill_params(torch, nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)))
    real = det_input(torch, 3, 4)
    fake = det_input(torch, 3, 4, scale=0.5)
    alpha = torch.full((3, 1), 0.3)
    interpolates = (alpha * real + ((1 - alpha) * fake)).requires_grad_(True)
    d_interpolates = D(interpolates)
    gradients = torch.autograd.grad(outputs=d_interpolates, inputs=interpolates,
                                    grad_outputs=torch.ones_like(d_interpolates),
                                    create_graph=True, retain_graph=True, only_inputs=True)[0]
    gradients = gradients.view(gradients.size(0), -1)
    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * 10
    gradient_penalty.backward()
    out["gp"] = (round(gradient_penalty.item(), 5), rounded(D[0].weight.grad[0], 5))

    # hooks and retain_grad
    seen = []
    v = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = v.register_hook(lambda g: seen.append(g.tolist()) or g * 2)
    w = v * v
    w.retain_grad()
    w.sum().backward()
    h.remove()
    out["hooks"] = (seen, v.grad.tolist(), w.grad.tolist(), w.is_leaf, v.is_leaf, w.grad_fn.name())
    acts = {}
    net = fill_params(torch, nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    def get_activation(name):
        def hook(model, input, output):
            acts[name] = output.detach()
        return hook

    handle = net[0].register_forward_hook(get_activation("fc"))
    grads = {}
    net[0].register_full_backward_hook(lambda mod, gi, go: grads.update(fc=go[0].detach()))
    net(torch.ones(1, 2, requires_grad=True)).sum().backward()
    handle.remove()
    out["module_hooks"] = (rounded(acts["fc"]), rounded(grads["fc"]))
    # jacobian / hessian helpers
    jac = torch.autograd.functional.jacobian(lambda t: t ** 2, torch.tensor([1.0, 2.0]))
    hes = torch.autograd.functional.hessian(lambda t: (t ** 3).sum(), torch.tensor([1.0, 2.0]))
    out["functional"] = (jac.tolist(), hes.tolist())
    return out
