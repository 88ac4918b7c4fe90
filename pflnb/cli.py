"""Command line: ``pflnb run | sweep | list | reproduce``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pflnb.data import DataUnavailable
from pflnb.experiments.config import PROFILES, profile_config, profile_seeds


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _parse_pairs(pairs: list[str], what: str) -> dict[str, Any]:
    out = {}
    for p in pairs or []:
        if "=" not in p:
            raise ValueError(f"{what} expects NAME=VALUE, got {p!r}")
        k, v = p.split("=", 1)
        out[k.strip()] = _parse_value(v)
    if "fractions" in out:
        out["fractions"] = tuple(out["fractions"])
    return out


def _configs(args: argparse.Namespace, methods: list[str]) -> list:
    overrides = _parse_pairs(args.set, "--set")
    params = _parse_pairs(args.param, "--param")
    if args.data_root:
        overrides["data_root"] = args.data_root
    if args.device:
        overrides["device"] = args.device
    if getattr(args, "runner", None):
        overrides["runner"] = args.runner
    seeds = args.seeds if args.seeds else profile_seeds(args.profile)
    base = profile_config(args.profile, args.dataset, **overrides)
    configs = [base.replace(method=m, method_params=params, seed=s) for m in methods for s in seeds]
    for cfg in configs:
        cfg.validate()
    return configs


def _print_results(records: list[dict[str, Any]]) -> None:
    from pflnb.experiments.tables import mean_std, summary_table

    df = summary_table(records)
    table = mean_std(df, by=["method"], metrics=["test_acc", "last_test_acc", "worst_client"])
    print(table[["method", "test_acc", "last_test_acc", "worst_client", "seeds"]].to_string(index=False))


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default="digits5-lite", help="dataset name (see `pflnb list`)")
    p.add_argument("--profile", default="cpu", choices=PROFILES, help="settings profile")
    p.add_argument("--seeds", type=int, nargs="*", help="seeds (default: the profile's)")
    p.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE", help="override config fields, e.g. rounds=5 alpha=0.3")
    p.add_argument("--param", nargs="*", default=[], metavar="NAME=VALUE", help="method hyperparameters, e.g. mu=0.01")
    p.add_argument("--data-root", default=None, help="folder with real datasets (default: $PFLNB_DATA)")
    p.add_argument("--device", default=None, help="cpu, cuda or auto")
    p.add_argument("--runner", default=None, help="client runner: auto, sequential or batched (default: $PFLNB_RUNNER or auto)")
    p.add_argument("--force", action="store_true", help="re-run even when a cached result exists")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the results cache")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="K", help="save resumable state every K rounds")
    p.add_argument(
        "--workers", type=int, default=None, metavar="W", help="runs at a time in worker processes (default: $PFLNB_WORKERS or 1)"
    )


def _cmd_list(_: argparse.Namespace) -> int:
    from pflnb.algorithms import list_methods
    from pflnb.data import DATASETS, PARTITIONS
    from pflnb.models import MODELS

    print("methods:   ", " ".join(list_methods()))
    print("datasets:  ", " ".join(DATASETS))
    print("partitions:", " ".join(PARTITIONS))
    print("models:    ", " ".join(sorted(MODELS)))
    print("profiles:  ", " ".join(PROFILES))
    return 0


def _cmd_run(args: argparse.Namespace, methods: list[str]) -> int:
    from pflnb.experiments.run import run_many

    configs = _configs(args, methods)
    records = run_many(
        configs,
        progress=not args.quiet,
        cache=not args.no_cache,
        force=args.force,
        checkpoint_every=args.checkpoint_every,
        workers=args.workers,
    )
    _print_results(records)
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    import papermill as pm

    root = Path(__file__).resolve().parents[1]
    notebooks = [Path(n) for n in args.notebooks] or sorted((root / "notebooks").glob("*.ipynb"))
    out = root / "executed" / args.profile
    out.mkdir(parents=True, exist_ok=True)
    for nb in notebooks:
        print(f"[pflnb] executing {nb.name} (profile {args.profile})", flush=True)
        pm.execute_notebook(
            str(nb), str(out / nb.name), parameters={"profile": args.profile}, cwd=str(nb.parent), progress_bar=not args.quiet
        )
    print(f"[pflnb] executed notebooks in {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pflnb`` command."""
    parser = argparse.ArgumentParser(prog="pflnb", description="Personalized federated learning reproductions.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list methods, datasets, models and profiles")
    p_run = sub.add_parser("run", help="run one method over the profile's seeds")
    p_run.add_argument("--method", required=True)
    _add_common(p_run)
    p_sweep = sub.add_parser("sweep", help="run several methods over the profile's seeds")
    p_sweep.add_argument("--methods", nargs="+", required=True)
    _add_common(p_sweep)
    p_rep = sub.add_parser("reproduce", help="execute notebooks with papermill")
    p_rep.add_argument("notebooks", nargs="*")
    p_rep.add_argument("--profile", default="cpu", choices=PROFILES)
    p_rep.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "run":
            return _cmd_run(args, [args.method])
        if args.command == "sweep":
            return _cmd_run(args, args.methods)
        return _cmd_reproduce(args)
    except (ValueError, DataUnavailable) as err:
        print(f"pflnb: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
