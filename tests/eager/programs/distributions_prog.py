"""torch.distributions as policy-gradient, VAE and Bayesian scripts use it."""


def run(torch):
    from importlib import import_module
    D = import_module(torch.__name__ + ".distributions")
    out = {}
    mu = torch.tensor([0.0, 1.0], requires_grad=True)
    sigma = torch.tensor([1.0, 2.0], requires_grad=True)
    n = D.Normal(mu, sigma)
    x = torch.tensor([0.5, -1.0])
    lp = n.log_prob(x)
    out["normal_lp"] = [round(v, 5) for v in lp.tolist()]
    out["normal_stats"] = ([round(v, 5) for v in n.entropy().tolist()], n.mean.tolist(), n.stddev.tolist(),
                           n.variance.tolist(), tuple(n.batch_shape), tuple(n.event_shape))
    lp.sum().backward()
    out["normal_grad"] = ([round(v, 5) for v in mu.grad.tolist()], [round(v, 5) for v in sigma.grad.tolist()])
    s = n.rsample((3,))
    out["rsample"] = (tuple(s.shape), s.requires_grad, tuple(n.sample().shape), n.sample().requires_grad)
    out["cdf"] = [round(v, 5) for v in D.Normal(0.0, 1.0).cdf(torch.tensor([0.0, 1.0])).tolist()]
    logits = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]])
    c = D.Categorical(logits=logits)
    a = torch.tensor([2, 0])
    out["cat"] = ([round(v, 5) for v in c.log_prob(a).tolist()], [round(v, 5) for v in c.entropy().tolist()],
                  tuple(c.sample().shape), str(c.sample().dtype), [round(v, 5) for v in c.probs[0].tolist()])
    c2 = D.Categorical(probs=torch.tensor([0.2, 0.8]))
    out["cat_probs"] = ([round(v, 5) for v in c2.logits.tolist()], tuple(c2.sample((4,)).shape))
    kl = D.kl_divergence(D.Normal(torch.tensor(0.0), torch.tensor(1.0)), D.Normal(torch.tensor(1.0), torch.tensor(2.0)))
    out["kl_normal"] = round(kl.item(), 5)
    kl = D.kl.kl_divergence(D.Categorical(probs=torch.tensor([0.5, 0.5])), D.Categorical(probs=torch.tensor([0.9, 0.1])))
    out["kl_cat"] = round(kl.item(), 5)
    b = D.Bernoulli(probs=torch.tensor([0.3, 0.9]))
    out["bern"] = ([round(v, 5) for v in b.log_prob(torch.tensor([1.0, 0.0])).tolist()], str(b.sample().dtype))
    u = D.Uniform(0.0, 2.0)
    out["uniform"] = (round(u.log_prob(torch.tensor(1.0)).item(), 5), round(u.entropy().item(), 5))
    out["repr"] = [repr(d) for d in (D.Normal(torch.tensor(0.0), torch.tensor(1.0)), D.Normal(torch.zeros(2), 1.0),
                                     D.Categorical(logits=torch.zeros(3)), D.Bernoulli(probs=torch.tensor(0.25)),
                                     D.Uniform(0.0, 1.0), D.Categorical(probs=torch.ones(1)))]
    return out
