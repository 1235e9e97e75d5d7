"""W5 tiny GPT training step: vocabulary 65, context 32, width 64, 4 heads, 2 pre-LayerNorm
blocks, MLP ratio 4 with GELU, biases on, no weight tying, batch 16, dropout 0.1, AdamW
(lr 1e-3, weight decay 0.01), cross-entropy over all positions.

An eager training step with a small API that tests and benchmarks import:

    model = make_model(); opt = make_optimizer(model)
    loss = train_step(model, opt, make_batch(seed=0))
"""
from __future__ import annotations

import math

import _training  # the step W5 and W6 share (this directory is on sys.path)
import numpy as np

import eager
from eager import nn
from eager.nn import functional as F

VOCAB, CONTEXT, WIDTH, HEADS, LAYERS, MLP_RATIO, BATCH, DROPOUT = 65, 32, 64, 4, 2, 4, 16, 0.1
LR, WEIGHT_DECAY = 1e-3, 0.01


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention over the positions up to each one (a lower-triangular mask)."""

    def __init__(self, width: int, heads: int, context: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        self.register_buffer("mask", eager.ones(context, context, dtype=eager.bool).tril(), persistent=False)

    def forward(self, x: eager.Tensor) -> eager.Tensor:
        B, T, C = x.shape
        h = self.heads
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.reshape(B, T, h, C // h).transpose(1, 2) for t in (q, k, v))  # (B, h, T, d)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // h))
        scores = scores.masked_fill(self.mask[:T, :T].logical_not(), float("-inf"))
        att = self.attn_drop(F.softmax(scores, dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.resid_drop(self.proj(y))


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, width: int, heads: int, context: int, dropout: float, mlp_ratio: int,
                 gelu: str = "none") -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, context, dropout)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, mlp_ratio * width), nn.GELU(approximate=gelu),
                                 nn.Linear(mlp_ratio * width, width), nn.Dropout(dropout))

    def forward(self, x: eager.Tensor) -> eager.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token and position embeddings, `layers` blocks, a final LayerNorm and a linear head
    (no weight tying). `gelu="tanh"` selects GELU's tanh approximation (GPT-2's)."""

    def __init__(self, vocab: int = VOCAB, context: int = CONTEXT, width: int = WIDTH, heads: int = HEADS,
                 layers: int = LAYERS, dropout: float = DROPOUT, mlp_ratio: int = MLP_RATIO,
                 gelu: str = "none") -> None:
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[Block(width, heads, context, dropout, mlp_ratio, gelu) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)

    def forward(self, idx: eager.Tensor) -> eager.Tensor:
        T = idx.shape[1]
        x = self.drop(self.tok(idx) + self.pos(eager.arange(T, device=idx.device)))
        return self.head(self.ln_f(self.blocks(x)))


def make_model(seed: int = 0) -> GPT:
    eager.manual_seed(seed)
    return GPT()


def make_optimizer(model: nn.Module) -> eager.optim.Optimizer:
    return eager.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)


def make_batch(seed: int = 0, batch: int = BATCH, context: int = CONTEXT, vocab: int = VOCAB):
    """(inputs, targets): int64 token windows (batch, context) and the same shifted by one."""
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, vocab, (batch, context + 1))
    return eager.from_numpy(tokens[:, :-1].copy()), eager.from_numpy(tokens[:, 1:].copy())


def loss_fn(model: nn.Module, batch) -> eager.Tensor:
    idx, targets = batch
    logits = model(idx)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def train_step(model: nn.Module, opt: eager.optim.Optimizer, batch) -> float:
    """One AdamW step on `batch`; returns the loss before the update."""
    return _training.train_step(loss_fn, model, opt, batch)


@_training.torch_peer
def peer_torch(torch):
    """The same model in PyTorch (for benchmarks/models_bench.py), or None without torch."""
    tnn, TF = torch.nn, torch.nn.functional

    class TAttn(tnn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = tnn.Linear(WIDTH, 3 * WIDTH), tnn.Linear(WIDTH, WIDTH)
            self.attn_drop, self.resid_drop = tnn.Dropout(DROPOUT), tnn.Dropout(DROPOUT)
            self.register_buffer("mask", torch.ones(CONTEXT, CONTEXT, dtype=torch.bool).tril(), persistent=False)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.reshape(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
            s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // HEADS))
            s = s.masked_fill(~self.mask[:T, :T], float("-inf"))
            y = (self.attn_drop(TF.softmax(s, dim=-1)) @ v).transpose(1, 2).reshape(B, T, C)
            return self.resid_drop(self.proj(y))

    class TBlock(tnn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.attn, self.ln2 = tnn.LayerNorm(WIDTH), TAttn(), tnn.LayerNorm(WIDTH)
            self.mlp = tnn.Sequential(tnn.Linear(WIDTH, MLP_RATIO * WIDTH), tnn.GELU(),
                                      tnn.Linear(MLP_RATIO * WIDTH, WIDTH), tnn.Dropout(DROPOUT))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class TGPT(tnn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = tnn.Embedding(VOCAB, WIDTH), tnn.Embedding(CONTEXT, WIDTH)
            self.drop = tnn.Dropout(DROPOUT)
            self.blocks = tnn.Sequential(*[TBlock() for _ in range(LAYERS)])
            self.ln_f, self.head = tnn.LayerNorm(WIDTH), tnn.Linear(WIDTH, VOCAB)

        def forward(self, idx):
            x = self.drop(self.tok(idx) + self.pos(torch.arange(idx.shape[1])))
            return self.head(self.ln_f(self.blocks(x)))

    return TGPT
