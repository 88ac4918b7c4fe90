"""What travels between pflnb's Flower apps: Flower's records (state dicts in ArrayRecords, everything else in
ConfigRecords beside them: :func:`pack` / :func:`unpack`), the message types, the run's config (from a ``flwr run``
project's run config) and what the apps do not run (:func:`check_supported`)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from pflnb.experiments.config import ExperimentConfig, profile_config
from pflnb.fl.engine import to_jsonable

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")  # read when flwr is imported: a reproduction sends no telemetry
try:  # the apps' modules take Flower's names from here, after this check
    from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict  # noqa: F401
    from flwr.app import Context as FlowerContext  # noqa: F401
    from flwr.clientapp import ClientApp  # noqa: F401
    from flwr.serverapp import Grid, ServerApp  # noqa: F401
except ImportError as err:  # pragma: no cover - flwr is in requirements.txt
    raise ImportError("pflnb.flower needs Flower: pip install 'pflnb[flower]' (flwr[simulation] 1.42)") from err

log = logging.getLogger("flwr").getChild("pflnb")  # Flower's handler shows it (flwr run --stream, simulations)
STATE = "pflnb-"  # prefix of the records this app keeps in a client's context.state
EVAL_KEYS = ("val_acc", "test_acc", "val_loss", "test_loss")
AFTER_AGGREGATE = "train.after_aggregate"
REPLY_TIMEOUT = 3600.0  # seconds the server waits for a round's replies (Flower's strategies wait as long)


class FlowerUnsupported(ValueError):
    """A run that the Flower apps cannot execute as the engine does (the reason names the method and what it needs)."""


# ---- state dicts and other state in Flower records ----------------------------------------------------------------


def pack(value: Any, name: str) -> RecordDict:
    """``value`` (a state: nested dicts, lists and tuples of tensors, arrays and plain values) as two Flower records:
    ``<name>.arrays``, an ArrayRecord of every tensor (keyed by its path, e.g. ``model/conv1.weight``), and
    ``<name>.layout``, a ConfigRecord holding the structure and the plain values as JSON (exact: floats by ``repr``)."""
    tensors: dict[str, torch.Tensor] = {}

    def enc(v: Any, path: str) -> Any:
        if isinstance(v, torch.Tensor):
            key = path if path not in tensors else f"{path}#{len(tensors)}"
            tensors[key] = v.detach().cpu()
            return {"T": key}
        if isinstance(v, np.ndarray):
            key = path if path not in tensors else f"{path}#{len(tensors)}"
            tensors[key] = torch.from_numpy(np.ascontiguousarray(v))
            return {"N": key}
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if isinstance(k, bool) or not isinstance(k, str | int):
                    raise TypeError(f"{name}: key {k!r} at {path or '/'} is neither a string nor an integer")
                items.append([k if isinstance(k, str) else {"I": k}, enc(x, f"{path}/{k}" if path else str(k))])
            return {"D": items}
        if isinstance(v, list | tuple):
            return {"L" if isinstance(v, list) else "U": [enc(x, f"{path}/{i}") for i, x in enumerate(v)]}
        if isinstance(v, np.generic):
            return {"G": [v.dtype.str, v.item()]}
        if v is None or isinstance(v, bool | int | float | str):
            return v
        raise TypeError(f"{name}: cannot send a {type(v).__name__} at {path or '/'} in a Flower record")

    layout = json.dumps(enc(value, ""), allow_nan=True)
    return RecordDict({f"{name}.arrays": ArrayRecord(tensors), f"{name}.layout": ConfigRecord({"json": layout})})


def unpack(records: RecordDict, name: str, device: torch.device | str = "cpu") -> Any:
    """The value that :func:`pack` put in ``records`` under ``name``, its tensors on ``device``."""
    arrays = records.array_records[f"{name}.arrays"]
    tensors = {k: torch.from_numpy(np.array(a.numpy(), copy=True)).to(device) for k, a in arrays.items()}  # not a tensor

    def dec(v: Any) -> Any:
        if isinstance(v, dict):
            ((tag, x),) = v.items()
            if tag in ("T", "N"):
                return tensors[x] if tag == "T" else tensors[x].cpu().numpy()
            if tag == "D":
                return {(k["I"] if isinstance(k, dict) else k): dec(y) for k, y in x}
            if tag in ("L", "U"):
                items = [dec(y) for y in x]
                return items if tag == "L" else tuple(items)
            if tag == "G":
                return np.dtype(x[0]).type(x[1])
            if tag == "I":
                return x
        return v

    return dec(json.loads(records.config_records[f"{name}.layout"]["json"]))


def _merge(*parts: RecordDict) -> RecordDict:
    out = RecordDict()
    for part in parts:
        for k, v in part.items():
            out[k] = v
    return out


def _numbers(metrics: Mapping[str, Any]) -> dict[str, int | float]:
    """The int and float entries of ``metrics`` (a MetricRecord takes numbers only)."""
    out: dict[str, int | float] = {}
    for k, v in to_jsonable(dict(metrics)).items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int | float):
            out[k] = v
    return out


# ---- the config of a run ------------------------------------------------------------------------------------------


def config_from_run_config(run_config: Mapping[str, Any]) -> ExperimentConfig:
    """The ExperimentConfig a Flower run config describes: ``profile`` and ``dataset`` pick the profile's row,
    ``method-params`` (a JSON object) the method's hyperparameters, ``num-server-rounds`` the rounds, and any other key
    a config field (Flower's dashes for underscores: ``local-epochs``); the app's own keys (``out``, ``server-data``)
    are skipped."""
    values = {str(k).replace("-", "_"): v for k, v in run_config.items() if str(k) not in ("out", "server-data")}
    if "num_server_rounds" in values:  # Flower's name for the number of rounds
        values["rounds"] = values.pop("num_server_rounds")
    profile = values.pop("profile", "smoke")
    dataset = values.pop("dataset", "digits5-lite")
    params = values.pop("method_params", "{}")
    if isinstance(params, str):
        try:
            params = json.loads(params) if params.strip() else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"run config method-params must be a JSON object, got {params!r}: {e}") from None
    if not isinstance(params, dict):
        raise ValueError(f"run config method-params must be a JSON object, got {params!r}")
    if isinstance(values.get("fractions"), list):
        values["fractions"] = tuple(values["fractions"])
    cfg = profile_config(profile, dataset, **values, method_params=params)
    cfg.validate()
    return cfg


def check_supported(cfg: ExperimentConfig) -> None:
    """Raise FlowerUnsupported for what the Flower apps do not run (held-out clients: the engine evaluates them
    on the server with the clients' data)."""
    if cfg.unseen_clients:
        raise FlowerUnsupported(
            f"unseen_clients={cfg.unseen_clients}: the Flower apps do not evaluate held-out clients; use the engine (pflnb run)"
        )
