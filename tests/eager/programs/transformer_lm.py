"""PyTorch's word_language_model (Transformer variant) and a pygcn-style graph network."""
import math


def run(torch):
    from ._common import det_input, fill_params, rounded
    nn = torch.nn
    F = torch.nn.functional
    out = {}

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = torch.zeros(max_len, d_model)
            position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
            div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer('pe', pe)

        def forward(self, x):
            x = x + self.pe[:x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
            self.model_type = 'Transformer'
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            self.init_weights()

        def _generate_square_subsequent_mask(self, sz):
            return torch.log(torch.tril(torch.ones(sz, sz)))

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask=True):
            if has_mask:
                device = src.device
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    mask = self._generate_square_subsequent_mask(len(src)).to(device)
                    self.src_mask = mask
            else:
                self.src_mask = None
            src = self.input_emb(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.encoder(src, mask=self.src_mask)
            output = self.decoder(output)
            return F.log_softmax(output, dim=-1)

    ntokens = 13
    model = TransformerModel(ntokens, 8, 2, 16, 2, dropout=0.0)
    fill_params(torch, model)
    out["mask"] = torch.log(torch.tril(torch.ones(3, 3))).tolist()
    out["nn_mask"] = nn.Transformer.generate_square_subsequent_mask(3).tolist()
    out["repr_layer"] = repr(model.encoder.layers[0])
    data = torch.tensor([[1, 2], [3, 4], [5, 6], [7, 8]])
    targets = torch.tensor([2, 3, 4, 5, 6, 7, 8, 9])
    criterion = nn.NLLLoss()
    model.eval()  # (the layers' dropout of 0.1 would draw different masks in the two libraries)
    lr = 5.0
    for _ in range(2):
        model.zero_grad()
        output = model(data)
        output = output.view(-1, ntokens)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            if p.grad is not None:
                p.data.add_(p.grad, alpha=-lr)
    out["lm_loss"] = round(loss.item(), 4)
    out["ppl"] = round(math.exp(loss.item()), 3)
    model.eval()
    with torch.no_grad():
        output = model(data, has_mask=True)
        word_weights = output[-1].squeeze().div(1.0).exp().cpu()
        word_idx = torch.multinomial(word_weights[0], 1)[0]
    out["gen"] = (tuple(word_weights.shape), str(word_idx.dtype), 0 <= word_idx.item() < ntokens)

    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        data = data.view(bsz, -1).t().contiguous()
        return data

    corpus = torch.arange(23) % ntokens
    train_data = batchify(corpus, 3)
    out["batchify"] = (tuple(train_data.shape), train_data.is_contiguous(), train_data[:, 0].tolist())

    def get_batch(source, i, bptt=4):
        seq_len = min(bptt, len(source) - 1 - i)
        data = source[i:i + seq_len]
        target = source[i + 1:i + 1 + seq_len].view(-1)
        return data, target

    d, t = get_batch(train_data, 4)
    out["get_batch"] = (tuple(d.shape), t.tolist())

    # batch_first TransformerEncoder with a key padding mask
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                       norm_first=True, activation="gelu")
    enc = fill_params(torch, nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False))
    x = det_input(torch, 2, 5, 8)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    y = enc(x, mask=causal, src_key_padding_mask=pad, is_causal=True)
    out["encoder"] = rounded(y[1, 1])
    mha = fill_params(torch, nn.MultiheadAttention(8, 2, batch_first=True))
    o, w = mha(x, x, x, key_padding_mask=pad)
    out["mha"] = (rounded(o[1, 0]), tuple(w.shape), rounded(w[1, 0]))

    # pygcn
    class GraphConvolution(nn.Module):
        def __init__(self, in_features, out_features, bias=True):
            super().__init__()
            self.in_features = in_features
            self.out_features = out_features
            self.weight = nn.Parameter(torch.FloatTensor(in_features, out_features))
            if bias:
                self.bias = nn.Parameter(torch.FloatTensor(out_features))
            else:
                self.register_parameter('bias', None)
            self.reset_parameters()

        def reset_parameters(self):
            stdv = 1. / math.sqrt(self.weight.size(1))
            self.weight.data.uniform_(-stdv, stdv)
            if self.bias is not None:
                self.bias.data.uniform_(-stdv, stdv)

        def forward(self, input, adj):
            support = torch.mm(input, self.weight)
            output = torch.spmm(adj, support)
            if self.bias is not None:
                return output + self.bias
            return output

        def __repr__(self):
            return self.__class__.__name__ + ' (' + str(self.in_features) + ' -> ' + str(self.out_features) + ')'

    class GCN(nn.Module):
        def __init__(self, nfeat, nhid, nclass, dropout):
            super().__init__()
            self.gc1 = GraphConvolution(nfeat, nhid)
            self.gc2 = GraphConvolution(nhid, nclass)
            self.dropout = dropout

        def forward(self, x, adj):
            x = F.relu(self.gc1(x, adj))
            x = F.dropout(x, self.dropout, training=self.training)
            x = self.gc2(x, adj)
            return F.log_softmax(x, dim=1)

    import numpy as np
    edges = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 0], [1, 3]])
    n = 5
    adj = np.zeros((n, n), dtype=np.float32)
    adj[edges[:, 0], edges[:, 1]] = 1
    adj = adj + adj.T * (adj.T > adj) - adj * (adj.T > adj) + np.eye(n, dtype=np.float32)
    adj = adj / adj.sum(1, keepdims=True)
    rows, cols = np.nonzero(adj)
    indices = torch.from_numpy(np.vstack((rows, cols)).astype(np.int64))
    values = torch.from_numpy(adj[rows, cols])
    sparse_adj = torch.sparse_coo_tensor(indices, values, torch.Size((n, n)))
    features = det_input(torch, n, 4)
    labels = torch.LongTensor([0, 1, 0, 1, 1])
    model = fill_params(torch, GCN(4, 6, 2, dropout=0.5))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    idx_train = torch.LongTensor(range(3))
    for _ in range(3):
        model.train()
        optimizer.zero_grad()
        model.eval()
        output = model(features, sparse_adj)
        loss_train = F.nll_loss(output[idx_train], labels[idx_train])
        preds = output.max(1)[1].type_as(labels)
        correct = preds.eq(labels).double().sum()
        loss_train.backward()
        optimizer.step()
    out["gcn"] = (round(loss_train.item(), 4), str(correct.dtype), repr(model.gc1), str(torch.FloatTensor(2).dtype))
    return out
