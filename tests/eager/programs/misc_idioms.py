"""Idioms scripts share: device selection, cudnn flags, Generators, inference_mode,
testing.assert_close, nn.init, gradient clipping, EMA of weights, einsum-heavy code, the
autograd tutorial, micrograd's comparison with torch, and "what is torch.nn really"."""
import math


def run(torch):
    from ._common import det_input, fill_params, rounded
    nn = torch.nn
    F = torch.nn.functional
    out = {}
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    out["device"] = (str(device), device.type, repr(device), torch.cuda.device_count())
    model = nn.Linear(3, 2).to(device)
    out["param_device"] = str(next(model.parameters()).device)
    g = torch.Generator().manual_seed(0)
    a = torch.rand(3, generator=g)
    g2 = torch.Generator().manual_seed(0)
    out["generator"] = (bool(torch.equal(a, torch.rand(3, generator=g2))), g.initial_seed(), str(g.device))
    torch.manual_seed(5)
    x1 = torch.randn(4)
    torch.manual_seed(5)
    out["manual_seed"] = bool(torch.equal(x1, torch.randn(4)))
    state = torch.get_rng_state()
    r1 = torch.rand(2)
    torch.set_rng_state(state)
    out["rng_state"] = (bool(torch.equal(r1, torch.rand(2))), str(state.dtype))
    with torch.inference_mode():
        y = model(torch.ones(1, 3))
    out["inference_mode"] = (y.requires_grad, torch.is_inference_mode_enabled())
    with torch.inference_mode():
        out["inference_mode_on"] = torch.is_inference_mode_enabled()

    @torch.inference_mode()
    def infer(v):
        return model(v), torch.is_inference_mode_enabled()

    @torch.inference_mode
    def infer_bare(v):
        return model(v), torch.is_inference_mode_enabled()

    out["inference_deco"] = [(r.requires_grad, on) for r, on in (infer(torch.ones(1, 3)), infer_bare(torch.ones(1, 3)))]
    with torch.no_grad():
        out["no_grad"] = (model(torch.ones(1, 3)).requires_grad, torch.is_grad_enabled())
    torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-7]))
    try:
        torch.testing.assert_close(torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.1]))
        out["assert_close"] = "no error"
    except AssertionError as e:
        out["assert_close"] = str(e).splitlines()[0]
    try:
        torch.testing.assert_close(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64))
    except AssertionError as e:
        out["assert_close_dtype"] = str(e).splitlines()[0].replace("eager.", "torch.")

    # nn.init
    w = torch.empty(3, 5)
    nn.init.zeros_(w)
    nn.init.ones_(w)
    nn.init.constant_(w, 0.3)
    nn.init.eye_(w)
    out["eye"] = w.tolist()
    nn.init.dirac_(torch.empty(3, 3, 3))
    out["gains"] = [round(nn.init.calculate_gain(n), 5) for n in ("linear", "relu", "tanh", "sigmoid", "selu")] + \
        [round(nn.init.calculate_gain("leaky_relu", 0.2), 5)]
    for fn in (nn.init.xavier_uniform_, nn.init.xavier_normal_, nn.init.kaiming_uniform_, nn.init.kaiming_normal_,
               nn.init.orthogonal_, nn.init.trunc_normal_, nn.init.uniform_, nn.init.normal_):
        t = fn(torch.empty(4, 6))
        assert t.shape == (4, 6)
    q = nn.init.orthogonal_(torch.empty(4, 6))
    out["orthogonal"] = rounded(q @ q.t(), 3)
    t = nn.init.trunc_normal_(torch.empty(1000), std=0.02, a=-0.04, b=0.04)
    out["trunc"] = bool(t.abs().max() <= 0.04)
    kw = nn.init.kaiming_uniform_(torch.empty(50, 20), a=math.sqrt(5))
    out["kaiming_bound"] = bool(kw.abs().max() <= 1 / math.sqrt(20) + 1e-6)
    out["sparse_init"] = (nn.init.sparse_(torch.empty(10, 4), sparsity=0.5) == 0).sum(0).tolist()

    # clipping
    net = fill_params(torch, nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1)), scale=1.0)
    loss = net(det_input(torch, 5, 4)).pow(2).sum() * 10
    loss.backward()
    total = nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
    out["clip_norm"] = (round(total.item(), 3), round(sum(p.grad.pow(2).sum() for p in net.parameters()).sqrt().item(), 4))
    nn.utils.clip_grad_value_(net.parameters(), clip_value=0.1)
    out["clip_value"] = round(max(p.grad.abs().max().item() for p in net.parameters()), 4)
    vec = nn.utils.parameters_to_vector(net.parameters())
    nn.utils.vector_to_parameters(vec * 2, net.parameters())
    out["vec"] = (tuple(vec.shape), rounded(net[0].bias))

    # EMA of weights
    ema = fill_params(torch, nn.Sequential(nn.Linear(4, 3), nn.Tanh(), nn.Linear(3, 1)), scale=0.5)
    decay = 0.9
    with torch.no_grad():
        for ema_p, p in zip(ema.parameters(), net.parameters()):
            ema_p.mul_(decay).add_(p.detach(), alpha=1 - decay)
        for ema_p, p in zip(ema.parameters(), net.parameters()):
            ema_p.lerp_(p, 0.5)
        for ema_b, b in zip(ema.buffers(), net.buffers()):
            ema_b.copy_(b)
        msd = net.state_dict()
        for k, ema_v in ema.state_dict().items():
            ema_v.copy_(ema_v * decay + (1.0 - decay) * msd[k].detach())
    out["ema"] = rounded(ema[0].weight[0])
    out["lerp"] = torch.lerp(torch.zeros(3), torch.ones(3), torch.tensor([0.0, 0.5, 1.0])).tolist()

    # einsum
    A = det_input(torch, 2, 3, 4)
    B = det_input(torch, 2, 4, 5)
    out["einsum"] = (rounded(torch.einsum("bij,bjk->bik", A, B)[1, 2]), rounded(torch.einsum("bii->b", A[:, :3, :3])),
                     rounded(torch.einsum("i,j->ij", A[0, 0], B[0, 0])[1]), rounded(torch.einsum("...ij->...ji", A)[0, 1]),
                     rounded(torch.einsum("bhqd,bhkd->bhqk", A.unsqueeze(1), A.unsqueeze(1))[0, 0, 1]),
                     rounded(torch.einsum(A[0], [0, 1], B[0], [1, 2], [0, 2])[0]), rounded(torch.einsum("ij->", A[0]), 3))
    Aq = A.clone().requires_grad_()
    torch.einsum("bij,bjk->", Aq, B).backward()
    out["einsum_grad"] = rounded(Aq.grad[1, 0])

    # autograd tutorial
    x = torch.ones(5)
    y = torch.zeros(3)
    w = torch.tensor(det_input(torch, 5, 3).tolist(), requires_grad=True)
    b = torch.tensor([0.1, -0.2, 0.3], requires_grad=True)
    z = torch.matmul(x, w) + b
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y)
    out["grad_fns"] = (type(z.grad_fn).__name__, type(loss.grad_fn).__name__, str(z.grad_fn).split(" ")[0])
    loss.backward()
    out["tut_grads"] = (rounded(w.grad[0]), rounded(b.grad))
    z_det = z.detach()
    out["detach"] = (z_det.requires_grad, z.requires_grad)
    inp = torch.eye(4, 5, requires_grad=True)
    o = (inp + 1).pow(2).t()
    o.backward(torch.ones_like(o), retain_graph=True)
    first = inp.grad.clone()
    o.backward(torch.ones_like(o), retain_graph=True)
    inp.grad.zero_()
    o.backward(torch.ones_like(o))
    out["jacobian_products"] = (first[0].tolist(), inp.grad[0].tolist())

    # micrograd vs torch
    xm = torch.Tensor([-4.0]).double()
    xm.requires_grad = True
    zm = 2 * xm + 2 + xm
    q = zm.relu() + zm * xm
    h = (zm * zm).relu()
    ym = h + q + q * xm
    ym.backward()
    out["micrograd"] = (ym.data.item(), xm.grad.item(), str(xm.dtype))
    am = torch.Tensor([-4.0]).double()
    bm = torch.Tensor([2.0]).double()
    am.requires_grad = True
    bm.requires_grad = True
    c = am + bm
    d = am * bm + bm ** 3
    c = c + c + 1
    c = c + 1 + c + (-am)
    d = d + d * 2 + (bm + am).relu()
    d = d + 3 * d + (bm - am).relu()
    e = c - d
    f = e ** 2
    gm = f / 2.0
    gm = gm + 10.0 / f
    gm.backward()
    out["micrograd2"] = (round(gm.data.item(), 6), round(am.grad.item(), 6), round(bm.grad.item(), 6))

    # what is torch.nn really
    x_train = det_input(torch, 20, 784)
    y_train = torch.arange(20) % 10
    x_train, y_train = map(torch.tensor, (x_train.tolist(), y_train.tolist()))
    n, c = x_train.shape
    out["nn_really_shapes"] = ((n, c), str(x_train.dtype), str(y_train.dtype), y_train.min().item(), y_train.max().item())
    weights = torch.tensor(det_input(torch, 784, 10).tolist()) / math.sqrt(784)
    weights.requires_grad_()
    bias = torch.zeros(10, requires_grad=True)

    def log_softmax(x):
        return x - x.exp().sum(-1).log().unsqueeze(-1)

    def model(xb):
        return log_softmax(xb @ weights + bias)

    def nll(input, target):
        return -input[range(target.shape[0]), target].mean()

    def accuracy(out, yb):
        preds = torch.argmax(out, dim=1)
        return (preds == yb).float().mean()

    bs = 5
    xb = x_train[0:bs]
    preds = model(xb)
    out["nn_really_preds"] = (rounded(preds[0])[:3], tuple(preds.shape))
    loss_func = nll
    yb = y_train[0:bs]
    out["nn_really_loss"] = (round(loss_func(preds, yb).item(), 4), accuracy(preds, yb).item())
    lr = 0.5
    for _epoch in range(2):
        for i in range((n - 1) // bs + 1):
            start_i = i * bs
            end_i = start_i + bs
            xb = x_train[start_i:end_i]
            yb = y_train[start_i:end_i]
            pred = model(xb)
            loss = loss_func(pred, yb)
            loss.backward()
            with torch.no_grad():
                weights -= weights.grad * lr
                bias -= bias.grad * lr
                weights.grad.zero_()
                bias.grad.zero_()
    out["nn_really_trained"] = (round(loss_func(model(xb), yb).item(), 2),
                                round(F.cross_entropy(xb @ weights + bias, yb).item(), 2))

    class Mnist_Logistic(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(784, 10)

        def forward(self, xb):
            return self.lin(xb)

    class Lambda(nn.Module):
        def __init__(self, func):
            super().__init__()
            self.func = func

        def forward(self, x):
            return self.func(x)

    def preprocess(x):
        return x.view(-1, 1, 28, 28)

    cnn = nn.Sequential(
        Lambda(preprocess),
        nn.Conv2d(1, 4, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(4, 4, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(4, 10, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        Lambda(lambda x: x.view(x.size(0), -1)),
    )
    fill_params(torch, cnn)
    opt = torch.optim.SGD(cnn.parameters(), lr=0.1, momentum=0.9)
    for _ in range(2):
        loss = F.cross_entropy(cnn(x_train[:10]), y_train[:10])
        loss.backward()
        opt.step()
        opt.zero_grad()
    out["nn_really_cnn"] = round(loss.item(), 4)
    logistic = fill_params(torch, Mnist_Logistic())
    out["logistic"] = round(F.cross_entropy(logistic(x_train[:5]), y_train[:5]).item(), 4)
    return out
