"""makemore part 1: bigram counts, sampling with a Generator, then a one-layer net with one_hot."""


def run(torch):
    F = torch.nn.functional
    words = ["emma", "olivia", "ava", "isabella", "sophia", "charlotte", "mia", "amelia"]
    chars = sorted(list(set("".join(words))))
    stoi = {s: i + 1 for i, s in enumerate(chars)}
    stoi["."] = 0
    itos = {i: s for s, i in stoi.items()}
    n = len(stoi)
    out = {}
    N = torch.zeros((n, n), dtype=torch.int32)
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            N[stoi[ch1], stoi[ch2]] += 1
    out["N"] = (str(N.dtype), N.sum().item(), N[0].tolist(), str(N[0, :5]))
    p = N[0].float()
    p = p / p.sum()
    out["p"] = (str(p.dtype), round(p.sum().item(), 5))
    g = torch.Generator().manual_seed(2147483647)
    ix = torch.multinomial(p, num_samples=20, replacement=True, generator=g)
    out["ix"] = (tuple(ix.shape), str(ix.dtype), all(p[i] > 0 for i in ix.tolist()))
    P = (N + 1).float()
    P /= P.sum(1, keepdims=True)
    out["P"] = (round(P[0].sum().item(), 5), tuple(P.sum(1, keepdim=True).shape))
    g = torch.Generator().manual_seed(2147483647)
    names = []
    for _i in range(3):
        ix = 0
        s = []
        while True:
            pr = P[ix]
            ix = torch.multinomial(pr, num_samples=1, replacement=True, generator=g).item()
            s.append(itos[ix])
            if ix == 0 or len(s) > 30:
                break
        names.append("".join(s))
    out["names"] = all(isinstance(nm, str) for nm in names)
    log_likelihood = 0.0
    cnt = 0
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            prob = P[stoi[ch1], stoi[ch2]]
            logprob = torch.log(prob)
            log_likelihood += logprob
            cnt += 1
    nll = -log_likelihood
    out["nll"] = (type(nll).__name__, round((nll / cnt).item(), 4), f"{nll/cnt=}"[:10])

    xs, ys = [], []
    for w in words:
        chs = ["."] + list(w) + ["."]
        for ch1, ch2 in zip(chs, chs[1:]):
            xs.append(stoi[ch1])
            ys.append(stoi[ch2])
    xs = torch.tensor(xs)
    ys = torch.tensor(ys)
    num = xs.nelement()
    out["xs"] = (str(xs.dtype), num)
    xenc = F.one_hot(xs, num_classes=n).float()
    out["xenc"] = (tuple(xenc.shape), str(xenc.dtype), str(F.one_hot(torch.tensor([0, 2])).dtype))
    g = torch.Generator().manual_seed(2147483647)
    W = torch.randn((n, n), generator=g, requires_grad=True)
    with torch.no_grad():
        W.copy_(torch.arange(n * n, dtype=torch.float32).reshape(n, n).sin())
    for _k in range(20):
        xenc = F.one_hot(xs, num_classes=n).float()
        logits = xenc @ W
        counts = logits.exp()
        probs = counts / counts.sum(1, keepdims=True)
        loss = -probs[torch.arange(num), ys].log().mean() + 0.01 * (W ** 2).mean()
        W.grad = None
        loss.backward()
        W.data += -10 * W.grad
    out["loss"] = round(loss.item(), 3)
    out["cross_entropy"] = round(F.cross_entropy(xenc @ W, ys).item(), 3)
    return out
