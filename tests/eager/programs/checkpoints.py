"""Saving and resuming as scripts do: state dicts, whole checkpoints with optimizer and
scheduler state, map_location, whole-module pickles, and minGPT's configure_optimizers
that sorts parameters by module type."""
import io


def run(torch):
    from ._common import det_input, fill_params, rounded
    nn = torch.nn
    out = {}

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.ln = nn.LayerNorm(8)
            self.emb = nn.Embedding(5, 8)
            self.fc2 = nn.Linear(8, 2)
            self.register_buffer("steps", torch.zeros((), dtype=torch.long))

        def forward(self, x, idx):
            self.steps += 1
            return self.fc2(torch.relu(self.ln(self.fc1(x)) + self.emb(idx)))

    model = fill_params(torch, Net())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=10)
    x, idx = det_input(torch, 3, 4), torch.tensor([0, 3, 4])
    for _ in range(3):
        opt.zero_grad()
        model(x, idx).pow(2).mean().backward()
        opt.step()
        sched.step()
    ckpt = {"epoch": 3, "model_state_dict": model.state_dict(), "optimizer_state_dict": opt.state_dict(),
            "scheduler": sched.state_dict(), "loss": 0.5}
    buf = io.BytesIO()
    torch.save(ckpt, buf)
    buf.seek(0)
    loaded = torch.load(buf, map_location=torch.device("cpu"), weights_only=True)
    out["keys"] = (sorted(loaded), sorted(loaded["scheduler"])[:6], loaded["model_state_dict"]["steps"].item())
    model2 = Net()
    opt2 = torch.optim.AdamW(model2.parameters(), lr=1e-2)
    sched2 = torch.optim.lr_scheduler.OneCycleLR(opt2, max_lr=0.1, total_steps=10)
    model2.load_state_dict(loaded["model_state_dict"])
    opt2.load_state_dict(loaded["optimizer_state_dict"])
    sched2.load_state_dict(loaded["scheduler"])
    for m, o, s in ((model, opt, sched), (model2, opt2, sched2)):
        o.zero_grad()
        m(x, idx).pow(2).mean().backward()
        o.step()
        s.step()
    out["resumed_same"] = (bool(torch.equal(model.fc1.weight, model2.fc1.weight)), sched2.get_last_lr() == sched.get_last_lr(),
                           rounded(model2.fc2.bias, 5))
    osd = opt.state_dict()
    out["opt_sd"] = (sorted(osd["state"][0]), str(osd["state"][0]["step"]), osd["param_groups"][0]["params"])
    seq = fill_params(torch, nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.BatchNorm1d(3)))
    buf = io.BytesIO()
    torch.save(seq, buf)
    buf.seek(0)
    whole = torch.load(buf, weights_only=False)
    out["whole"] = (type(whole).__name__, bool(torch.equal(whole[0].weight, seq[0].weight)), repr(whole))
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf, map_location=lambda storage, loc: storage)
    out["map_location_fn"] = sorted(sd)[:3]
    sd.pop("fc2.bias")
    res = Net().load_state_dict(sd, strict=False)
    out["missing"] = (res.missing_keys, res.unexpected_keys)
    try:
        Net().load_state_dict(sd)
    except RuntimeError as e:
        out["strict_error"] = str(e).splitlines()[0]

    # minGPT's configure_optimizers
    decay, no_decay = set(), set()
    whitelist_weight_modules = (torch.nn.Linear, )
    blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
    for mn, m in model.named_modules():
        for pn, _p in m.named_parameters():
            fpn = f'{mn}.{pn}' if mn else pn
            if pn.endswith('bias'):
                no_decay.add(fpn)
            elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):
                decay.add(fpn)
            elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):
                no_decay.add(fpn)
    param_dict = {pn: p for pn, p in model.named_parameters()}
    inter_params = decay & no_decay
    union_params = decay | no_decay
    assert len(inter_params) == 0
    assert len(param_dict.keys() - union_params) == 0
    optim_groups = [
        {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": 0.1},
        {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(optim_groups, lr=3e-4, betas=(0.9, 0.95))
    out["mingpt_groups"] = (sorted(decay), sorted(no_decay), [len(g["params"]) for g in optimizer.param_groups])
    out["named_modules"] = [n for n, _ in model.named_modules()]
    out["modules_repr"] = repr(model)
    return out
