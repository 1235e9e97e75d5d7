"""torch.utils.data as scripts use it: a map-style Dataset, TensorDataset, random_split,
Subset, DataLoader with samplers, collate of dicts/tuples/numbers, an IterableDataset."""


def run(torch):
    from importlib import import_module
    data = import_module(torch.__name__ + ".utils.data")
    out = {}

    class Squares(data.Dataset):
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return {"x": torch.tensor([float(i), float(i) ** 2]), "y": i % 3, "name": f"item{i}", "w": 0.5 * i}

    ds = Squares(10)
    dl = data.DataLoader(ds, batch_size=4, shuffle=False)
    batches = list(dl)
    b = batches[0]
    out["dict_batch"] = (sorted(b), tuple(b["x"].shape), str(b["x"].dtype), str(b["y"].dtype), b["y"].tolist(),
                         b["name"], str(b["w"].dtype), b["w"].tolist(), len(batches), len(dl))
    dl = data.DataLoader(ds, batch_size=4, drop_last=True)
    out["drop_last"] = (len(dl), len(list(dl)))
    X = torch.arange(20.0).reshape(10, 2)
    Y = torch.arange(10)
    tds = data.TensorDataset(X, Y)
    out["tds"] = (len(tds), [t.tolist() for t in tds[3]], type(tds[3]).__name__)
    g = torch.Generator().manual_seed(42)
    train, val = data.random_split(tds, [8, 2], generator=g)
    out["split"] = (len(train), len(val), type(train).__name__, sorted(train.indices + val.indices))
    a, b2, c = data.random_split(range(10), [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(0))
    out["split_frac"] = (len(a), len(b2), len(c))
    sub = data.Subset(tds, [1, 3, 5])
    out["subset"] = (len(sub), sub[1][1].item())
    cat = data.ConcatDataset([tds, sub])
    out["concat"] = (len(cat), cat[11][1].item())
    dl = data.DataLoader(tds, batch_size=3, sampler=data.SequentialSampler(tds))
    out["seq"] = [yb.tolist() for _, yb in dl]
    ws = data.WeightedRandomSampler([0.0, 0.0, 1.0, 0.0], num_samples=5, replacement=True)
    out["weighted"] = list(ws)
    bs = data.BatchSampler(data.SequentialSampler(range(7)), batch_size=3, drop_last=False)
    out["batch_sampler"] = list(bs)
    dl = data.DataLoader(tds, batch_sampler=bs)
    out["dl_batch_sampler"] = [yb.tolist() for _, yb in dl]
    rs = data.RandomSampler(tds, generator=torch.Generator().manual_seed(3))
    out["random"] = sorted(list(rs))
    sr = data.SubsetRandomSampler([2, 4, 6])
    out["subset_random"] = sorted(sr)

    class Stream(data.IterableDataset):
        def __iter__(self):
            for i in range(5):
                yield torch.tensor(i), i * 1.5

    dl = data.DataLoader(Stream(), batch_size=2)
    out["iterable"] = [(x.tolist(), y.tolist(), str(y.dtype)) for x, y in dl]

    def collate(batch):
        xs, ys = zip(*batch)
        return torch.stack(xs), torch.tensor(ys)

    dl = data.DataLoader(tds, batch_size=5, collate_fn=collate)
    out["collate_fn"] = [tuple(x.shape) for x, _ in dl]
    dl = data.DataLoader(tds, batch_size=None)
    first = next(iter(dl))
    out["batch_none"] = (type(first).__name__, first[1].tolist())
    out["default_collate"] = [str(v) for v in data.default_collate([(1, 2.0, True), (3, 4.0, False)])]
    out["np_collate"] = str(data.default_collate([__import__("numpy").array([1.0, 2.0])] * 2).dtype)
    out["dataloader_attrs"] = (data.DataLoader(tds, batch_size=2).batch_size, data.DataLoader(tds).drop_last)
    return out
