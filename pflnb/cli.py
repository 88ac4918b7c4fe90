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
    p.add_argument("--force", action="store_true", help="re-run even when a cached result exists")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the results cache")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="K", help="save resumable state every K rounds")
    p.add_argument(
        "--workers", type=int, default=None, metavar="W", help="runs at a time in worker processes (default: $PFLNB_WORKERS or 1)"
    )
    _add_ray(p)


def _add_ray(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Ray cluster (see docs/notes-ray.md)")
    g.add_argument("--backend", choices=("local", "ray"), default=None, help="where runs go (default: $PFLNB_BACKEND or local)")
    g.add_argument("--address", default=None, help="Ray cluster: auto, HOST:PORT or ray://HOST:10001 (default: a local instance)")
    g.add_argument("--ray-cpus", type=float, metavar="C", help="CPUs per run on Ray (default: $PFLNB_RAY_CPUS or 1)")
    g.add_argument("--ray-gpus", type=float, metavar="G", help="GPUs per run on Ray, e.g. 0.25 (default: $PFLNB_RAY_GPUS or 0)")


def _ray_resources(args: argparse.Namespace) -> dict[str, float] | None:
    res = {k: v for k, v in (("num_cpus", args.ray_cpus), ("num_gpus", args.ray_gpus)) if v is not None}
    return res or None


def _set_ray_env(args: argparse.Namespace) -> None:
    """Hand the Ray flags of ``pflnb reproduce`` to the notebooks (their run_many reads these variables)."""
    import os

    for name, value in (
        ("PFLNB_BACKEND", args.backend),
        ("PFLNB_RAY_ADDRESS", args.address),
        ("PFLNB_RAY_CPUS", args.ray_cpus),
        ("PFLNB_RAY_GPUS", args.ray_gpus),
    ):
        if value is not None:
            os.environ[name] = str(value)


def _cmd_reproduce_on_backend(args: argparse.Namespace) -> int:
    from pflnb.experiments.ray_backend import shared_cluster

    _set_ray_env(args)
    with shared_cluster():  # with the ray backend and no address: one local Ray instance for all notebooks
        return _cmd_reproduce(args)


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
    from pflnb.experiments.ray_backend import RunsFailed
    from pflnb.experiments.run import run_many

    configs = _configs(args, methods)
    try:
        records = run_many(
            configs,
            progress=not args.quiet,
            cache=not args.no_cache,
            force=args.force,
            checkpoint_every=args.checkpoint_every,
            workers=args.workers,
            backend=args.backend,
            address=args.address,
            resources=_ray_resources(args),
        )
    except RunsFailed as err:  # the finished runs are cached; show them, then what failed
        if any(err.records):
            _print_results([r for r in err.records if r is not None])
        print(f"pflnb: error: {err}", file=sys.stderr)
        return 1
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
    _add_ray(p_rep)
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            return _cmd_list(args)
        if args.command == "run":
            return _cmd_run(args, [args.method])
        if args.command == "sweep":
            return _cmd_run(args, args.methods)
        return _cmd_reproduce_on_backend(args)
    except (ValueError, DataUnavailable) as err:
        print(f"pflnb: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
