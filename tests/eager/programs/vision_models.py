"""Vision tutorials at toy size: DCGAN on random data, a VAE, a ResNet basic block with
BatchNorm and AdaptiveAvgPool2d, a spatial transformer, transfer-learning fine-tuning."""


def run(torch):
    from ._common import det_input, fill_params, rounded
    nn = torch.nn
    F = torch.nn.functional
    out = {}

    # DCGAN
    nz, ngf, ndf, nc = 4, 4, 4, 1

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
                nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

        def forward(self, input):
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())

        def forward(self, input):
            return self.main(input)

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find('Conv') != -1:
            nn.init.normal_(m.weight.data, 0.0, 0.02)
        elif classname.find('BatchNorm') != -1:
            nn.init.normal_(m.weight.data, 1.0, 0.02)
            nn.init.constant_(m.bias.data, 0)

    netG = Generator()
    netG.apply(weights_init)
    netD = Discriminator()
    netD.apply(weights_init)
    fill_params(torch, netG)
    fill_params(torch, netD)
    out["netG"] = repr(netG)
    out["netD"] = repr(netD)
    criterion = nn.BCELoss()
    fixed_noise = det_input(torch, 2, nz, 1, 1)
    real_label, fake_label = 1., 0.
    optimizerD = torch.optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
    optimizerG = torch.optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    real = det_input(torch, 2, 1, 16, 16).tanh()
    for _ in range(2):
        netD.zero_grad()
        b_size = real.size(0)
        label = torch.full((b_size,), real_label, dtype=torch.float)
        output = netD(real).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        fake = netG(fixed_noise)
        label.fill_(fake_label)
        output = netD(fake.detach()).view(-1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake).view(-1)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
    out["dcgan"] = (tuple(fake.shape), round(errD.item(), 4), round(errG.item(), 4), round(D_x, 4),
                    type(errG.grad_fn).__name__)
    with torch.no_grad():
        fake = netG(fixed_noise).detach().cpu()
    out["fake"] = rounded(fake[0, 0, 0])

    # VAE
    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 8)
            self.fc21 = nn.Linear(8, 2)
            self.fc22 = nn.Linear(8, 2)
            self.fc3 = nn.Linear(2, 8)
            self.fc4 = nn.Linear(8, 16)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar):
            std = torch.exp(0.5 * logvar)
            eps = torch.zeros_like(std)
            return mu + eps * std

        def decode(self, z):
            h3 = F.relu(self.fc3(z))
            return torch.sigmoid(self.fc4(h3))

        def forward(self, x):
            mu, logvar = self.encode(x.view(-1, 16))
            z = self.reparameterize(mu, logvar)
            return self.decode(z), mu, logvar

    def loss_function(recon_x, x, mu, logvar):
        BCE = F.binary_cross_entropy(recon_x, x.view(-1, 16), reduction='sum')
        KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return BCE + KLD

    model = fill_params(torch, VAE())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = det_input(torch, 3, 1, 4, 4).sigmoid()
    model.train()
    for _ in range(3):
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        optimizer.step()
    out["vae"] = (round(loss.item(), 3), tuple(recon_batch.shape))

    # ResNet basic block
    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, in_planes, planes, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(planes)
            self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(planes)
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != self.expansion * planes:
                self.shortcut = nn.Sequential(
                    nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                    nn.BatchNorm2d(self.expansion * planes))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += self.shortcut(x)
            out = F.relu(out)
            return out

    class TinyResNet(nn.Module):
        def __init__(self, num_classes=3):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 4, kernel_size=3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(4)
            self.layer1 = nn.Sequential(BasicBlock(4, 4), BasicBlock(4, 8, stride=2))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(8, num_classes)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.layer1(x)
            x = self.avgpool(x)
            x = torch.flatten(x, 1)
            return self.fc(x)

    net = fill_params(torch, TinyResNet())
    x = det_input(torch, 2, 3, 8, 8)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    for _ in range(2):
        opt.zero_grad()
        loss = F.cross_entropy(net(x), torch.tensor([0, 2]))
        loss.backward()
        opt.step()
        sched.step()
    net.eval()
    with torch.no_grad():
        logits = net(x)
    out["resnet"] = (rounded(logits), rounded(net.bn1.running_mean), net.bn1.num_batches_tracked.item(),
                     str(net.bn1.num_batches_tracked.dtype), [round(v, 6) for v in sched.get_last_lr()])
    out["resnet_keys"] = list(net.state_dict().keys())[:8]
    out["resnet_repr"] = repr(net.layer1[1])

    # spatial transformer
    class STN(nn.Module):
        def __init__(self):
            super().__init__()
            self.localization = nn.Sequential(nn.Conv2d(1, 2, kernel_size=3), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
            self.fc_loc = nn.Sequential(nn.Linear(2 * 3 * 3, 6))
            self.fc_loc[0].weight.data.zero_()
            self.fc_loc[0].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

        def stn(self, x):
            xs = self.localization(x)
            xs = xs.view(-1, 2 * 3 * 3)
            theta = self.fc_loc(xs)
            theta = theta.view(-1, 2, 3)
            grid = F.affine_grid(theta, x.size(), align_corners=False)
            return F.grid_sample(x, grid, align_corners=False)

        def forward(self, x):
            return self.stn(x)

    stn = STN()
    with torch.no_grad():
        stn.localization[0].weight.copy_(det_input(torch, 2, 1, 3, 3))
        stn.localization[0].bias.zero_()
    img = det_input(torch, 1, 1, 8, 8)
    y = stn(img)
    out["stn"] = (rounded(y[0, 0, 2]), bool(torch.allclose(y, img, atol=1e-5)))
    y.sum().backward()
    out["stn_grad"] = rounded(stn.fc_loc[0].bias.grad)

    # transfer learning: freeze a backbone, replace the head
    model_conv = TinyResNet()
    for param in model_conv.parameters():
        param.requires_grad = False
    num_ftrs = model_conv.fc.in_features
    model_conv.fc = nn.Linear(num_ftrs, 2)
    fill_params(torch, model_conv)
    optimizer_conv = torch.optim.SGD(model_conv.fc.parameters(), lr=0.001, momentum=0.9)
    exp_lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer_conv, step_size=7, gamma=0.1)
    model_conv.train()
    loss = F.cross_entropy(model_conv(x), torch.tensor([1, 0]))
    optimizer_conv.zero_grad()
    loss.backward()
    optimizer_conv.step()
    exp_lr_scheduler.step()
    out["frozen"] = (model_conv.conv1.weight.grad is None, model_conv.fc.weight.grad is not None,
                     sum(p.numel() for p in model_conv.parameters() if p.requires_grad))
    model_ft = TinyResNet().requires_grad_(False)
    out["requires_grad_"] = any(p.requires_grad for p in model_ft.parameters())
    _, preds = torch.max(model_conv(x), 1)
    out["preds"] = (str(preds.dtype), tuple(preds.shape))
    return out
