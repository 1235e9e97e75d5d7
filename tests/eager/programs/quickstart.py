"""PyTorch's quickstart tutorial: a FashionMNIST-style MLP classifier, train/test loops."""


def run(torch):
    nn = torch.nn
    from importlib import import_module
    data = import_module(torch.__name__ + ".utils.data")
    torch.manual_seed(0)
    X = torch.randn(64, 1, 28, 28)
    y = torch.randint(0, 10, (64,))
    ds = data.TensorDataset(X, y)
    train_dataloader = data.DataLoader(ds, batch_size=16, shuffle=True)
    test_dataloader = data.DataLoader(ds, batch_size=16)
    out = {}
    for Xb, yb in test_dataloader:
        out["batch"] = (tuple(Xb.shape), str(Xb.dtype), tuple(yb.shape), str(yb.dtype))
        break
    device = ("cuda" if torch.cuda.is_available()
              else "mps" if torch.backends.mps.is_available() else "cpu")
    out["device"] = device

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(28 * 28, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))

        def forward(self, x):
            x = self.flatten(x)
            return self.linear_relu_stack(x)

    model = NeuralNetwork().to(device)
    out["repr"] = repr(model)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    def train(dataloader, model, loss_fn, optimizer):
        size = len(dataloader.dataset)
        model.train()
        for batch, (X, y) in enumerate(dataloader):
            X, y = X.to(device), y.to(device)
            pred = model(X)
            loss = loss_fn(pred, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if batch % 2 == 0:
                loss, current = loss.item(), (batch + 1) * len(X)
                _ = f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]"

    def test(dataloader, model, loss_fn):
        size = len(dataloader.dataset)
        num_batches = len(dataloader)
        model.eval()
        test_loss, correct = 0, 0
        with torch.no_grad():
            for X, y in dataloader:
                pred = model(X)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).type(torch.float).sum().item()
        test_loss /= num_batches
        correct /= size
        return f"Accuracy: {(100*correct):>0.1f}%, Avg loss: {test_loss:>8f}"

    for _t in range(2):
        train(train_dataloader, model, loss_fn, optimizer)
        s = test(test_dataloader, model, loss_fn)
    out["report_prefix"] = s[:9]
    out["state_keys"] = list(model.state_dict().keys())
    import io
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    model2 = NeuralNetwork()
    res = model2.load_state_dict(torch.load(buf, weights_only=True))
    out["load_result"] = repr(res)
    model2.eval()
    with torch.no_grad():
        pred = model2(X[:1])
        out["pred_shape"] = tuple(pred.shape)
        out["same"] = bool(torch.equal(pred, model(X[:1])))
    return out
