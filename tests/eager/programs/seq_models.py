"""Sequence-model tutorials: seq2seq with an attention GRU decoder (teacher forcing),
char-RNN name classification, an LSTM sentiment model with pack_padded_sequence, and
time-series forecasting with nn.LSTM(batch_first=True)."""
import random


def run(torch):
    from ._common import det_input, fill_params, rounded
    nn = torch.nn
    F = torch.nn.functional
    out = {}
    hidden_size, V = 8, 11
    SOS_token, MAX_LENGTH = 0, 6

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size, dropout_p=0.1):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input):
            embedded = self.dropout(self.embedding(input))
            output, hidden = self.gru(embedded)
            return output, hidden

    class BahdanauAttention(nn.Module):
        def __init__(self, hidden_size):
            super().__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):
            scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            context = torch.bmm(weights, keys)
            return context, weights

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
            batch_size = encoder_outputs.size(0)
            decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
            decoder_hidden = encoder_hidden
            decoder_outputs = []
            attentions = []
            for i in range(MAX_LENGTH):
                decoder_output, decoder_hidden, attn_weights = self.forward_step(
                    decoder_input, decoder_hidden, encoder_outputs)
                decoder_outputs.append(decoder_output)
                attentions.append(attn_weights)
                if target_tensor is not None:
                    decoder_input = target_tensor[:, i].unsqueeze(1)
                else:
                    _, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze(-1).detach()
            decoder_outputs = torch.cat(decoder_outputs, dim=1)
            decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
            attentions = torch.cat(attentions, dim=1)
            return decoder_outputs, decoder_hidden, attentions

        def forward_step(self, input, hidden, encoder_outputs):
            embedded = self.dropout(self.embedding(input))
            query = hidden.permute(1, 0, 2)
            context, attn_weights = self.attention(query, encoder_outputs)
            input_gru = torch.cat((embedded, context), dim=2)
            output, hidden = self.gru(input_gru, hidden)
            output = self.out(output)
            return output, hidden, attn_weights

    encoder = fill_params(torch, EncoderRNN(V, hidden_size))
    decoder = fill_params(torch, AttnDecoderRNN(hidden_size, V))
    input_tensor = torch.tensor([[1, 2, 3, 4, 5, 1], [2, 2, 7, 1, 0, 0]])
    target_tensor = torch.tensor([[3, 4, 5, 6, 1, 0], [7, 8, 1, 0, 0, 0]])
    encoder_optimizer = torch.optim.Adam(encoder.parameters(), lr=0.01)
    decoder_optimizer = torch.optim.Adam(decoder.parameters(), lr=0.01)
    criterion = nn.NLLLoss()
    encoder.eval()
    decoder.eval()
    losses = []
    for _ in range(3):
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, attn = decoder(encoder_outputs, encoder_hidden, target_tensor)
        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()
        encoder_optimizer.step()
        decoder_optimizer.step()
        losses.append(round(loss.item(), 4))
    out["seq2seq"] = (losses, tuple(encoder_outputs.shape), tuple(encoder_hidden.shape), tuple(attn.shape),
                      type(loss.grad_fn).__name__)
    with torch.no_grad():
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)
        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()
    out["greedy"] = (tuple(decoded_ids.shape), str(decoded_ids.dtype), decoded_ids.tolist())

    # char-RNN classification (nn.RNN over one-hot letters)
    all_letters = "abcdefghij"
    n_letters = len(all_letters)

    def lineToTensor(line):
        tensor = torch.zeros(len(line), 1, n_letters)
        for li, letter in enumerate(line):
            tensor[li][0][all_letters.find(letter)] = 1
        return tensor

    class CharRNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.rnn = nn.RNN(input_size, hidden_size)
            self.h2o = nn.Linear(hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, line_tensor):
            rnn_out, hidden = self.rnn(line_tensor)
            output = self.h2o(hidden[0])
            output = self.softmax(output)
            return output

    rnn = fill_params(torch, CharRNN(n_letters, 6, 3))
    output = rnn(lineToTensor("abba"))
    out["char_rnn"] = (rounded(output), repr(rnn))

    def categoryFromOutput(output):
        top_n, top_i = output.topk(1)
        category_i = top_i[0].item()
        return category_i

    out["category"] = categoryFromOutput(output)
    loss = nn.NLLLoss()(output, torch.tensor([1]))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(rnn.parameters(), 3)
    out["char_grad"] = rounded(rnn.rnn.weight_hh_l0.grad)[:4]

    # LSTM sentiment with packing
    class Sentiment(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(20, 6, padding_idx=0)
            self.lstm = nn.LSTM(6, 5, num_layers=2, bidirectional=True, batch_first=True, dropout=0.0)
            self.fc = nn.Linear(10, 1)

        def forward(self, text, lengths):
            embedded = self.embedding(text)
            packed = nn.utils.rnn.pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
            packed_output, (hidden, cell) = self.lstm(packed)
            output, output_lengths = nn.utils.rnn.pad_packed_sequence(packed_output, batch_first=True)
            hidden = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
            return self.fc(hidden).squeeze(1), output, output_lengths

    model = fill_params(torch, Sentiment())
    text = torch.tensor([[3, 4, 5, 0], [6, 7, 8, 9], [1, 2, 0, 0]])
    lengths = torch.tensor([3, 4, 2])
    pred, output, output_lengths = model(text, lengths)
    out["sentiment"] = (rounded(pred), tuple(output.shape), output_lengths.tolist(), rounded(output[2, 2]))
    loss = F.binary_cross_entropy_with_logits(pred, torch.tensor([1.0, 0.0, 1.0]))
    loss.backward()
    out["sentiment_grad"] = rounded(model.lstm.weight_ih_l1_reverse.grad)[:3]
    padded = nn.utils.rnn.pad_sequence([torch.tensor([1, 2, 3]), torch.tensor([4])], batch_first=True)
    out["pad_sequence"] = padded.tolist()

    # time series with nn.LSTM(batch_first=True)
    class LSTMForecaster(nn.Module):
        def __init__(self, input_size=1, hidden_layer_size=7, output_size=1):
            super().__init__()
            self.hidden_layer_size = hidden_layer_size
            self.lstm = nn.LSTM(input_size, hidden_layer_size, batch_first=True)
            self.linear = nn.Linear(hidden_layer_size, output_size)

        def forward(self, x):
            h0 = torch.zeros(1, x.size(0), self.hidden_layer_size)
            c0 = torch.zeros(1, x.size(0), self.hidden_layer_size)
            out, _ = self.lstm(x, (h0, c0))
            return self.linear(out[:, -1, :])

    model = fill_params(torch, LSTMForecaster())
    series = det_input(torch, 20)
    window = 5
    xs = torch.stack([series[i:i + window] for i in range(len(series) - window)]).unsqueeze(-1)
    ys = torch.stack([series[i + window] for i in range(len(series) - window)]).unsqueeze(-1)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(5):
        opt.zero_grad()
        loss = F.mse_loss(model(xs), ys)
        loss.backward()
        opt.step()
    out["forecast"] = (tuple(xs.shape), round(loss.item(), 4))
    random.seed(0)
    return out
