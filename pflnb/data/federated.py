"""Federated datasets: per-client train/val/test tensors plus a manifest of class counts."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
import torch

SPLITS = ("train", "val", "test")


@dataclass
class Split:
    """Images ``x`` (N, C, H, W) float32 and integer labels ``y`` (N,) of one client split."""

    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def to(self, device: torch.device | str) -> Split:
        """Return this split on ``device``."""
        return Split(self.x.to(device), self.y.to(device))


@dataclass
class ClientData:
    """One client's data: three splits, a display name and its domain (feature-shift source)."""

    cid: int
    name: str
    domain: str
    train: Split
    val: Split
    test: Split

    def split(self, name: str) -> Split:
        """Return the split called ``name`` (train, val or test)."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        return getattr(self, name)

    def to(self, device: torch.device | str) -> ClientData:
        """Return this client's data on ``device``."""
        return ClientData(
            self.cid,
            self.name,
            self.domain,
            self.train.to(device),
            self.val.to(device),
            self.test.to(device),
        )


@dataclass
class FederatedDataset:
    """Clients taking part in federation, held-out (unseen) clients, and dataset facts."""

    name: str
    clients: list[ClientData]
    num_classes: int
    input_shape: tuple[int, int, int]
    unseen: list[ClientData] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    @property
    def num_clients(self) -> int:
        """Number of clients that take part in federation."""
        return len(self.clients)

    def to(self, device: torch.device | str) -> FederatedDataset:
        """Return the dataset with every tensor on ``device``."""
        return FederatedDataset(
            self.name,
            [c.to(device) for c in self.clients],
            self.num_classes,
            self.input_shape,
            [c.to(device) for c in self.unseen],
            dict(self.info),
        )

    def manifest(self) -> pd.DataFrame:
        """Class counts per client and split: one row per (client, split), one column per class."""
        rows = []
        for group, clients in (("seen", self.clients), ("unseen", self.unseen)):
            for c in clients:
                for s in SPLITS:
                    counts = torch.bincount(c.split(s).y.cpu(), minlength=self.num_classes)
                    row = {"cid": c.cid, "name": c.name, "domain": c.domain, "group": group, "split": s}
                    row.update({int(k): int(v) for k, v in enumerate(counts.tolist())})
                    row["total"] = int(counts.sum())
                    rows.append(row)
        return pd.DataFrame(rows)
