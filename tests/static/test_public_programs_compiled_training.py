"""Training programs as public PyTorch code writes them around `torch.compile`, at tiny sizes:
a minGPT-style model compiled whole (dropout, AdamW weight-decay groups, clip_grad_norm_, a
warmup-cosine lr set by hand in param_groups, gradient accumulation, estimate_loss under
no_grad with eval()/train() switches), a CNN with BatchNorm, a GAN with two optimizers, a
GRU classifier whose forward branches on a config flag and on self.training, and a module
that keeps an EMA in buffers updated in place. Each runs compiled and eagerly from the same
seed; losses, parameters and buffers must agree on the NumPy and native backends."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eager
import eager.nn.functional as F
from eager import nn

BACKENDS = ["numpy", "native"]


def _state(*modules):
    return [t.detach().numpy().copy() for m in modules for t in m.state_dict().values()]


def _same(got, want, tol=2e-5):
    (got_losses, got_state), (want_losses, want_state) = got, want
    np.testing.assert_allclose(got_losses, want_losses, rtol=tol, atol=tol)
    assert len(got_state) == len(want_state)
    for a, b in zip(got_state, want_state):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


class _Block(nn.Module):
    def __init__(self, c, t):
        super().__init__()
        self.ln = nn.LayerNorm(c)
        self.qkv = nn.Linear(c, 3 * c, bias=False)  # a key bias has a zero gradient: Adam would amplify its noise
        self.proj = nn.Linear(c, c)
        self.drop = nn.Dropout(0.1)
        self.register_buffer("mask", eager.tril(eager.ones(t, t)).view(1, t, t))

    def forward(self, x):
        _, t, c = x.size()
        q, k, v = self.qkv(self.ln(x)).split(c, dim=2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c))
        att = att.masked_fill(self.mask[:, :t, :t] == 0, float("-inf"))
        att = self.drop(F.softmax(att, dim=-1))
        return x + self.drop(self.proj(att @ v))


class _TinyGPT(nn.Module):
    def __init__(self, vocab=9, c=8, t=6):
        super().__init__()
        self.wte = nn.Embedding(vocab, c)
        self.wpe = nn.Embedding(t, c)
        self.block = _Block(c, t)
        self.head = nn.Linear(c, vocab, bias=False)
        self.wte.weight = self.head.weight  # weight tying, as nanoGPT

    def forward(self, idx, targets=None):
        pos = eager.arange(0, idx.size(1), dtype=eager.long)
        logits = self.head(self.block(self.wte(idx) + self.wpe(pos)))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)


def _gpt_run(backend):
    eager.manual_seed(0)
    data = eager.randint(0, 9, (80,))
    raw = _TinyGPT()
    decay = [p for p in raw.parameters() if p.dim() >= 2]
    no_decay = [p for p in raw.parameters() if p.dim() < 2]
    opt = eager.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-2, betas=(0.9, 0.95))
    model = eager.compile(raw, backend=backend) if backend else raw

    def batch():
        ix = eager.randint(len(data) - 6, (3,))
        return eager.stack([data[i:i + 6] for i in ix]), eager.stack([data[i + 1:i + 7] for i in ix])

    @eager.no_grad()
    def estimate_loss():
        model.eval()
        out = eager.zeros(2)
        for k in range(2):
            x, y = batch()
            out[k] = model(x, y)[1].item()
        model.train()
        return out.mean().item()

    losses = []
    for it in range(5):
        lr = 1e-2 * (it + 1) / 2 if it < 2 else 1e-3 + 0.5 * (1 + math.cos(math.pi * (it - 2) / 3)) * 9e-3
        for group in opt.param_groups:
            group["lr"] = lr
        if it % 2 == 0:
            losses.append(estimate_loss())
        for _ in range(2):  # gradient accumulation
            x, y = batch()
            loss = model(x, y)[1] / 2
            loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    return losses, _state(raw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mingpt_training_loop_with_compiled_model_matches_eager(backend):
    _same(_gpt_run(backend), _gpt_run(None), tol=1e-4)


def _cnn_run(backend):
    eager.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                      nn.Linear(3 * 3 * 3, 2))
    opt = eager.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    f = eager.compile(step, backend=backend) if backend else step
    evaluate = eager.compile(m, backend=backend) if backend else m
    out = []
    for _ in range(3):
        x, y = eager.randn(4, 1, 6, 6), eager.randint(0, 2, (4,))
        m.train()
        out.append(f(x, y).item())
        m.eval()  # running statistics frozen
        with eager.no_grad():
            out.append(evaluate(x).sum().item())
    return out, _state(m)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cnn_batchnorm_train_and_frozen_eval_match_eager(backend):
    _same(_cnn_run(backend), _cnn_run(None))


def _gan_run(backend):
    eager.manual_seed(0)
    gen = nn.Sequential(nn.Linear(2, 6), nn.LeakyReLU(0.2), nn.Linear(6, 3))
    disc = nn.Sequential(nn.Linear(3, 6), nn.LeakyReLU(0.2), nn.Linear(6, 1))
    opt_g = eager.optim.Adam(gen.parameters(), lr=1e-2, betas=(0.5, 0.999))
    opt_d = eager.optim.Adam(disc.parameters(), lr=1e-2, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()

    def d_step(real, z):
        opt_d.zero_grad()
        fake = gen(z).detach()
        loss = bce(disc(real), eager.ones(real.size(0), 1)) + bce(disc(fake), eager.zeros(real.size(0), 1))
        loss.backward()
        opt_d.step()
        return loss

    def g_step(z):
        opt_g.zero_grad()
        loss = bce(disc(gen(z)), eager.ones(z.size(0), 1))
        loss.backward()
        opt_g.step()
        return loss

    if backend:
        d_step, g_step = eager.compile(d_step, backend=backend), eager.compile(g_step, backend=backend)
    out = []
    for _ in range(4):
        real, z = eager.randn(4, 3) + 1.0, eager.randn(4, 2)
        out += [d_step(real, z).item(), g_step(z).item()]
    return out, _state(gen, disc)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gan_two_optimizers_alternating_match_eager(backend):
    _same(_gan_run(backend), _gan_run(None))


class _GRUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(3, 4, num_layers=2, batch_first=True, dropout=0.2)
        self.fc = nn.Linear(4, 1)
        self.use_last = True  # a config flag the forward branches on

    def forward(self, x):
        out, _ = self.rnn(x)
        out = out[:, -1] if self.use_last else out.mean(1)
        if self.training:
            out = F.dropout(out, 0.1)
        return self.fc(out)


def _gru_run(backend):
    eager.manual_seed(0)
    raw = _GRUNet()
    model = eager.compile(raw, backend=backend) if backend else raw
    opt = eager.optim.RMSprop(model.parameters(), lr=1e-2)
    out = []
    for i in range(4):
        x, y = eager.randn(3, 5, 3), eager.randn(3, 1)
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        out.append(loss.item())
        if i == 1:
            raw.use_last = False  # the flag flips: the compiled forward must follow
    model.eval()
    with eager.no_grad():
        out.append(model(eager.randn(2, 5, 3)).sum().item())
    return out, _state(raw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gru_with_config_flag_and_training_branch_matches_eager(backend):
    _same(_gru_run(backend), _gru_run(None))


class _WithEMA(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("avg", eager.zeros(3))
        self.register_buffer("count", eager.zeros((), dtype=eager.long))

    def forward(self, x):
        y = self.lin(x)
        if self.training:
            with eager.no_grad():
                self.avg.mul_(0.9).add_(y.mean(0), alpha=0.1)
                self.count += 1
        return y - self.avg


def _ema_run(backend):
    eager.manual_seed(0)
    raw = _WithEMA()
    model = eager.compile(raw, backend=backend) if backend else raw
    opt = eager.optim.SGD(model.parameters(), lr=0.1)
    out = []
    for _ in range(4):
        opt.zero_grad()
        loss = model(eager.randn(4, 3)).pow(2).mean()
        loss.backward()
        opt.step()
        out.append(loss.item())
    model.eval()
    out.append(model(eager.ones(1, 3)).sum().item())
    return out, _state(raw)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ema_buffers_updated_in_place_match_eager(backend):
    got, want = _ema_run(backend), _ema_run(None)
    _same(got, want)
    assert int(got[1][1]) == 4  # state_dict: own buffers (avg, count) first; count saw every training call
