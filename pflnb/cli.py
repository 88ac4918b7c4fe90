"""Command line: ``pflnb run | sweep | list | reproduce | robustness | claims | check-outputs | site | notebooks``."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from pflnb import kernels, website
from pflnb.algorithms import list_methods
from pflnb.data import DATASETS, PARTITIONS, DataUnavailable
from pflnb.experiments import claims as C
from pflnb.experiments import records as REC
from pflnb.experiments import robustness
from pflnb.experiments.cache import RecordNotCachedWarning
from pflnb.experiments.config import PROFILES, profile_config, profile_seeds
from pflnb.experiments.executors import JobsFailed, make_executor, parse_workers
from pflnb.experiments.jobs import RunDivergedWarning, describe_divergence, is_diverged
from pflnb.experiments.outputs import compare_outputs
from pflnb.experiments.paper import EDGE_STEPS, TUNING_SEEDS, edge_report, robustness_path
from pflnb.experiments.ray_backend import shared_cluster
from pflnb.experiments.reproduce import LOG_NAME, SCOPES, execute
from pflnb.experiments.run import run_many
from pflnb.experiments.tables import mean_std, summary_table
from pflnb.models import MODELS
from pflnb.papers import PAPERS as PAPER_NAMES
from pflnb.resources import copy_notebooks


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _parse_pairs(pairs: list[str], what: str) -> dict[str, Any]:
    """NAME=VALUE pairs from every occurrence of ``what`` merged; one name given two different values is an error."""
    out: dict[str, Any] = {}
    for p in pairs or []:
        if "=" not in p:
            raise ValueError(f"{what} expects NAME=VALUE, got {p!r}")
        k, v = p.split("=", 1)
        k, value = k.strip(), _parse_value(v)
        if not k:
            raise ValueError(f"{what} expects NAME=VALUE, got {p!r}")
        if k in out and out[k] != value:
            raise ValueError(f"{what} sets {k} twice with different values ({out[k]!r} and {value!r})")
        out[k] = value
    if isinstance(out.get("fractions"), list):
        out["fractions"] = tuple(out["fractions"])
    return out


# Config fields the CLI sets through its own options (a --set of them would be overridden).
_OWN_OPTIONS = {"method": "--method/--methods", "seed": "--seeds", "method_params": "--param", "profile": "--profile"}


def _configs(args: argparse.Namespace, methods: list[str]) -> list:
    overrides = _parse_pairs(args.set, "--set")
    for name, option in _OWN_OPTIONS.items():
        if name in overrides:
            raise ValueError(f"--set {name}=... is not allowed; use {option}")
    params = _parse_pairs(args.param, "--param")
    if args.data_root is not None:
        overrides["data_root"] = args.data_root
    if args.device is not None:
        overrides["device"] = args.device
    if args.seeds is not None and not args.seeds:
        raise ValueError("--seeds needs at least one seed")
    if getattr(args, "runner", None):
        overrides["runner"] = args.runner
    seeds = args.seeds if args.seeds else profile_seeds(args.profile)
    repeated = sorted({s for s in seeds if seeds.count(s) > 1})
    if repeated:
        raise ValueError(f"--seeds repeats {repeated}; each seed would run (and count) twice")
    repeated = sorted({m for m in methods if methods.count(m) > 1})
    if repeated:
        raise ValueError(f"--methods repeats {repeated}")
    if args.checkpoint_every < 0:
        raise ValueError(f"--checkpoint-every must be >= 0, got {args.checkpoint_every}")
    base = profile_config(args.profile, args.dataset, **overrides)
    configs = [base.replace(method=m, method_params=params, seed=s) for m in methods for s in seeds]
    for cfg in configs:
        cfg.validate()
    return configs


def _print_results(records: list[dict[str, Any]]) -> int:
    """Print the results table; return the number of diverged runs (each also named on stderr)."""
    df = summary_table(records)
    table = mean_std(df, by=["method"], metrics=["test_acc", "last_test_acc", "worst_client"])
    print(table[["method", "test_acc", "last_test_acc", "worst_client", "seeds", "diverged"]].to_string(index=False))
    diverged = [r for r in records if is_diverged(r)]
    for r in diverged:
        print(f"pflnb: {describe_divergence(r)}", file=sys.stderr)
    return len(diverged)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", default="digits5-lite", help="dataset name (see `pflnb list`)")
    p.add_argument("--profile", default="cpu", choices=PROFILES, help="settings profile")
    p.add_argument("--seeds", type=int, nargs="*", action="extend", help="seeds, each once (default: the profile's)")
    p.add_argument(
        "--set", nargs="*", action="extend", default=[], metavar="FIELD=VALUE", help="config fields, e.g. rounds=5 alpha=0.3"
    )
    p.add_argument(
        "--param", nargs="*", action="extend", default=[], metavar="NAME=VALUE", help="method hyperparameters, e.g. mu=0.01"
    )
    p.add_argument("--data-root", default=None, help="existing folder with real datasets (default: $PFLNB_DATA)")
    p.add_argument("--device", default=None, help="cpu, cuda or auto")
    p.add_argument("--runner", default=None, help="client runner: auto, sequential or batched (default: $PFLNB_RUNNER or auto)")
    p.add_argument(
        "--engine",
        choices=("pflnb", "flower"),
        default="pflnb",
        help="pflnb's engine, or Flower's simulation engine (docs/guides/flower.md)",
    )
    p.add_argument(
        "--server-data", action="store_true", help="with --engine flower: the server may read the clients' data (FedPG, pMixFed)"
    )
    p.add_argument("--force", action="store_true", help="re-run from scratch, ignoring a cached result and any checkpoint")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the results cache")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--checkpoint-every", type=int, default=0, metavar="K", help="save resumable state every K rounds")
    p.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="W",
        help="runs at a time in worker processes, or auto "
        "(on CUDA: as many as the GPU's memory holds; default: $PFLNB_WORKERS or 1)",
    )
    _add_ray(p)


def _workers(text: str) -> int | str:
    try:
        return parse_workers(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_ray(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Ray cluster (see docs/guides/ray.md)")
    g.add_argument("--backend", choices=("local", "ray"), default=None, help="where runs go (default: $PFLNB_BACKEND or local)")
    g.add_argument("--address", default=None, help="Ray cluster: auto, HOST:PORT or ray://HOST:10001 (default: a local instance)")
    g.add_argument("--ray-cpus", type=float, metavar="C", help="CPUs per run on Ray (default: $PFLNB_RAY_CPUS or 1)")
    g.add_argument("--ray-gpus", type=float, metavar="G", help="GPUs per run on Ray, e.g. 0.25 (default: $PFLNB_RAY_GPUS or 0)")


def _ray_resources(args: argparse.Namespace) -> dict[str, float] | None:
    res = {k: v for k, v in (("num_cpus", args.ray_cpus), ("num_gpus", args.ray_gpus)) if v is not None}
    return res or None


def _set_ray_env(args: argparse.Namespace) -> None:
    """Hand the Ray flags of ``pflnb reproduce`` to the notebooks (their run_many reads these variables)."""
    for name, value in (
        ("PFLNB_BACKEND", args.backend),
        ("PFLNB_RAY_ADDRESS", args.address),
        ("PFLNB_RAY_CPUS", args.ray_cpus),
        ("PFLNB_RAY_GPUS", args.ray_gpus),
    ):
        if value is not None:
            os.environ[name] = str(value)


def _cmd_reproduce_on_backend(args: argparse.Namespace) -> int:
    _set_ray_env(args)
    with shared_cluster():  # with the ray backend and no address: one local Ray instance for all notebooks
        return _cmd_reproduce(args)


def _cmd_list(_: argparse.Namespace) -> int:
    print("methods:   ", " ".join(list_methods()))
    print("datasets:  ", " ".join(DATASETS))
    print("partitions:", " ".join(PARTITIONS))
    print("models:    ", " ".join(sorted(MODELS)))
    print("profiles:  ", " ".join(PROFILES))
    return 0


def _cmd_run(args: argparse.Namespace, methods: list[str]) -> int:
    configs = _configs(args, methods)
    if args.engine == "flower":
        return _cmd_run_flower(args, configs)
    if args.server_data:
        raise ValueError("--server-data applies to --engine flower only")
    try:
        records = run_many(
            configs,
            progress=not args.quiet,
            cache=not args.no_cache,
            force=args.force,
            checkpoint_every=args.checkpoint_every,
            executor=make_executor(args.workers, args.backend, args.address, _ray_resources(args)),
        )
    except JobsFailed as err:  # the finished runs are cached; show them, then what failed
        if any(err.records):
            _print_results([r for r in err.records if r is not None])
            _report_not_cached(err.records)
        print(f"pflnb: error: {err}", file=sys.stderr)
        return 1
    diverged = _print_results(records)
    if _report_not_cached(records):
        return EXIT_NOT_CACHED
    return EXIT_DIVERGED if diverged else 0


def _cmd_run_flower(args: argparse.Namespace, configs: list) -> int:
    """The runs through Flower's simulation engine (pflnb.flower): one simulation, the runs one after another; never cached."""
    options = (
        ("--backend ray", args.backend == "ray"),
        ("--workers", args.workers not in (None, 1)),
        ("--checkpoint-every", args.checkpoint_every > 0),
    )
    refused = [option for option, used in options if used]
    if refused:
        raise ValueError(f"--engine flower runs in one Flower simulation; {', '.join(refused)} not allowed with it")
    from pflnb import flower  # the optional Flower extra (pip install pflnb[flower]): imported only when asked for

    records = flower.run_flower(configs, server_data=args.server_data)
    print(f"[pflnb] {len(records)} run(s) through Flower's simulation engine in {records[0]['simulation_s']:.1f} s (not cached)")
    return EXIT_DIVERGED if _print_results(records) else 0


def _report_not_cached(records: list[dict[str, Any] | None]) -> int:
    """Name every finished run whose record could not be cached (its result was printed above); return how many."""
    lost = [r for r in records if r is not None and r.get("not_cached")]
    for r in lost:
        cfg = r["config"]
        print(f"pflnb: error: {cfg['method']} seed {cfg['seed']} finished, but {r['not_cached']}", file=sys.stderr)
    return len(lost)


EXIT_DIVERGED = 3  # exit status when a run diverged (recorded as diverged, never as a result)
EXIT_NOT_CACHED = 4  # exit status when a finished run's record could not be written to the results cache

# Thread variables the notebook kernels inherit: their own torch and numpy work (theory, tables) then runs with a
# fixed thread count, like every run (whose count is its config's ``threads``).
THREAD_ENV = ("PFLNB_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _cmd_reproduce(args: argparse.Namespace) -> int:
    if args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    kernels.require()  # the pinned CPU kernels, or one clear message (PFLNB_KERNELS=native runs on this CPU's own)
    for var in THREAD_ENV:
        os.environ[var] = str(args.threads)
    # executed notebooks get one line per finished sweep, not a stream of redrawn bars (pflnb.progress)
    os.environ.setdefault("PFLNB_PROGRESS_MODE", "final")
    root = Path(__file__).resolve().parents[1]
    notebooks = [Path(n) for n in args.notebooks] or sorted((root / "notebooks").glob("*.ipynb"))
    missing = [str(n) for n in notebooks if not n.is_file()]
    if missing:
        raise FileNotFoundError(f"no such notebook(s): {', '.join(missing)}")
    main_scope = args.scope == "main"
    out = Path(args.out) if args.out else root / "executed" / (f"{args.profile}-main" if main_scope else args.profile)
    if main_scope and not os.environ.get("PFLNB_FIGURES"):
        # the committed figures and claims come from the full reproduction: the main scope writes its own beside
        # its executed notebooks
        os.environ["PFLNB_FIGURES"] = str((out / "figures").resolve())
    results = execute(notebooks, args.profile, out, scope=args.scope, progress_bar=not args.quiet)
    failed = [r.name for r in results if not r.ok]
    print(f"[pflnb] executed notebooks in {out}; log: {out / LOG_NAME}")
    if failed:
        print(f"pflnb: error: {len(failed)} notebook(s) failed: {', '.join(failed)} (see {out / LOG_NAME})", file=sys.stderr)
        return 1
    return 0


def _cmd_records(args: argparse.Namespace) -> int:
    root = Path(args.root) if args.root else None
    if args.action == "export" and args.files:
        raise ValueError(f"records export takes no files (it reads --executed), got {args.files}")
    if args.action == "export":
        executed = Path(args.executed) if args.executed else Path(__file__).resolve().parents[1] / "executed" / args.profile
        out = Path(args.out) if args.out else REC.RECORDS / args.profile
        print(REC.export_report(REC.export(executed, out, root, merge=args.merge), out))
        return 0
    files = [Path(f) for f in args.files] or REC.shipped_files(profile=args.profile)
    counts = REC.import_records(files, root)
    n = counts["missing"]
    gone = f"; {n} shipped as digests only: their notebooks recompute them (import again to check)" if n else ""
    print(f"[pflnb] {counts['written']} records written, {counts['present']} already cached and equal{gone}")
    for where in counts["differ"]:
        print(f"pflnb: differs: {where}: the cached file does not give the shipped digest (left as it is)", file=sys.stderr)
    return 1 if counts["differ"] else 0


def _cmd_verify(args: argparse.Namespace) -> int:
    files = [Path(f) for f in args.files] or REC.shipped_files(profile=args.profile)
    lines = list(REC.read_lines(files))
    if args.claim is not None:
        claim, lines = REC.claim_lines(lines, args.claim)
        print(f"[pflnb] verify: the {len(lines)} shipped records read by {claim!r}")
    lines = [ln for ln in lines if args.notebook in (None, ln.notebook)]
    chosen = lines
    if not args.all:
        seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
        print(f"[pflnb] verify: {args.n} of {len(lines)} shipped records drawn with seed {seed} (--seed {seed} repeats it)")
        chosen = REC.sample(lines, args.n, seed)
    if not chosen:
        raise ValueError(f"no shipped record to verify{' of notebook ' + args.notebook if args.notebook else ''}")
    rows = REC.verify(chosen, progress=not args.quiet)
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    bad = table[table["status"] == "differs"]
    print(
        f"[pflnb] {int((table['status'] == 'equal').sum())} equal, {len(bad)} differ, "
        f"{int((table['status'] == 'skipped').sum())} skipped"
    )
    for _, row in bad.iterrows():
        print(f"pflnb: mismatch: {row['notebook']}: {row['path']}: {row['detail']}", file=sys.stderr)
    return 1 if len(bad) else 0


def _cmd_tuning(args: argparse.Namespace) -> int:
    names = args.papers or list(PAPER_NAMES)
    unknown = sorted(set(names) - set(PAPER_NAMES))
    if unknown:
        raise ValueError(f"unknown paper(s) {unknown}; the papers are {list(PAPER_NAMES)}")
    papers = [importlib.import_module(f"pflnb.papers.{name}.paper").PAPER for name in names]
    table = edge_report(papers, args.profile, progress=not args.quiet)
    print(table.to_string(index=False))
    total = table[["cells", "at edge on the grid", "at edge after the rule"]].sum()
    print(
        f"[pflnb] {args.profile}: {total['at edge on the grid']} of {total['cells']} tuned cells chose a value at an edge "
        f"of the declared grid; {total['at edge after the rule']} still at an edge after the grid-edge rule (cap "
        f"{EDGE_STEPS} steps beyond)"
    )
    return 0


def _cmd_robustness(args: argparse.Namespace) -> int:
    kernels.require()
    root = Path(__file__).resolve().parents[1]
    notebooks = [Path(n) for n in args.notebooks] or sorted((root / "notebooks").glob("*.ipynb"))
    out = Path(args.out) if args.out else root / "executed" / f"{args.profile}-robust"
    reference = Path(args.reference) if args.reference else C.figures_root()
    os.environ.setdefault("PFLNB_PROGRESS_MODE", "final")
    for var in THREAD_ENV:
        os.environ[var] = str(args.threads)
    results = robustness.run(args.profile, out, notebooks, list(TUNING_SEEDS), progress_bar=not args.quiet)
    failed = [r.name for r in results if not r.ok]
    if failed:
        print(f"pflnb: error: {len(failed)} notebook(s) failed: {', '.join(failed)} (see {out / LOG_NAME})", file=sys.stderr)
        return 1
    table = robustness.compare_verdicts(reference, out / "figures")
    path = robustness_path(reference)
    table.to_csv(path, index=False)
    print(robustness.summary(table).to_string(index=False))
    n = int((table.fragile == C.FRAGILE).sum())
    print(f"[pflnb] {n} of {len(table)} verdicts changed under the {robustness.PERTURBED} kernels; table: {path}")
    return 0


def _cmd_moves(args: argparse.Namespace) -> int:
    figures = Path(args.figures) if args.figures else C.figures_root()
    repo = figures.resolve().parent
    with tempfile.TemporaryDirectory() as tmp:  # the ledger at the commit: its claims CSVs
        for key in C.PAPERS:
            shown = subprocess.run(
                ["git", "-C", str(repo), "show", f"{args.moves}:figures/{key}/claims.csv"], capture_output=True
            )
            if shown.returncode == 0:
                (Path(tmp) / key).mkdir()
                (Path(tmp) / key / "claims.csv").write_bytes(shown.stdout)
        old = C.ledger(tmp)
    path = figures / C.MOVES_FILE
    previous = pd.read_csv(path, keep_default_na=False, dtype=str) if path.exists() else None
    renames_path = figures / C.RENAMES_FILE
    renames = pd.read_csv(renames_path, keep_default_na=False, dtype=str) if renames_path.exists() else None
    table = C.ledger_moves(old, C.ledger(figures), previous, renames)
    table.to_csv(path, index=False)
    print(f"[pflnb] {len(table)} verdicts moved since {args.moves}: {path}")
    return 0


def _cmd_claims(args: argparse.Namespace) -> int:
    if args.moves:
        return _cmd_moves(args)
    if args.update_readme:
        readme = Path(__file__).resolve().parents[1] / "README.md"
        text = readme.read_text()
        new = C.readme_with_ledger(text, args.figures)
        if new != text:
            readme.write_text(new)
        print(f"[pflnb] ledger in {readme.name} {'updated' if new != text else 'already current'}")
        return 0
    if args.markdown:
        print(C.ledger_markdown(args.figures))
        return 0
    table = C.ledger(args.figures)
    counts = C.ledger_counts(table).set_index("paper")
    for paper, rows in table.groupby("paper", sort=False):
        c = counts.loc[paper]
        tally = ", ".join(f"{int(c[k])} {k}" for k in (*C.COUNTED, *C.SKIPPED) if c.get(k, 0))
        tally += f"; {int(c[C.STAND_IN])} of them stand-ins" if c[C.STAND_IN] else ""
        print(f"{paper}: {int(c['total'])} claims ({tally}); code: {rows[C.CODE].iloc[0] or 'not recorded'}")
        for r in rows.itertuples(index=False):
            print(f"  [{r.verdict}] {r.claim}")
            print(f"      paper: {r._2}")
            print(f"      ours:  {r.ours}")
            if r.stand_in:
                print(f"      stand-in: {r.stand_in}")
        print()
    print(counts.reset_index().to_string(index=False))
    return 0


def _cmd_check_outputs(args: argparse.Namespace) -> int:
    report = compare_outputs(args.root, ref=args.ref)
    print(report.text())
    return 0 if report.ok else 1


def _cmd_notebooks(args: argparse.Namespace) -> int:
    copied = copy_notebooks(args.dir, force=args.force)
    print(f"[pflnb] {len(copied)} notebooks copied to {Path(args.dir).expanduser()}: {' '.join(p.name for p in copied)}")
    print(f"        open them with: jupyter lab {Path(args.dir).expanduser()}")
    return 0


def _cmd_site(args: argparse.Namespace) -> int:
    import subprocess

    try:
        index = website.build(
            out=Path(args.out) if args.out else None,
            profile=args.profile,
            executed=Path(args.executed) if args.executed else None,
            figures=Path(args.figures) if args.figures else None,
        )
    except subprocess.CalledProcessError as err:
        print(f"pflnb: error: {' '.join(map(str, err.cmd[:4]))} ... failed with status {err.returncode}", file=sys.stderr)
        return 1
    print(f"[pflnb] site built: open {index}")
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
    p_rep.add_argument(
        "--scope",
        default="all",
        choices=SCOPES,
        help="all: every experiment (the committed outputs); main: skip each paper's extended experiments, the sweeps "
        "and analogues added for coverage (outputs under executed/<profile>-main/)",
    )
    p_rep.add_argument("--quiet", action="store_true")
    p_rep.add_argument("--out", default=None, help="folder of the executed notebooks and the log (default: executed/<profile>)")
    _add_ray(p_rep)
    p_rep.add_argument(
        "--threads", type=int, default=1, help="torch/BLAS threads of each notebook kernel (runs use their config's threads)"
    )
    p_rob = sub.add_parser(
        "robustness",
        help="rerun the main scope's verdict seeds under perturbed CPU kernels and mark the verdicts that change (fragile)",
    )
    p_rob.add_argument("notebooks", nargs="*")
    p_rob.add_argument("--profile", default="cpu", choices=PROFILES)
    p_rob.add_argument("--out", default=None, help="folder of the perturbed run (default: executed/<profile>-robust)")
    p_rob.add_argument("--reference", default=None, help="figures folder of the pinned ledger (default: figures/)")
    p_rob.add_argument("--threads", type=int, default=1, help="torch/BLAS threads of each notebook kernel")
    p_rob.add_argument("--quiet", action="store_true")
    p_cl = sub.add_parser("claims", help="the ledger: every paper's claims and verdicts from figures/<paper>/claims.csv")
    p_cl.add_argument("--figures", default=None, help="figures folder (default: the repository's figures/)")
    p_cl.add_argument("--markdown", action="store_true", help="print the ledger as Markdown")
    p_cl.add_argument(
        "--moves",
        default=None,
        metavar="REF",
        help="write ledger_moves.csv into the figures folder: every verdict that changed since the commit REF, and why "
        "(kept when set by hand)",
    )
    p_cl.add_argument(
        "--update-readme",
        action="store_true",
        help="write the count table and a link to the site's ledger into README.md between its markers",
    )
    p_chk = sub.add_parser(
        "check-outputs",
        help="compare the regenerated figures, claims CSVs and README ledger with a commit (after `pflnb reproduce`)",
    )
    p_chk.add_argument("--ref", default="HEAD", help="the commit to compare with (default HEAD)")
    p_chk.add_argument("--root", default=None, help="the repository (default: the one pflnb is imported from)")
    p_site = sub.add_parser("site", help="build the static site (executed notebooks, claims ledger, guides, API) into _site/html")
    p_site.add_argument(
        "--profile",
        default="cpu",
        choices=PROFILES,
        help="show the notebooks in executed/<profile>/; when incomplete, those of the smoke profile (executed if needed)",
    )
    p_site.add_argument("--executed", default=None, help="a folder of executed notebooks to show instead")
    p_site.add_argument("--figures", default=None, help="folder of the claims CSVs and figures (default: figures/)")
    p_site.add_argument("--out", default=None, help="output folder (default: _site/ in the repository)")
    p_tun = sub.add_parser(
        "tuning",
        help="the grid-edge rule's account: per tuned experiment, the cells whose choice sat at an edge of the declared "
        "grid, and those still at an edge after the rule (tuning runs from the cache, computed where missing)",
    )
    p_tun.add_argument("papers", nargs="*", help="papers (default: all five)")
    p_tun.add_argument("--profile", default="cpu", choices=PROFILES)
    p_tun.add_argument("--quiet", action="store_true")
    p_recs = sub.add_parser("records", help="export a reproduction's run records (records/<profile>/), or import shipped ones")
    p_recs.add_argument("action", choices=("export", "import"))
    p_recs.add_argument("files", nargs="*", help="import: shipped record files (default: records/<profile>/*.jsonl.xz)")
    p_recs.add_argument("--profile", default="cpu", help="the profile (export: the executed folder's name, e.g. cpu-main)")
    p_recs.add_argument("--executed", default=None, help="export: the executed folder with runs/ (default executed/<profile>)")
    p_recs.add_argument("--out", default=None, help="export: the output folder (default records/<profile>)")
    p_recs.add_argument("--root", default=None, help="the results cache (default $PFLNB_RESULTS or results/)")
    p_recs.add_argument("--merge", action="store_true", help="export: keep the shipped records the run logs do not name")
    p_ver = sub.add_parser("verify", help="recompute a random sample of shipped records, compare bit for bit (wall clock aside)")
    p_ver.add_argument("files", nargs="*", help="shipped record files (default: records/<profile>/*.jsonl.xz)")
    p_ver.add_argument("-n", type=int, default=8, help="records drawn (stratified by notebook and kind)")
    p_ver.add_argument("--seed", type=int, default=None, help="the draw's seed (default: random, printed)")
    p_ver.add_argument("--notebook", default=None, help="draw from this notebook's records only (e.g. 03_fedpg)")
    p_ver.add_argument(
        "--claim", default=None, help="draw from the records one claim read (the start of its text, as in its claims CSV)"
    )
    p_ver.add_argument("--all", action="store_true", help="every record (of --notebook or --claim when given)")
    p_ver.add_argument("--profile", default="cpu")
    p_ver.add_argument("--quiet", action="store_true")
    p_nb = sub.add_parser("notebooks", help="copy the notebooks (quickstart, one per paper, baselines) into a folder")
    p_nb.add_argument("dir", help="the folder (created if missing)")
    p_nb.add_argument("--force", action="store_true", help="replace notebooks already there")
    args, extra = parser.parse_known_args(argv)  # argparse leaves files after an option unparsed (records import --profile p F)
    if extra and (args.command not in ("records", "verify") or any(e.startswith("-") for e in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra:
        args.files += extra
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RunDivergedWarning)  # the CLI names diverged runs itself, after the table
            warnings.simplefilter("ignore", RecordNotCachedWarning)  # likewise runs whose record could not be cached
            if args.command == "list":
                return _cmd_list(args)
            if args.command == "run":
                return _cmd_run(args, [args.method])
            if args.command == "sweep":
                return _cmd_run(args, args.methods)
            if args.command == "claims":
                return _cmd_claims(args)
            if args.command == "check-outputs":
                return _cmd_check_outputs(args)
            if args.command == "site":
                return _cmd_site(args)
            if args.command == "robustness":
                return _cmd_robustness(args)
            if args.command == "notebooks":
                return _cmd_notebooks(args)
            if args.command == "tuning":
                return _cmd_tuning(args)
            if args.command == "records":
                return _cmd_records(args)
            if args.command == "verify":
                return _cmd_verify(args)
            return _cmd_reproduce_on_backend(args)
    except (
        ValueError,
        FileNotFoundError,
        FileExistsError,
        NotADirectoryError,
        ConnectionError,
        DataUnavailable,
        kernels.KernelsNotHonoured,
    ) as err:
        print(f"pflnb: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
