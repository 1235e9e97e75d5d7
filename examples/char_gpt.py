"""A character-level GPT trained on a short text this script ships: token and position
embeddings, causal self-attention with a triangular mask, LayerNorm, dropout, AdamW, and
sampling with `multinomial`. The model is the W5 workload's (examples/workloads/w5_gpt.py).

    python examples/char_gpt.py --steps 300
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))

from w5_gpt import GPT  # noqa: E402

import eager as torch  # noqa: E402
from eager.nn import functional as F  # noqa: E402

TEXT = """\
The river runs past the mill and the mill turns the stone and the stone grinds the grain.
The baker takes the flour and the baker makes the bread and the bread goes to the market.
At the market the children buy the bread and they carry it home along the river.
The river runs past the mill again, and the mill turns again, and the stone grinds again.
In the morning the baker sings, in the evening the miller sings, and at night the river sings.
Every day the same river, every day the same mill, every day the same bread, and yet
every day the children find a new stone by the water and carry it home with the bread.
"""


def encode(text: str, stoi: dict) -> list[int]:
    return [stoi[c] for c in text]


def get_batch(data: torch.Tensor, batch: int, context: int, gen: torch.Generator):
    starts = torch.randint(0, data.shape[0] - context - 1, (batch,), generator=gen)
    offsets = torch.arange(context)
    idx = starts.unsqueeze(1) + offsets.unsqueeze(0)
    return data[idx], data[idx + 1]


@torch.no_grad()
def sample(model: GPT, start: torch.Tensor, length: int, gen: torch.Generator, temperature: float = 1.0):
    """Extend `start` (1, T) by `length` tokens drawn from the model's softmax."""
    model.eval()
    idx = start
    for _ in range(length):
        logits = model(idx[:, -model.context:])[:, -1, :] / temperature
        nxt = torch.multinomial(F.softmax(logits, dim=-1), 1, generator=gen)
        idx = torch.cat([idx, nxt], dim=1)
    model.train()
    return idx


def main(argv: list[str] | None = None) -> tuple[float, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--context", type=int, default=32)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--sample", type=int, default=120, help="characters to generate at the end")
    args = ap.parse_args(argv)

    torch.manual_seed(args.seed)
    chars = sorted(set(TEXT))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor(encode(TEXT, stoi))
    model = GPT(vocab=len(chars), context=args.context, width=args.width, heads=4, layers=2, dropout=0.1,
                gelu="tanh")
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    gen = torch.Generator().manual_seed(args.seed)
    print(f"{sum(p.numel() for p in model.parameters())} parameters, vocabulary {len(chars)}, "
          f"{data.shape[0]} characters")
    first = last = None
    for step in range(args.steps):
        x, y = get_batch(data, args.batch, args.context, gen)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        value = loss.item()
        first = value if first is None else first
        last = value
        if step % args.log_every == 0 or step == args.steps - 1:
            print(f"step {step:4d}  loss {value:.4f}")
    if args.sample:
        start = torch.tensor([[stoi["T"]]])
        out = sample(model, start, args.sample, gen)
        print("sample:", "".join(chars[i] for i in out[0].tolist()))
    return first, last


if __name__ == "__main__":
    main()
