"""PyTorch programs as users write them (tutorial classifier over a Dataset and DataLoader, a
TransformerEncoderLayer trained a few steps, an LSTM text model over packed sequences, a
custom autograd.Function, learning-rate schedulers with their state_dict round trip,
checkpoints of model and optimizer, gradient clipping, no_grad and inference_mode, buffers,
named_modules and apply(init), in-place arithmetic), each run once with eager and once with
PyTorch: the values agree within float32 tolerance, and the state_dict keys, printed shapes,
dtypes and reprs are the same (eager's `eager.` prefix read as `torch.`)."""
from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pytest

import eager

torch_ = pytest.importorskip("torch")


# -- helpers the programs share --------------------------------------------------------------------
def fill(torch, module, scale=0.2):
    """Every parameter set from sin(arange): the same numbers in both libraries."""
    with torch.no_grad():
        for i, (_, p) in enumerate(sorted(module.named_parameters(), key=lambda kv: kv[0])):
            n = p.numel()
            p.copy_((torch.arange(n, dtype=torch.float64) * 0.37 + i).sin().reshape(p.shape).to(p.dtype) * scale)
    return module


def data(torch, *shape, scale=1.0, phase=0.0):
    n = math.prod(shape)
    return ((torch.arange(n, dtype=torch.float64) * 0.61 + phase).cos() * scale).float().reshape(shape)


def values(t) -> list:
    return np.asarray(t.detach().cpu().numpy(), dtype=np.float64).reshape(-1).tolist()


def _same(want: Any, got: Any, path: str = "") -> None:
    if isinstance(want, str):
        assert isinstance(got, str) and got.replace("eager.", "torch.") == want, (path, want, got)
    elif isinstance(want, bool) or want is None:
        assert got is want or got == want, (path, want, got)
    elif isinstance(want, float):
        assert isinstance(got, (float, int)), (path, want, got)
        assert got == pytest.approx(want, rel=2e-4, abs=2e-5, nan_ok=True), (path, want, got)
    elif isinstance(want, int):
        assert got == want and not isinstance(got, float), (path, want, got)
    elif isinstance(want, (list, tuple)):
        assert type(got) is type(want) and len(got) == len(want), (path, want, got)
        for i, (w, g) in enumerate(zip(want, got)):
            _same(w, g, f"{path}[{i}]")
    elif isinstance(want, dict):
        assert list(got) == list(want), (path, list(want), list(got))
        for k in want:
            _same(want[k], got[k], f"{path}.{k}")
    else:
        raise TypeError(f"{path}: compare {type(want).__name__}")


# -- the programs ---------------------------------------------------------------------------------
def tutorial_classifier(torch):
    """The 60-minute blitz's shape: a custom Dataset, TensorDataset, DataLoader, a small CNN,
    CrossEntropyLoss, SGD with momentum, a train loop and an evaluation under no_grad."""
    DataLoader, Dataset, TensorDataset = torch.utils.data.DataLoader, torch.utils.data.Dataset, \
        torch.utils.data.TensorDataset
    nn, F = torch.nn, torch.nn.functional
    out: dict = {}

    class Shapes(Dataset):
        def __init__(self, n):
            self.x = data(torch, n, 1, 8, 8)
            self.y = (torch.arange(n) * 7 % 3).long()

        def __len__(self):
            return len(self.y)

        def __getitem__(self, i):
            return self.x[i], self.y[i]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(4, 6, 3)
            self.fc1 = nn.Linear(6 * 1 * 1, 16)
            self.fc2 = nn.Linear(16, 3)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = torch.flatten(x, 1)
            return self.fc2(F.relu(self.fc1(x)))

    net = fill(torch, Net())
    loader = DataLoader(Shapes(20), batch_size=6, shuffle=False, drop_last=False)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    losses, shapes = [], []
    for _epoch in range(2):
        running = 0.0
        for _i, (inputs, labels) in enumerate(loader):
            shapes.append((str(inputs.shape), str(labels.dtype)))
            optimizer.zero_grad()
            loss = criterion(net(inputs), labels)
            loss.backward()
            optimizer.step()
            running += loss.item()
        losses.append(running)
    out["losses"] = losses
    out["shapes"] = shapes[:5]
    out["n_batches"] = len(loader)
    correct = total = 0
    tds = TensorDataset(data(torch, 9, 1, 8, 8, phase=1.0), torch.arange(9) % 3)
    with torch.no_grad():
        for images, labels in DataLoader(tds, batch_size=4):
            outputs = net(images)
            _, predicted = torch.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
            out.setdefault("logits", values(outputs))
    out["accuracy"] = (correct, total)
    out["state_keys"] = list(net.state_dict())
    out["repr"] = repr(net)
    return out


def transformer_encoder(torch):
    """nn.TransformerEncoderLayer (batch_first, norm_first both ways) under a TransformerEncoder,
    a classification head, Adam for a few steps."""
    nn = torch.nn
    out: dict = {}
    for norm_first in (False, True):
        layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                           norm_first=norm_first)
        model = nn.Sequential()
        encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        head = nn.Linear(8, 3)
        fill(torch, encoder)
        fill(torch, head)
        opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-2)
        x = data(torch, 2, 5, 8)
        mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
        y = torch.tensor([0, 2])
        losses = []
        for _ in range(3):
            opt.zero_grad()
            h = encoder(x, src_key_padding_mask=mask)
            loss = nn.functional.cross_entropy(head(h.mean(1)), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        out[f"losses_{norm_first}"] = losses
        out[f"keys_{norm_first}"] = list(encoder.state_dict())[:8]
        out[f"shape_{norm_first}"] = str(h.shape)
        del model
    return out


def lstm_text(torch):
    """An Embedding with padding_idx, pack_padded_sequence into a bidirectional LSTM, the last
    hidden states to a Linear; pad_packed_sequence's output and lengths."""
    nn = torch.nn
    rnn = torch.nn.utils.rnn
    pack_padded_sequence, pad_packed_sequence, pad_sequence = rnn.pack_padded_sequence, rnn.pad_packed_sequence, \
        rnn.pad_sequence
    out: dict = {}

    class TextModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(12, 6, padding_idx=0)
            self.lstm = nn.LSTM(6, 5, num_layers=1, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(10, 2)

        def forward(self, tokens, lengths):
            packed = pack_padded_sequence(self.emb(tokens), lengths, batch_first=True, enforce_sorted=False)
            seq, (h, c) = self.lstm(packed)
            padded, lens = pad_packed_sequence(seq, batch_first=True)
            return self.fc(torch.cat([h[-2], h[-1]], dim=1)), padded, lens

    model = fill(torch, TextModel())
    seqs = [torch.tensor([3, 4, 5, 6]), torch.tensor([7, 8]), torch.tensor([9, 10, 11])]
    tokens = pad_sequence(seqs, batch_first=True, padding_value=0)
    lengths = torch.tensor([len(s) for s in seqs])
    opt = torch.optim.RMSprop(model.parameters(), lr=0.01)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        logits, padded, lens = model(tokens, lengths)
        loss = nn.functional.cross_entropy(logits, torch.tensor([1, 0, 1]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["losses"] = losses
    out["tokens"] = tokens.tolist()
    out["padded"] = (str(padded.shape), lens.tolist(), values(padded[1, 2:]))
    out["emb_pad_row_grad"] = values(model.emb.weight.grad[0])
    out["keys"] = list(model.state_dict())
    return out


def custom_function(torch):
    """A custom autograd.Function (save_for_backward, needs_input_grad, a non-tensor argument,
    mark_non_differentiable), used in a module, checked with gradcheck."""
    out: dict = {}

    class ClampedExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, limit):
            y = x.clamp(max=limit).exp()
            mask = x <= limit
            ctx.save_for_backward(y, mask)
            ctx.mark_non_differentiable(mask)
            return y, mask

        @staticmethod
        def backward(ctx, grad_y, grad_mask):
            y, mask = ctx.saved_tensors
            grad_x = grad_y * y * mask if ctx.needs_input_grad[0] else None
            return grad_x, None

    class Swish(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            s = torch.sigmoid(x)
            ctx.save_for_backward(x, s)
            return x * s

        @staticmethod
        def backward(ctx, g):
            x, s = ctx.saved_tensors
            return g * (s + x * s * (1 - s))

    x = data(torch, 6, scale=2.0).requires_grad_()
    y, mask = ClampedExp.apply(x, 1.0)
    (y.sum() + Swish.apply(x).pow(2).sum()).backward()
    out["y"] = values(y)
    out["mask"] = (mask.tolist(), mask.requires_grad, str(mask.dtype))
    out["grad"] = values(x.grad)
    out["grad_fn"] = type(y.grad_fn).__name__.replace("Backward", "")
    xd = data(torch, 4, scale=1.5).double().requires_grad_()
    out["gradcheck"] = bool(torch.autograd.gradcheck(Swish.apply, (xd,), eps=1e-6, atol=1e-4))
    return out


def schedulers(torch):
    """StepLR, MultiStepLR, CosineAnnealingLR, OneCycleLR, LambdaLR, ExponentialLR and
    ReduceLROnPlateau over a few epochs; each scheduler's state_dict restored into a fresh one
    continues the same learning rates."""
    nn, sched = torch.nn, torch.optim.lr_scheduler
    out: dict = {}
    makers = {
        "step": lambda o: sched.StepLR(o, step_size=2, gamma=0.5),
        "multistep": lambda o: sched.MultiStepLR(o, milestones=[1, 3], gamma=0.1),
        "cosine": lambda o: sched.CosineAnnealingLR(o, T_max=5, eta_min=0.001),
        "onecycle": lambda o: sched.OneCycleLR(o, max_lr=0.5, total_steps=8),
        "lambda": lambda o: sched.LambdaLR(o, lr_lambda=lambda epoch: 0.9 ** epoch),
        "exponential": lambda o: sched.ExponentialLR(o, gamma=0.8),
    }
    for name, make in makers.items():
        model = fill(torch, nn.Linear(2, 1))
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        s = make(opt)
        lrs = []
        for _ in range(4):
            opt.zero_grad()
            model(data(torch, 3, 2)).sum().backward()
            opt.step()
            s.step()
            lrs.append(s.get_last_lr()[0])
        sd = s.state_dict()
        opt2 = torch.optim.SGD(fill(torch, nn.Linear(2, 1)).parameters(), lr=0.1, momentum=0.9)
        opt2.load_state_dict(opt.state_dict())
        s2 = make(opt2)
        s2.load_state_dict(sd)
        for o, sc in ((opt, s), (opt2, s2)):
            o.step()
            sc.step()
        lrs.append((s.get_last_lr()[0], s2.get_last_lr()[0], opt2.param_groups[0]["lr"]))
        out[name] = lrs
        out[name + "_keys"] = sorted(k for k in sd if not callable(sd[k]) and k != "lr_lambdas")
    model = fill(torch, nn.Linear(2, 1))
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    plateau = sched.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1)
    lrs = []
    for val_loss in [1.0, 0.9, 0.95, 0.97, 0.99, 0.5, 0.6, 0.7]:
        plateau.step(val_loss)
        lrs.append(opt.param_groups[0]["lr"])
    out["plateau"] = lrs
    out["plateau_state"] = (plateau.state_dict()["num_bad_epochs"], plateau.state_dict()["best"])
    return out


def checkpoint_and_clipping(torch):
    """A checkpoint of model, optimizer and epoch through torch.save/torch.load, training
    resumed from it; clip_grad_norm_ and clip_grad_value_; no_grad and inference_mode;
    register_buffer, named_modules, apply(init), in-place arithmetic."""
    nn = torch.nn
    out: dict = {}

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4, bias=False)  # (a bias before batch norm would get only rounding noise)
            self.bn = nn.BatchNorm1d(4)
            self.register_buffer("calls", torch.zeros(1))
            self.register_buffer("scratch", torch.ones(2), persistent=False)

        def forward(self, x):
            self.calls += 1
            return torch.relu(self.bn(self.lin(x)))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block(), Block()])
            self.head = nn.Linear(4, 1)

        def forward(self, x):
            for b in self.blocks:
                x = x + b(x)
            return self.head(x)

    def init_weights(m):
        if isinstance(m, nn.Linear):
            with torch.no_grad():
                m.weight.copy_(torch.linspace(-0.5, 0.5, m.weight.numel()).reshape(m.weight.shape))
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm1d):
            nn.init.ones_(m.weight)
            nn.init.constant_(m.bias, 0.1)

    model = Model()
    model.apply(init_weights)
    out["modules"] = [(name, type(m).__name__) for name, m in model.named_modules()]
    out["buffers"] = [name for name, _ in model.named_buffers()]
    out["state_keys"] = list(model.state_dict())
    opt = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)
    x, y = data(torch, 6, 4, scale=2.0), data(torch, 6, 1, phase=0.3)
    norms = []
    for _epoch in range(3):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        norms.append(float(nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)))
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.05)
        opt.step()
    out["norms"] = norms
    out["step"] = (type(opt.state[model.head.weight]["step"]).__name__, opt.state[model.head.weight]["step"].item())
    buf = io.BytesIO()
    torch.save({"epoch": 3, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
                "loss": loss.item()}, buf)
    buf.seek(0)
    ckpt = torch.load(buf, weights_only=True)
    model2 = Model()
    opt2 = torch.optim.AdamW(model2.parameters(), lr=0.01, weight_decay=0.1)
    out["load"] = str(model2.load_state_dict(ckpt["model_state_dict"]))
    opt2.load_state_dict(ckpt["optimizer_state_dict"])
    out["ckpt"] = (ckpt["epoch"], sorted(ckpt), sorted(ckpt["optimizer_state_dict"]["state"][0]))
    for m, o in ((model, opt), (model2, opt2)):
        o.zero_grad()
        nn.functional.mse_loss(m(x), y).backward()
        o.step()
    out["resumed"] = (values(model.head.weight), values(model2.head.weight))
    out["running"] = [values(b) for name, b in model.named_buffers() if "running" in name]
    model.eval()
    with torch.no_grad():
        pred = model(x)
        out["no_grad"] = (pred.requires_grad, values(pred))
    with torch.inference_mode():
        pred2 = model(x)
        out["inference"] = (pred2.requires_grad, bool(torch.equal(pred, pred2)))
    out["calls"] = values(model.blocks[0].calls)
    t = data(torch, 2, 3)
    t.mul_(2).add_(1).clamp_(min=-0.5, max=2.5)
    t[0] += 10
    t[:, 1] *= -1
    t.div_(torch.tensor([1.0, 2.0, 4.0]))
    t.masked_fill_(t > 5, 0.0)
    out["inplace"] = values(t)
    return out


def data_utils(torch):
    """torch.utils.data as scripts use it: a dataset of dicts, drop_last, Subset, ConcatDataset,
    random_split by fractions, samplers, custom collate_fn, batch_size=None, an
    IterableDataset, default_collate's dtypes."""
    du = torch.utils.data
    out = {}
    class DictDS(du.Dataset):
        def __len__(self): return 7
        def __getitem__(self, i):
            return {"x": torch.full((2,), float(i)), "y": i % 2, "name": f"s{i}", "t": (i, float(i))}
    dl = du.DataLoader(DictDS(), batch_size=3, drop_last=True)
    b = next(iter(dl))
    out["dict_batch"] = (sorted(b), str(b["x"].shape), b["y"].tolist(), str(b["y"].dtype), b["name"],
                         [str(type(v).__name__) for v in b["t"]], str(b["t"][1].dtype))
    out["len"] = (len(dl), len(du.DataLoader(DictDS(), batch_size=3)))
    tds = du.TensorDataset(torch.arange(10).float(), torch.arange(10) % 3)
    sub = du.Subset(tds, [1, 3, 5])
    cat = du.ConcatDataset([sub, tds])
    out["concat"] = (len(cat), cat[4][0].item(), type(cat[0][1]).__name__)
    parts = du.random_split(tds, [0.6, 0.4], generator=torch.Generator().manual_seed(0))
    out["split"] = [len(p) for p in parts]
    parts = du.random_split(tds, [7, 3])
    out["split2"] = [len(p) for p in parts]
    bs = list(du.BatchSampler(du.SequentialSampler(range(7)), batch_size=3, drop_last=False))
    out["batch_sampler"] = bs
    def collate(batch):
        xs, ys = zip(*batch)
        return torch.stack(xs), torch.tensor(ys)
    dl2 = du.DataLoader(tds, batch_size=4, collate_fn=collate)
    out["collate"] = [(str(x.shape), y.tolist()) for x, y in dl2]
    dl3 = du.DataLoader(tds, batch_size=None)
    first = next(iter(dl3))
    out["no_batch"] = (str(first[0].shape), first[0].item())
    ws = du.WeightedRandomSampler([0.1, 0.9], num_samples=5, replacement=True)
    out["wrs_len"] = len(ws)
    class It(du.IterableDataset):
        def __iter__(self):
            return iter(range(5))
    out["iterable"] = [b.tolist() for b in du.DataLoader(It(), batch_size=2)]
    dl4 = du.DataLoader(tds, batch_size=4, sampler=du.SubsetRandomSampler([0, 1]))
    out["sampler_len"] = len(dl4)
    out["default_collate"] = str(du.default_collate([np.array([1.0, 2.0]), np.array([3.0, 4.0])]).dtype)
    out["collate_np_scalar"] = str(du.default_collate([np.float64(1.0), np.float64(2.0)]).dtype)
    out["collate_ints"] = str(du.default_collate([1, 2]).dtype)
    out["collate_floats"] = str(du.default_collate([1.0, 2.0]).dtype)
    out["collate_bool"] = str(du.default_collate([True, False]).dtype)
    return out

def model_utils(torch):
    """load_state_dict with strict=False and its errors, parameters_to_vector, freezing,
    dtype conversions, param groups added, the optimizer's repr, zero_grad."""
    nn = torch.nn
    out = {}
    model = fill(torch, nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)))
    sd = model.state_dict()
    sd2 = {k: v for k, v in sd.items() if k != "2.bias"}
    sd2["extra.weight"] = torch.zeros(1)
    res = model.load_state_dict(sd2, strict=False)
    out["incompat"] = (res.missing_keys, res.unexpected_keys, str(res))
    try:
        model.load_state_dict(sd2)
    except RuntimeError as e:
        out["strict_err"] = str(e).split("\n")[0]
    try:
        bad = dict(sd)
        bad["0.weight"] = torch.zeros(2, 2)
        model.load_state_dict(bad)
    except RuntimeError as e:
        out["shape_err"] = str(e).replace("\t", " ").split("\n")[1][:120]
    v = nn.utils.parameters_to_vector(model.parameters())
    out["p2v"] = (str(v.shape), values(v)[:3])
    nn.utils.vector_to_parameters(v * 2, model.parameters())
    out["v2p"] = values(model[0].bias)
    for p in model[0].parameters():
        p.requires_grad_(False)
    out["trainable"] = sum(p.numel() for p in model.parameters() if p.requires_grad)
    out["children"] = [n for n, _ in model.named_children()]
    m64 = model.to(torch.float64)
    out["dtype"] = str(next(m64.parameters()).dtype)
    out["double"] = str(model.double()[0].weight.dtype)
    out["float"] = str(model.float()[0].weight.dtype)
    opt = torch.optim.SGD([{"params": model[0].parameters(), "lr": 0.01}, {"params": model[2].parameters()}], lr=0.1,
                          momentum=0.9)
    opt.add_param_group({"params": [nn.Parameter(torch.ones(2))], "lr": 0.5})
    out["groups"] = [(g["lr"], len(g["params"]), g["momentum"]) for g in opt.param_groups]
    out["opt_repr"] = repr(opt)
    out["sd_groups"] = opt.state_dict()["param_groups"][1]
    x = data(torch, 2, 3)
    out["half"] = str(model.half()[0].weight.dtype)
    model.float()
    out["zero_grad"] = model[2].weight.grad is None
    model(x).sum().backward()
    model.zero_grad()
    out["after_zero_grad"] = model[2].weight.grad is None
    model.zero_grad(set_to_none=False)
    out["mods"] = [type(m).__name__ for m in model.modules()]
    out["train"] = (model.training, model.eval().training, model[0].training)
    out["param_names"] = [n for n, _ in model.named_parameters()]
    out["buffers"] = list(nn.BatchNorm1d(2).state_dict())
    out["get_submodule"] = type(model.get_submodule("2")).__name__
    out["extra"] = nn.Linear(2, 3).extra_repr()
    return out

def tensor_ops(torch):
    """The tensor operations scripts use most, their values, dtypes, shapes and reprs."""
    out = {}
    x = data(torch, 3, 4)
    idx = torch.tensor([[0, 1], [2, 3], [1, 1]])
    out["gather"] = values(x.gather(1, idx))
    z = torch.zeros(3, 4).scatter_add_(1, idx, torch.ones(3, 2))
    out["scatter_add"] = values(z)
    v, i = x.topk(2, dim=1)
    out["topk"] = (values(v), i.tolist())
    out["argsort"] = x.argsort(dim=1, descending=True).tolist()
    out["cumsum"] = values(x.cumsum(0))
    out["einsum"] = values(torch.einsum("ij,kj->ik", x, x))
    out["nonzero"] = (x > 0).nonzero().tolist()
    u, inv, cnt = torch.unique(torch.tensor([3, 1, 3, 2, 1]), return_inverse=True, return_counts=True)
    out["unique"] = (u.tolist(), inv.tolist(), cnt.tolist())
    out["bincount"] = torch.bincount(torch.tensor([0, 2, 2, 5])).tolist()
    out["one_hot"] = torch.nn.functional.one_hot(torch.tensor([0, 2]), num_classes=4).tolist()
    out["masked_select"] = values(x.masked_select(x > 0.5))
    out["where"] = values(torch.where(x > 0, x, torch.zeros_like(x)))
    out["clamp"] = values(x.clamp(-0.5, 0.5))
    out["norm"] = (x.norm().item(), values(x.norm(dim=1)), values(torch.linalg.vector_norm(x, ord=1, dim=0)))
    out["std"] = (x.std().item(), values(x.var(dim=0, unbiased=False)))
    out["max"] = (x.max().item(), values(x.max(dim=1).values), x.max(dim=1).indices.tolist(), x.argmax().item())
    out["chunk"] = [str(c.shape) for c in x.chunk(3, dim=1)]
    out["split"] = [str(c.shape) for c in x.split([1, 3], dim=1)]
    out["view"] = (str(x.view(-1, 2).shape), str(x.t().contiguous().view(4, 3).shape), x.is_contiguous(),
                   x.t().is_contiguous())
    out["repeat"] = (str(x.repeat(2, 1).shape), str(x.repeat_interleave(2, dim=0).shape),
                     str(x.unsqueeze(0).expand(2, -1, -1).shape))
    out["flip"] = values(x.flip(0)[0])
    out["roll"] = values(x.roll(1, dims=1)[0])
    out["tril"] = values(torch.tril(x))
    out["diag"] = values(torch.diag(x[:3, :3]))
    out["lin"] = (values(torch.linspace(0, 1, 5)), torch.arange(0, 1, 0.25).tolist(), values(torch.logspace(0, 2, 3)))
    out["cat"] = str(torch.cat([x, x], dim=0).shape)
    out["stack"] = str(torch.stack([x, x], dim=1).shape)
    out["sort"] = (values(x.sort(dim=0).values), x.sort(dim=0).indices.tolist())
    out["allclose"] = (torch.allclose(x, x + 1e-9), torch.equal(x, x.clone()))
    out["item_types"] = (type(x.sum().item()).__name__, type(torch.tensor(3).item()).__name__, type(x.shape[0]).__name__)
    out["int_div"] = (torch.tensor([5, -5]) // 2).tolist()
    out["true_div"] = str((torch.tensor([5, 6]) / 2).dtype)
    out["mixed"] = str((torch.tensor([1, 2]) * 1.5).dtype)
    out["prod"] = (torch.tensor([[1, 2], [3, 4]]).prod(1).tolist(), str(torch.tensor([1, 2]).sum().dtype))
    out["mean_int_err"] = None
    try:
        torch.tensor([1, 2]).mean()
    except RuntimeError as e:
        out["mean_int_err"] = str(e)[:60]
    out["amax"] = values(x.amax(dim=(0, 1), keepdim=True))
    out["baddbmm"] = values(torch.baddbmm(torch.zeros(2, 3, 3), data(torch, 2, 3, 4), data(torch, 2, 4, 3)))
    out["outer"] = values(torch.outer(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])))
    out["cdist"] = values(torch.cdist(x, x))
    out["trapz"] = torch.trapezoid(torch.tensor([1.0, 2.0, 3.0])).item()
    out["round"] = values(torch.round(torch.tensor([0.5, 1.5, 2.5, -0.5])))
    out["sign"] = values(torch.sign(torch.tensor([-2.0, 0.0, 3.0])))
    out["isin"] = torch.isin(torch.tensor([1, 2, 3]), torch.tensor([2, 5])).tolist()
    out["searchsorted"] = torch.searchsorted(torch.tensor([1, 3, 5, 7]), torch.tensor([3, 6])).tolist()
    out["bucketize"] = torch.bucketize(torch.tensor([0.5, 3.0, 9.0]), torch.tensor([1.0, 3.0, 5.0])).tolist()
    out["meshgrid"] = [str(g.shape) for g in torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")]
    out["kthvalue"] = (values(x.kthvalue(2, dim=1).values), x.kthvalue(2, dim=1).indices.tolist())
    out["mode"] = torch.tensor([1, 2, 2, 3]).mode().values.item()
    out["median"] = (x.median().item(), values(x.median(dim=1).values))
    out["nan"] = (torch.tensor([1.0, float("nan")]).nansum().item(), torch.tensor([1.0, float("nan"), 3.0]).nanmean().item())
    out["to_list"] = torch.tensor([[1.5, 2.0]]).tolist()
    out["repr"] = repr(torch.tensor([1.5, 2.0]))
    out["repr2"] = repr(torch.tensor([[1, 2], [3, 4]]))
    out["repr3"] = repr(torch.tensor([1e-8, 1.0]))
    out["repr4"] = repr(torch.zeros(2, requires_grad=True) * 2)
    return out

def autograd_misc(torch):
    """Double backward, hooks, retain_grad, vector backward and its error, grad modes,
    jacobian and hessian, detach sharing memory, .numpy() of a tensor that requires grad."""
    out = {}
    x = data(torch, 3, 4).requires_grad_()
    y = (x ** 2).sum(dim=1)
    g, = torch.autograd.grad(y.sum(), x, create_graph=True)
    gg, = torch.autograd.grad(g.sum(), x)
    out["double"] = values(gg)
    w = torch.ones(4, requires_grad=True)
    h = w.register_hook(lambda grad: grad * 2)
    (x.detach() @ w).sum().backward()
    out["hook"] = values(w.grad)
    h.remove()
    out["retain"] = None
    z = x * 2
    z.retain_grad()
    z.sum().backward()
    out["retain"] = values(z.grad)
    out["leaf"] = (x.is_leaf, z.is_leaf, z.grad_fn is not None, type(z.grad_fn).__name__)
    a = torch.ones(2, requires_grad=True)
    b = a * 3
    b.backward(torch.tensor([1.0, 0.5]))
    out["vec_backward"] = values(a.grad)
    try:
        (a * 2).backward()
    except RuntimeError as e:
        out["scalar_err"] = str(e)
    with torch.enable_grad():
        pass
    out["set_grad"] = torch.is_grad_enabled()
    with torch.set_grad_enabled(False):
        out["disabled"] = (a * 2).requires_grad
    jac = torch.autograd.functional.jacobian(lambda t: t ** 2, torch.tensor([1.0, 2.0]))
    out["jac"] = values(jac)
    hess = torch.autograd.functional.hessian(lambda t: (t ** 3).sum(), torch.tensor([1.0, 2.0]))
    out["hess"] = values(hess)
    d = torch.ones(3, requires_grad=True)
    e = d.detach()
    e.add_(1)
    out["detach_shares"] = values(d)
    f = torch.tensor([1.0, 2.0], requires_grad=True)
    out["numpy_err"] = None
    try:
        f.numpy()
    except RuntimeError as err:
        out["numpy_err"] = str(err)
    return out


def more_schedulers(torch):
    """CyclicLR, CosineAnnealingWarmRestarts, LinearLR, ConstantLR, PolynomialLR, SequentialLR,
    ChainedScheduler, MultiplicativeLR, a three-phase linear OneCycleLR: learning rates,
    cycled momentum and state_dict keys."""
    nn, S = torch.nn, torch.optim.lr_scheduler
    out = {}
    makers = {
        "cyclic": lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2),
        "warm": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
        "linear": lambda o: S.LinearLR(o, start_factor=0.25, total_iters=3),
        "constant": lambda o: S.ConstantLR(o, factor=0.5, total_iters=2),
        "poly": lambda o: S.PolynomialLR(o, total_iters=4, power=2.0),
        "seq": lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=2),
                                            S.ExponentialLR(o, gamma=0.9)], milestones=[2]),
        "chained": lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=2), S.ExponentialLR(o, gamma=0.9)]),
        "mult": lambda o: S.MultiplicativeLR(o, lr_lambda=lambda e: 0.95),
        "onecycle_lin": lambda o: S.OneCycleLR(o, max_lr=0.3, total_steps=6, anneal_strategy="linear", three_phase=True),
    }
    for name, make in makers.items():
        p = nn.Parameter(torch.ones(2))
        opt = torch.optim.SGD([p], lr=0.1, momentum=0.9)
        s = make(opt)
        lrs = [opt.param_groups[0]["lr"]]
        for _ in range(6):
            opt.step()
            s.step()
            lrs.append(round(opt.param_groups[0]["lr"], 10))
        out[name] = (lrs, [round(v, 10) for v in s.get_last_lr()], opt.param_groups[0].get("momentum"))
        sd = s.state_dict()
        out[name + "_sd"] = sorted(k for k in sd if not k.startswith("_") or k in ("_step_count", "_last_lr"))
    return out

def functional_losses(torch):
    """nn.functional's losses with their options and the functional layers scripts call."""
    F = torch.nn.functional
    out = {}
    x = data(torch, 4, 5)
    t = torch.tensor([1, 0, 4, 2])
    out["ce_opts"] = (F.cross_entropy(x, t, label_smoothing=0.1).item(),
                      F.cross_entropy(x, t, weight=torch.linspace(0.5, 1.5, 5)).item(),
                      F.cross_entropy(x, torch.tensor([1, -100, 4, 2])).item(), values(F.cross_entropy(x, t, reduction="none")))
    probs = torch.softmax(data(torch, 4, 5, phase=1.0), 1)
    out["ce_probs"] = F.cross_entropy(x, probs).item()
    out["nll"] = F.nll_loss(F.log_softmax(x, 1), t).item()
    y = torch.sigmoid(data(torch, 4, 5, phase=2.0))
    out["bce"] = (F.binary_cross_entropy(torch.sigmoid(x), y).item(),
                  F.binary_cross_entropy_with_logits(x, y, pos_weight=torch.ones(5) * 2).item())
    out["kl"] = F.kl_div(F.log_softmax(x, 1), probs, reduction="batchmean").item()
    out["huber"] = (F.huber_loss(x, y, delta=0.5).item(), F.smooth_l1_loss(x, y, beta=0.5).item(), F.l1_loss(x, y).item())
    out["margin"] = F.margin_ranking_loss(x[0], x[1], torch.tensor([1.0, -1, 1, -1, 1])).item()
    out["cos_emb"] = F.cosine_embedding_loss(x[:2], x[2:], torch.tensor([1, -1])).item()
    out["triplet"] = F.triplet_margin_loss(x[0:1], x[1:2], x[2:3]).item()
    out["ce_3d"] = F.cross_entropy(data(torch, 2, 3, 4), torch.tensor([[0, 1, 2, 0], [2, 2, 1, 0]])).item()
    out["normalize"] = values(F.normalize(x, dim=1)[0])
    out["pad"] = (str(F.pad(x, (1, 2)).shape), str(F.pad(x.unsqueeze(0), (1, 1, 2, 0), mode="reflect").shape))
    out["interp"] = values(F.interpolate(data(torch, 1, 1, 2, 3), scale_factor=2, mode="bilinear", align_corners=False))[:6]
    out["interp_n"] = values(F.interpolate(data(torch, 1, 1, 2, 3), size=(3, 4), mode="nearest"))[:6]
    out["unfold"] = str(F.unfold(data(torch, 1, 2, 4, 4), kernel_size=2, stride=2).shape)
    out["embed"] = values(F.embedding(torch.tensor([0, 2]), data(torch, 3, 2)))
    out["dropout_eval"] = values(F.dropout(x, 0.5, training=False))[:3]
    out["gelu"] = values(F.gelu(x, approximate="tanh"))[:3]
    out["silu"] = values(F.silu(x))[:3]
    out["softplus"] = values(F.softplus(x, beta=2))[:3]
    out["glu"] = str(F.glu(data(torch, 2, 4)).shape)
    out["one_hot"] = str(F.one_hot(torch.tensor([1, 2])).dtype)
    q, k, v = data(torch, 1, 2, 3, 4), data(torch, 1, 2, 3, 4, phase=1.0), data(torch, 1, 2, 3, 4, phase=2.0)
    out["sdpa"] = values(F.scaled_dot_product_attention(q, k, v, is_causal=True))[:6]
    out["cos_sim"] = values(F.cosine_similarity(x[0:2], x[2:4]))
    out["pdist"] = values(F.pairwise_distance(x[0:2], x[2:4]))
    out["layer_norm"] = values(F.layer_norm(x, (5,)))[:3]
    out["group_norm"] = values(F.group_norm(data(torch, 2, 4, 3), 2))[:3]
    out["avg"] = values(F.avg_pool2d(data(torch, 1, 1, 4, 4), 2))
    out["adaptive"] = values(F.adaptive_avg_pool2d(data(torch, 1, 1, 5, 5), (2, 3)))
    out["max_idx"] = F.max_pool2d(data(torch, 1, 1, 4, 4), 2, return_indices=True)[1].tolist()
    out["conv_t"] = values(F.conv_transpose2d(data(torch, 1, 2, 3, 3), data(torch, 2, 1, 2, 2), stride=2))[:5]
    out["grid"] = values(F.grid_sample(data(torch, 1, 1, 3, 3), data(torch, 1, 2, 2, 2, scale=0.8), align_corners=False))
    out["affine"] = values(F.affine_grid(torch.tensor([[[1.0, 0, 0], [0, 1, 0]]]), [1, 1, 2, 2], align_corners=False))
    return out

def init_and_modules(torch):
    """nn.init, GRU, EmbeddingBag, Upsample, PixelShuffle, MultiheadAttention, container
    editing (insert, append, slices, ModuleDict), cumulative batch-norm averages,
    nn.Transformer with a causal mask."""
    nn = torch.nn
    out = {}
    torch.manual_seed(0)
    w = torch.empty(3, 5)
    nn.init.xavier_uniform_(w)
    out["xavier_bound"] = bool(w.abs().max() <= math.sqrt(6 / 8))
    out["gain"] = (nn.init.calculate_gain("relu"), nn.init.calculate_gain("leaky_relu", 0.2), nn.init.calculate_gain("tanh"))
    nn.init.orthogonal_(w)
    out["orth"] = values((w @ w.t()).round(decimals=4))
    nn.init.eye_(w)
    out["eye"] = values(w)
    out["dirac"] = values(nn.init.dirac_(torch.empty(2, 2, 3))[0])
    out["trunc"] = bool(nn.init.trunc_normal_(torch.empty(100), std=1.0, a=-0.5, b=0.5).abs().max() <= 0.5)
    gru = fill(torch, nn.GRU(3, 4, num_layers=2, batch_first=True))
    o, h = gru(data(torch, 2, 5, 3))
    out["gru"] = (str(o.shape), str(h.shape), values(o[0, -1]), values(h[-1, 0]))
    bag = fill(torch, nn.EmbeddingBag(6, 3, mode="mean"))
    out["bag"] = values(bag(torch.tensor([1, 2, 4, 5, 3]), torch.tensor([0, 2])))
    up = nn.Upsample(scale_factor=2, mode="nearest")
    out["up"] = str(up(data(torch, 1, 1, 2, 2)).shape)
    ps = nn.PixelShuffle(2)
    out["ps"] = values(ps(data(torch, 1, 4, 1, 1)))
    mha = fill(torch, nn.MultiheadAttention(4, 2, batch_first=True))
    a, wts = mha(data(torch, 1, 3, 4), data(torch, 1, 3, 4), data(torch, 1, 3, 4), need_weights=True)
    out["mha"] = (values(a), values(wts), str(wts.shape))
    a2, w2 = mha(data(torch, 1, 3, 4), data(torch, 1, 3, 4), data(torch, 1, 3, 4), average_attn_weights=False)
    out["mha_heads"] = str(w2.shape)
    seq = nn.Sequential(nn.Linear(2, 2))
    seq.append(nn.ReLU())
    seq.insert(0, nn.Identity())
    out["seq"] = ([type(m).__name__ for m in seq], len(seq), type(seq[1:]).__name__, type(seq[-1]).__name__)
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.ReLU()
    out["md"] = (list(md.keys()), len(md), "a" in md)
    bn = nn.BatchNorm1d(3, momentum=None)
    for k in range(3):
        bn(data(torch, 4, 3, phase=k))
    out["bn_cma"] = (values(bn.running_mean), bn.num_batches_tracked.item())
    ln = nn.LayerNorm(3, elementwise_affine=False)
    out["ln_params"] = len(list(ln.parameters()))
    flat = nn.Unflatten(1, (2, 2))
    out["unflat"] = str(flat(data(torch, 3, 4)).shape)
    t = nn.Transformer(d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=8, dropout=0.0,
                       batch_first=True)
    fill(torch, t)
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    out["mask"] = values(mask)
    out["transformer"] = values(t(data(torch, 1, 2, 4), data(torch, 1, 3, 4), tgt_mask=mask))
    return out



def containers(torch):
    """Sequential and ModuleList edited as lists (del renumbers, insert, extend, pop, +, *)."""
    nn = torch.nn
    s = nn.Sequential(nn.Linear(1, 1), nn.ReLU(), nn.Tanh())
    del s[1]
    s.insert(1, nn.Sigmoid())
    s.insert(-1, nn.ELU())
    s.extend([nn.GELU()])
    popped = s.pop(0)
    s2 = s + nn.Sequential(nn.ReLU())
    s3 = 2 * nn.Sequential(nn.ReLU())
    s3 *= 2
    m = nn.ModuleList([nn.ReLU(), nn.Tanh(), nn.ELU()])
    del m[0:2]
    m.insert(0, nn.GELU())
    m[1] = nn.SiLU()
    m += [nn.ReLU()]
    last = m.pop(-1)
    errors = []
    for bad in (lambda: nn.Sequential() * 0, lambda: nn.Sequential() + nn.ModuleList(), lambda: m[5]):
        try:
            bad()
        except (ValueError, IndexError) as e:
            errors.append(type(e).__name__)
    pd = nn.ParameterDict({"a": nn.Parameter(torch.ones(1))})
    pd.setdefault("b", nn.Parameter(torch.zeros(2)))
    key, _ = pd.popitem()
    return {"seq": (list(s._modules), [type(q).__name__ for q in s], type(popped).__name__, len(s2), list(s3._modules)),
            "list": (list(m._modules), [type(q).__name__ for q in m], type(last).__name__, type(m + [nn.ReLU()]).__name__),
            "errors": errors, "pdict": (key, list(pd.keys()), list(reversed(pd)))}


def hooks_and_utils(torch):
    """Forward, pre-forward and full backward hooks (their arguments), hook removal,
    weight_norm and spectral_norm parametrizations, clip_grad_norm_ with the inf norm,
    get_total_norm, non-persistent buffers, named_parameters' recurse and prefix."""
    nn = torch.nn
    out = {}
    model = fill(torch, nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)))
    feats = {}
    def fwd_hook(m, inp, outp):
        feats["relu"] = (type(inp).__name__, len(inp), str(outp.shape))
    h1 = model[1].register_forward_hook(fwd_hook)
    pre = model[0].register_forward_pre_hook(lambda m, inp: (inp[0] * 2,))
    grads = {}
    def bwd_hook(m, gin, gout):
        grads["lin"] = (type(gin).__name__, len(gin), [None if g is None else str(g.shape) for g in gin], str(gout[0].shape))
    h2 = model[2].register_full_backward_hook(bwd_hook)
    x = data(torch, 5, 3).requires_grad_()
    y = model(x)
    y.sum().backward()
    out["feats"] = feats
    out["grads"] = grads
    out["y"] = values(y)
    for h in (h1, pre, h2):
        h.remove()
    out["after_remove"] = values(model(data(torch, 1, 3)))
    lin = fill(torch, nn.Linear(3, 2))
    wn = nn.utils.parametrizations.weight_norm(lin)
    out["wn_params"] = sorted(n for n, _ in wn.named_parameters())
    out["wn_out"] = values(wn(data(torch, 2, 3)))
    sn = nn.utils.parametrizations.spectral_norm(fill(torch, nn.Linear(3, 3)))
    out["sn_keys"] = sorted(sn.state_dict())
    model.zero_grad()
    model(data(torch, 4, 3)).sum().backward()
    out["clip_inf"] = float(nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0, norm_type=float("inf")))
    out["grad_after"] = values(model[0].weight.grad)[:4]
    out["get_total_norm"] = float(nn.utils.get_total_norm([p.grad for p in model.parameters()]))
    m2 = nn.Linear(2, 2)
    m2.register_buffer("running", torch.ones(2), persistent=False)
    out["np_buffers"] = (list(m2.state_dict()), [n for n, _ in m2.named_buffers()])
    out["recurse"] = [n for n, _ in model.named_parameters(recurse=False)]
    out["prefix"] = [n for n, _ in model.named_parameters(prefix="net")][:2]
    return out

def amp_and_misc(torch):
    """GradScaler disabled on the CPU, type predicates, generators, default dtype, finfo/iinfo,
    promotion, devices, NumPy round trips, dtype conversions, reprs and print options."""
    nn = torch.nn
    out = {}
    model = fill(torch, nn.Linear(4, 3))
    x = data(torch, 2, 4)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss = model(x).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    out["scaled"] = values(model.bias)
    out["is_tensor"] = (torch.is_tensor(x), torch.is_floating_point(x), torch.numel(x))
    g = torch.Generator().manual_seed(42)
    out["gen"] = (len(torch.randperm(5, generator=g)), str(torch.rand(2, generator=g).dtype))
    out["default_dtype"] = str(torch.get_default_dtype())
    out["finfo"] = (torch.finfo(torch.float32).eps, torch.finfo(torch.float16).max, torch.iinfo(torch.int8).min)
    out["promote"] = (str(torch.promote_types(torch.int32, torch.float16)), str(torch.result_type(torch.tensor([1]), 1.0)))
    out["device"] = (str(x.device), x.is_cuda, str(torch.device("cpu")), torch.cuda.is_available())
    out["numpy_roundtrip"] = (str(torch.from_numpy(np.arange(3)).dtype), str(torch.as_tensor(np.float32(2)).dtype),
                              torch.tensor(np.array([1, 2])).tolist())
    out["dtypes"] = (str(torch.tensor([1, 2]).dtype), str(torch.tensor([1.0]).dtype), str(torch.tensor([True]).dtype),
                     str(torch.tensor(3.0, dtype=torch.float64).dtype))
    out["size"] = (tuple(x.size()), x.size(1), x.dim(), x.nelement(), x.element_size(), str(x.shape))
    out["contig"] = (x.t().is_contiguous(), x.t().contiguous().stride(), x.stride())
    out["type_conv"] = (str(x.long().dtype), str(x.half().dtype), str(x.to(torch.int32).dtype),
                        str(x.type(torch.float64).dtype), x.type())
    out["clone_detach"] = (x.clone().detach().requires_grad, x.requires_grad_().detach().is_leaf)
    out["inference"] = None
    with torch.inference_mode():
        t = torch.ones(2)
    out["inference"] = (t.requires_grad, torch.is_inference_mode_enabled())
    out["printoptions"] = None
    torch.set_printoptions(precision=2)
    out["printoptions"] = repr(torch.tensor([1.23456, 2.0]))
    torch.set_printoptions(profile="default")
    out["repr_big"] = repr(torch.arange(2000.)).replace("\n", "|")[:200]
    out["repr_int"] = repr(torch.arange(3, dtype=torch.int32))
    out["repr_bool"] = repr(torch.tensor([True, False]))
    out["repr_empty"] = repr(torch.zeros(0, 3))
    out["repr_f64"] = repr(torch.tensor([1.5], dtype=torch.float64))
    out["str_param"] = str(nn.Parameter(torch.ones(2)))
    return out

def save_load(torch):
    """torch.save/torch.load of a state_dict, of nested containers (weights_only), and of
    tensors sharing storage (shared again after loading)."""
    nn = torch.nn
    out = {}
    model = fill(torch, nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 2)))
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf)
    out["keys"] = list(sd)
    out["types"] = [str(v.dtype) for v in sd.values()]
    buf = io.BytesIO()
    torch.save({"t": torch.arange(3), "list": [torch.ones(1), 2], "s": "x", "nested": {"a": torch.zeros(2, 2)}}, buf)
    buf.seek(0)
    obj = torch.load(buf, weights_only=True)
    out["obj"] = (obj["t"].tolist(), obj["list"][1], obj["s"], str(obj["nested"]["a"].shape))
    v = torch.arange(6.0)
    buf = io.BytesIO()
    torch.save([v, v[2:4]], buf)
    buf.seek(0)
    a, b = torch.load(buf)
    a[2] = 100
    out["shared_storage"] = b.tolist()
    return out


def gan_vae(torch):
    """A GAN step (two Adam optimizers, detach for the discriminator) and a VAE step
    (reparameterization, summed BCE plus the KL term)."""
    nn, F = torch.nn, torch.nn.functional
    out = {}
    G = fill(torch, nn.Sequential(nn.Linear(2, 8), nn.LeakyReLU(0.2), nn.Linear(8, 3), nn.Tanh()))
    D = fill(torch, nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)))
    optG = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optD = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    crit = nn.BCEWithLogitsLoss()
    real = data(torch, 4, 3)
    z = data(torch, 4, 2, phase=0.5)
    hist = []
    for _ in range(3):
        optD.zero_grad()
        fake = G(z)
        lossD = crit(D(real), torch.ones(4, 1)) + crit(D(fake.detach()), torch.zeros(4, 1))
        lossD.backward()
        optD.step()
        optG.zero_grad()
        lossG = crit(D(fake), torch.ones(4, 1))
        lossG.backward()
        optG.step()
        hist.append((lossD.item(), lossG.item()))
    out["gan"] = hist

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(6, 8)
            self.mu = nn.Linear(8, 2)
            self.logvar = nn.Linear(8, 2)
            self.dec = nn.Linear(2, 6)

        def forward(self, x, eps):
            h = F.relu(self.enc(x))
            mu, logvar = self.mu(h), self.logvar(h)
            zz = mu + eps * torch.exp(0.5 * logvar)
            return torch.sigmoid(self.dec(zz)), mu, logvar

    vae = fill(torch, VAE())
    opt = torch.optim.Adam(vae.parameters(), lr=1e-2)
    x = torch.sigmoid(data(torch, 5, 6))
    eps = data(torch, 5, 2, phase=1.3)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        recon, mu, logvar = vae(x, eps)
        bce = F.binary_cross_entropy(recon, x, reduction="sum")
        kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = bce + kld
        loss.backward()
        opt.step()
        losses.append(loss.item())
    out["vae"] = losses
    return out

def accumulation_and_tying(torch):
    """A GRU language model with tied embedding and output weights, gradient accumulation
    with clipping and Nesterov SGD; distributions (Normal, Categorical, kl_divergence)."""
    nn, F = torch.nn, torch.nn.functional
    out = {}

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.drop = nn.Dropout(0.5)
            self.rnn = nn.GRU(4, 4, batch_first=True)
            self.head = nn.Linear(4, 10, bias=False)
            self.head.weight = self.emb.weight

        def forward(self, idx):
            h, _ = self.rnn(self.drop(self.emb(idx)))
            return self.head(h)

    lm = fill(torch, LM())
    lm.eval()
    out["tied"] = (lm.head.weight is lm.emb.weight, len(list(lm.parameters())), list(lm.state_dict())[:3])
    opt = torch.optim.SGD(lm.parameters(), lr=0.5, momentum=0.9, nesterov=True, weight_decay=1e-3)
    idx = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    accum = 2
    losses = []
    for step in range(4):
        logits = lm(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 10), idx[:, 1:].reshape(-1)) / accum
        loss.backward()
        losses.append(loss.item())
        if (step + 1) % accum == 0:
            torch.nn.utils.clip_grad_norm_(lm.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
    out["losses"] = losses
    out["emb"] = values(lm.emb.weight[1])
    dist = torch.distributions.Normal(torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]))
    out["normal"] = (values(dist.log_prob(torch.tensor([0.5, 0.5]))), values(dist.entropy()),
                     values(dist.cdf(torch.tensor([0.0, 1.0]))))
    cat = torch.distributions.Categorical(logits=torch.tensor([0.0, 1.0, 2.0]))
    out["cat"] = (values(cat.probs), cat.log_prob(torch.tensor(1)).item(), cat.entropy().item())
    kl = torch.distributions.kl_divergence(dist, torch.distributions.Normal(torch.zeros(2), torch.ones(2)))
    out["kl"] = values(kl)
    return out


def transfer_learning(torch):
    """Fine-tuning idioms: a pretrained-style model whose first conv and head are replaced
    (their places in state_dict and named_parameters kept), the backbone frozen, an optimizer
    over the trainable parameters; get_parameter, get_buffer and set_submodule."""
    nn = torch.nn
    out: dict = {}

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, 3)
            self.bn1 = nn.BatchNorm2d(4)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(4, 10)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(torch.relu(self.bn1(self.conv1(x)))), 1))

    model = Backbone()
    model.conv1 = nn.Conv2d(1, 4, 3, bias=False)
    model.fc = nn.Linear(model.fc.in_features, 2)
    fill(torch, model)
    for name, p in model.named_parameters():
        p.requires_grad = name.startswith("fc")
    out["keys"] = list(model.state_dict())
    out["trainable"] = [n for n, p in model.named_parameters() if p.requires_grad]
    opt = torch.optim.Adam(filter(lambda p: p.requires_grad, model.parameters()), lr=0.01)
    x = data(torch, 2, 1, 5, 5)
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), torch.tensor([0, 1]))
        loss.backward()
        opt.step()
    out["loss"] = loss.item()
    out["frozen_grad"] = model.conv1.weight.grad is None
    out["get"] = (str(model.get_parameter("fc.weight").shape), values(model.get_buffer("bn1.running_mean")))
    model.set_submodule("pool", nn.AdaptiveMaxPool2d(1))
    out["modules"] = [n for n, _ in model.named_children()]
    out["repr"] = repr(model)
    return out


PROGRAMS = [tutorial_classifier, transformer_encoder, lstm_text, custom_function, schedulers,
            checkpoint_and_clipping, data_utils, model_utils, tensor_ops, autograd_misc, more_schedulers,
            functional_losses, init_and_modules, containers, hooks_and_utils, amp_and_misc, save_load,
            gan_vae, accumulation_and_tying, transfer_learning]


@pytest.fixture(autouse=True, scope="module")
def _torch_on_one_thread():
    """PyTorch's intra-op threads spin on a loaded two-core host (seconds for these small
    programs): one thread while the oracle runs, as it was after."""
    threads = torch_.get_num_threads()
    torch_.set_num_threads(1)
    yield
    torch_.set_num_threads(threads)


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda f: f.__name__)
def test_program_matches_pytorch(program):
    want = program(torch_)
    got = program(eager)
    _same(want, got)
