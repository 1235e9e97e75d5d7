"""A word-level language model written as PyTorch users write one (after PyTorch's
examples/word_language_model): a Dictionary and a Corpus, an LSTM with tied embedding and
decoder weights, truncated backpropagation through time, gradient clipping, a StepLR
scheduler, and a DataLoader with a RandomSampler over the training windows. Only the import
line differs from the PyTorch script:

    import eager as torch          # instead of: import torch

    python examples/word_language_model.py --epochs 6
"""
from __future__ import annotations

import argparse
import math
import sys
import time

import eager as torch
import eager.nn as nn
import eager.nn.functional as F
from eager.utils.data import DataLoader, Dataset, RandomSampler

TEXT = """\
the cat sat on the mat . the dog sat on the log . the cat saw the dog and the dog saw the cat .
a bird sang in the tree . the cat looked at the bird and the bird flew away from the tree .
the dog ran to the river . the river was cold and the dog ran back to the mat .
in the morning the cat sat on the mat and in the evening the dog sat on the log .
the bird came back to the tree and sang again . the cat and the dog listened to the bird .
"""


class Dictionary:
    def __init__(self) -> None:
        self.word2idx: dict[str, int] = {}
        self.idx2word: list[str] = []

    def add_word(self, word: str) -> int:
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self) -> int:
        return len(self.idx2word)


class Corpus:
    """The text's words as ids; the last tenth is the validation split."""

    def __init__(self, text: str, repeat: int) -> None:
        self.dictionary = Dictionary()
        words = (text.split() + ["<eos>"]) * repeat
        ids = torch.tensor([self.dictionary.add_word(w) for w in words], dtype=torch.long)
        cut = int(len(ids) * 0.9)
        self.train, self.valid = ids[:cut], ids[cut:]


class Windows(Dataset):
    """(input, target) windows of bptt words: the target is the input shifted by one."""

    def __init__(self, data: torch.Tensor, bptt: int) -> None:
        self.data, self.bptt = data, bptt

    def __len__(self) -> int:
        return (len(self.data) - 1) // self.bptt

    def __getitem__(self, i: int):
        start = i * self.bptt
        return self.data[start:start + self.bptt], self.data[start + 1:start + 1 + self.bptt]


class RNNModel(nn.Module):
    """Encoder (embedding), LSTM, decoder (linear), with the decoder's weight tied to the encoder's."""

    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int, dropout: float = 0.2,
                 tie_weights: bool = True) -> None:
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout if nlayers > 1 else 0.0)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError("When using the tied flag, nhid must be equal to emsize")
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.nhid, self.nlayers = nhid, nlayers

    def init_weights(self) -> None:
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input: torch.Tensor, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz: int):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    """Hidden states cut from their history (truncated backpropagation through time)."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def evaluate(model: RNNModel, loader: DataLoader, criterion) -> float:
    model.eval()
    total, count = 0.0, 0
    with torch.no_grad():
        for data, targets in loader:
            data, targets = data.t().contiguous(), targets.t().contiguous()  # (bptt, batch)
            hidden = model.init_hidden(data.size(1))
            output, hidden = model(data, hidden)
            total += len(data) * criterion(output, targets.view(-1)).item()
            count += len(data)
    return total / max(count, 1)


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emsize", type=int, default=32)
    parser.add_argument("--nlayers", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--clip", type=float, default=0.25)
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--bptt", type=int, default=12)
    parser.add_argument("--repeat", type=int, default=8, help="copies of the text in the corpus")
    parser.add_argument("--dropout", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--log-interval", type=int, default=4)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    corpus = Corpus(TEXT, args.repeat)
    ntokens = len(corpus.dictionary)
    train_set, valid_set = Windows(corpus.train, args.bptt), Windows(corpus.valid, args.bptt)
    sampler = RandomSampler(train_set, generator=torch.Generator().manual_seed(args.seed))
    train_loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler, drop_last=True)
    valid_loader = DataLoader(valid_set, batch_size=args.batch_size)

    model = RNNModel(ntokens, args.emsize, args.emsize, args.nlayers, args.dropout)
    criterion = nn.NLLLoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)

    print(f"vocabulary {ntokens} words, {len(train_set)} training windows of {args.bptt}")
    first = val_loss = float("nan")
    for epoch in range(1, args.epochs + 1):
        model.train()
        start, total_loss = time.time(), 0.0
        hidden = model.init_hidden(args.batch_size)
        for batch, (data, targets) in enumerate(train_loader):
            data, targets = data.t().contiguous(), targets.t().contiguous()  # (bptt, batch), as the LSTM reads it
            hidden = repackage_hidden(hidden)
            optimizer.zero_grad()
            output, hidden = model(data, hidden)
            loss = criterion(output, targets.view(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            total_loss += loss.item()
            if (batch + 1) % args.log_interval == 0:
                cur = total_loss / args.log_interval
                print(f"| epoch {epoch:3d} | {batch + 1:4d} batches | lr {scheduler.get_last_lr()[0]:.4f} "
                      f"| loss {cur:5.2f} | ppl {math.exp(cur):8.2f}")
                total_loss = 0.0
        val_loss = evaluate(model, valid_loader, criterion)
        if epoch == 1:
            first = val_loss
        scheduler.step()
        print(f"| end of epoch {epoch:3d} | time {time.time() - start:5.2f}s | valid loss {val_loss:5.2f} "
              f"| valid ppl {math.exp(val_loss):8.2f}")
    print(f"valid loss {first:.3f} after the first epoch, {val_loss:.3f} at the end")
    return val_loss


if __name__ == "__main__":
    main(sys.argv[1:])
