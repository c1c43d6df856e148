"""The fixed model configurations of issue 3; they never change, so runs stay comparable."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class GPTConfig:
    d_model: int
    n_layers: int
    n_heads: int
    vocab: int
    seq: int
    batch: int


GPT_SMALL = GPTConfig(d_model=384, n_layers=6, n_heads=6, vocab=8192, seq=256, batch=8)
GPT_TINY = GPTConfig(d_model=128, n_layers=2, n_heads=4, vocab=1024, seq=64, batch=4)
CNN_BATCH, CNN_IMAGE, CNN_CLASSES = 16, (3, 64, 64), 10
LSTM_LAYERS, LSTM_HIDDEN, LSTM_SEQ, LSTM_BATCH, LSTM_CLASSES = 2, 256, 64, 16, 10


class Block(nn.Module):
    def __init__(self, c: GPTConfig) -> None:
        super().__init__()
        self.n_heads = c.n_heads
        self.ln1 = nn.LayerNorm(c.d_model)
        self.qkv = nn.Linear(c.d_model, 3 * c.d_model)
        self.proj = nn.Linear(c.d_model, c.d_model)
        self.ln2 = nn.LayerNorm(c.d_model)
        self.fc = nn.Linear(c.d_model, 4 * c.d_model)
        self.out = nn.Linear(4 * c.d_model, c.d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_heads, d // self.n_heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """nanoGPT-style decoder; no dropout (its random streams would differ between devices)."""

    def __init__(self, c: GPTConfig) -> None:
        super().__init__()
        self.tok = nn.Embedding(c.vocab, c.d_model)
        self.pos = nn.Embedding(c.seq, c.d_model)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.n_layers))
        self.ln_f = nn.LayerNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as in GPT-2: gives gpt-small its ~14M parameters
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = (
                    0.02 / math.sqrt(2 * c.n_layers)
                    if name.endswith(("proj.weight", "out.weight"))
                    else 0.02
                )
                nn.init.normal_(p, std=std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.skip: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.b1(self.c1(x)))
        return F.relu(self.b2(self.c2(y)) + self.skip(x))


class SmallResNet(nn.Module):
    """ResNet-style: 3x3 stem, four stages of one basic block (32..256 channels), pool, linear."""

    def __init__(self, widths: tuple[int, ...] = (32, 64, 128, 256)) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU()
        )
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks.append(BasicBlock(cin, w, 1 if i == 0 else 2))
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, CNN_CLASSES)

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        y = self.blocks(self.stem(x)).mean(dim=(2, 3))
        return F.cross_entropy(self.fc(y), targets)


class LSTMClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(LSTM_HIDDEN, LSTM_HIDDEN, num_layers=LSTM_LAYERS)
        self.fc = nn.Linear(LSTM_HIDDEN, LSTM_CLASSES)

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        y, _ = self.lstm(x)
        return F.cross_entropy(self.fc(y[-1]), targets)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    kind: str  # which part of the issue asks for it: "compute-bound", "overhead-bound", ...

    def build(self) -> nn.Module:
        if self.name == "gpt-small":
            return GPT(GPT_SMALL)
        if self.name == "gpt-tiny":
            return GPT(GPT_TINY)
        if self.name == "cnn":
            return SmallResNet()
        return LSTMClassifier()

    def batch(self, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """One input batch on CPU, drawn from `gen` so every contender sees the same data."""
        if self.name in ("gpt-small", "gpt-tiny"):
            c = GPT_SMALL if self.name == "gpt-small" else GPT_TINY
            idx = torch.randint(c.vocab, (c.batch, c.seq + 1), generator=gen)
            return idx[:, :-1].contiguous(), idx[:, 1:].contiguous()
        if self.name == "cnn":
            x = torch.randn(CNN_BATCH, *CNN_IMAGE, generator=gen)
            return x, torch.randint(CNN_CLASSES, (CNN_BATCH,), generator=gen)
        x = torch.randn(LSTM_SEQ, LSTM_BATCH, LSTM_HIDDEN, generator=gen)
        return x, torch.randint(LSTM_CLASSES, (LSTM_BATCH,), generator=gen)


MODELS = {
    "gpt-small": ModelSpec("gpt-small", "compute-bound"),
    "gpt-tiny": ModelSpec("gpt-tiny", "overhead-bound"),
    "cnn": ModelSpec("cnn", "convolutions"),
    "lstm": ModelSpec("lstm", "recurrent"),
}


def build_model(name: str, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return MODELS[name].build()
