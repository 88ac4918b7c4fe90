"""``pflnb reproduce``: execute notebooks with papermill and keep a log an overnight run can be read from.

Every notebook runs in a fresh kernel with the profile as its parameter; its runs come from the one results cache,
so a reproduce that was killed resumes where it stopped when started again (finished runs are loaded, not
recomputed). A notebook that fails does not stop the others. Next to the executed notebooks, ``reproduce.log``
gets, per invocation, one line per notebook (status, wall time, runs computed and loaded from the cache) and every
failure with its cell's error and the configs of the runs that failed; ``runs/<notebook>.jsonl`` keeps the last
execution's run log (every job with its stage, kind and, when computed, seconds).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import papermill as pm

from pflnb.experiments.cache import RUN_LOG_ENV
from pflnb.experiments.claims import code_version

LOG_NAME = "reproduce.log"
# Kernels draw inline, so that executed notebooks hold their figures even when the caller exported a non-interactive
# backend (the Makefile exports MPLBACKEND=Agg, under which plt.show() shows nothing); saved files are the same
# under both backends (same pixels and bytes, checked on the quickstart and FedFac notebooks).
INLINE_BACKEND = "module://matplotlib_inline.backend_inline"


@dataclass
class NotebookResult:
    """One notebook's execution: status, wall time, the runs it computed and loaded, its error and failed runs."""

    name: str
    ok: bool
    seconds: float
    computed: int = 0
    loaded: int = 0
    not_cached: int = 0
    error: str = ""
    failed_runs: list[dict[str, Any]] = field(default_factory=list)
    set_aside: list[dict[str, Any]] = field(default_factory=list)

    def line(self) -> str:
        """The notebook's line in the log."""
        runs = f"runs: {self.computed} computed, {self.loaded} loaded from the cache"
        if self.not_cached:
            runs += f", {self.not_cached} not cached (disk?)"
        if self.set_aside:
            runs += f", {len(self.set_aside)} unusable cached record(s) moved aside and recomputed"
        status = "ok" if self.ok else "FAILED"
        return f"{self.name}: {status} in {self.seconds:.0f} s; {runs}" + (f"; error: {self.error}" if self.error else "")


RUNS_DIR = "runs"  # beside the executed notebooks: one run log per notebook, <stem>.jsonl


def run_log(out: Path, notebook: Path) -> Path:
    """The run log of ``notebook`` executed into ``out``: one JSON line per job the notebook asked for (loaded,
    computed with its seconds, failed; its stage and kind), rewritten at each execution."""
    return out / RUNS_DIR / f"{notebook.stem}.jsonl"


def read_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    events = []
    for line in path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a kill
            continue
    return events


def _error_line(err: BaseException) -> str:
    """The failing cell's exception in one line (papermill's error carries the kernel's ename and evalue)."""
    ename, evalue = getattr(err, "ename", None), getattr(err, "evalue", None)
    text = f"{ename}: {evalue}" if ename else f"{type(err).__name__}: {err}"
    return " ".join(text.split())[:500]


SCOPES = ("all", "main")  # every experiment; the main scope skips each paper's extended ones (Paper.extended)


def notebook_parameters_for(notebook: Path, profile: str, scope: str) -> dict[str, Any]:
    """What papermill passes to ``notebook``: the profile, and ``extended`` (False in the main scope) to the
    notebooks that declare it."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, got {scope!r}")
    params: dict[str, Any] = {"profile": profile}
    if "extended" in pm.inspect_notebook(str(notebook)):
        params["extended"] = scope == "all"
    return params


def execute(
    notebooks: list[Path],
    profile: str,
    out: Path,
    *,
    scope: str = "all",
    progress_bar: bool = True,
    log_name: str = LOG_NAME,
) -> list[NotebookResult]:
    """Execute ``notebooks`` at ``profile`` into ``out`` (one executed copy each) and append to ``out/reproduce.log``;
    return one :class:`NotebookResult` per notebook (all of them, also after a failure). ``scope="main"`` skips each
    paper's extended experiments (:func:`notebook_parameters_for`)."""
    params = {nb: notebook_parameters_for(nb, profile, scope) for nb in notebooks}  # a bad scope fails before any work
    out = out.resolve()  # the kernels run in the notebooks' folder: the run log's path must not be relative
    out.mkdir(parents=True, exist_ok=True)
    log = out / log_name
    t_all = time.perf_counter()
    with open(log, "a") as f:
        f.write(
            f"== pflnb reproduce --profile {profile} --scope {scope}: {time.strftime('%Y-%m-%d %H:%M:%S')}, {code_version()}\n"
        )
    results = []
    previous = {k: os.environ.get(k) for k in (RUN_LOG_ENV, "MPLBACKEND")}
    os.environ["MPLBACKEND"] = INLINE_BACKEND
    try:
        for nb in notebooks:
            print(f"[pflnb] executing {nb.name} (profile {profile})", flush=True)
            events_path = run_log(out, nb)
            events_path.parent.mkdir(exist_ok=True)
            events_path.write_text("")  # this execution's runs only (an empty log: a notebook without jobs)
            os.environ[RUN_LOG_ENV] = str(events_path)  # the kernel and its workers inherit it
            t0, error = time.perf_counter(), ""
            try:
                pm.execute_notebook(
                    str(nb), str(out / nb.name), parameters=params[nb], cwd=str(nb.parent), progress_bar=progress_bar
                )
            except Exception as err:  # the notebook failed: log it and go on with the next one
                error = _error_line(err)
                print(f"[pflnb] {nb.name} failed: {error}", flush=True)
            events = read_events(events_path)  # kept: benchmarks/reproduce_cost.py reads it
            res = NotebookResult(
                nb.name,
                not error,
                time.perf_counter() - t0,
                computed=sum(e["event"] == "computed" for e in events),
                loaded=sum(e["event"] == "loaded" for e in events),
                not_cached=sum(bool(e.get("not_cached")) for e in events),
                error=error,
                failed_runs=[e for e in events if e["event"] == "failed"],
                set_aside=[e for e in events if e["event"] == "set_aside"],
            )
            results.append(res)
            with open(log, "a") as f:
                f.write(res.line() + "\n")
                for e in res.failed_runs:
                    f.write(f"  failed run {e['method']} seed {e['seed']} (key {e['key']}): {e.get('error', '')}\n")
                    f.write(f"    config: {json.dumps(e.get('config', {}), sort_keys=True)}\n")
                for e in res.set_aside:
                    f.write(f"  set aside {e['method']} seed {e['seed']}: {e['path']} -> {e['moved_to']} ({e['reason']})\n")
    finally:
        for k, v in previous.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    failed = [r.name for r in results if not r.ok]
    aside = [e for r in results for e in r.set_aside]
    with open(log, "a") as f:
        f.write(
            f"done: {len(results)} notebook(s), {len(failed)} failed{' (' + ', '.join(failed) + ')' if failed else ''}, "
            f"{sum(r.computed for r in results)} runs computed, {sum(r.loaded for r in results)} loaded, "
            f"in {time.perf_counter() - t_all:.0f} s\n"
        )
        if aside:
            f.write(f"records moved aside and recomputed ({len(aside)}): kept where listed, never deleted\n")
            for e in aside:
                f.write(f"  {e['path']} -> {e['moved_to']}: {e['reason']}\n")
    if aside:
        print(f"[pflnb] {len(aside)} unusable cached record(s) were moved aside and recomputed; see {log}", flush=True)
    return results
