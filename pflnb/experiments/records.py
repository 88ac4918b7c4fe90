"""Shipped run records: the cache behind a notebook's outputs, exported as one compressed file, imported with every
record checked, and verified by recomputing a random sample.

Since the CPU kernels are pinned (:mod:`pflnb.kernels`), a record recomputes bit for bit on any Intel AVX2 x86-64
machine, except its wall-clock fields (on another vendor's CPU MKL runs its own branch: verify then reports
differences, as it should; the determinism guide). So each record ships with a **digest**: the SHA-256 of its canonical JSON
(:func:`stable`: wall-clock fields and the machine's description left out, the kernel mode kept).

- :func:`export` reads a reproduction's run logs (``executed/<profile>/runs/<notebook>.jsonl``: every job a
  notebook loaded or computed, with its kind, tuning or verdict, and the experiments that asked for it) and writes
  ``records/<profile>/<notebook>.jsonl.xz`` (xz: 40 % smaller than gzip on these files), one line per record: its
  cache path, kind, experiments, digest and content. A record file larger than :data:`INLINE_MAX` bytes (LG-Mix's
  cached final model states, 1–8 MB each, incompressible floats) ships its **digest only**: the notebook recomputes
  it, and a second import then checks the recomputed file against that digest. A paper-profile JSON record ships
  whole up to :data:`PAPER_INLINE_MAX`; with ``merge`` a sweep ships in parts (each part's log adds its records to
  the file, or rewrites those already in it).
- :func:`import_records` fills the results cache from such files; a line whose content does not give its digest is
  refused with an error naming it, before anything is written; a file already in the cache is never overwritten
  (a different one is reported), a digest-only line whose file exists is checked against its digest.
- :func:`claim_lines` selects the records one claim read: the runs of the experiments its claims CSV row names
  (column ``reads``).
- :func:`verify` draws records at random (a printed seed; stratified so that every notebook and kind is drawn),
  recomputes each in a fresh cache by the job that computed it (:func:`rebuild`: an engine run from its config, or a
  paper's own job such as FedPG's P-model scores), and compares digests; the first differing field is named.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import importlib
import io
import json
import lzma
import random
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import torch

from pflnb import kernels
from pflnb.experiments.cache import read_json, read_torch, results_root, strict_json, write_atomic, write_json_atomic
from pflnb.experiments.claims import figures_root, read_claims
from pflnb.experiments.config import ExperimentConfig
from pflnb.experiments.executors import Serial, execute
from pflnb.experiments.jobs import REBUILDERS, TRANSIENT, Job, RunJob
from pflnb.experiments.registry import PAPERS
from pflnb.fl.engine import to_jsonable

RECORDS = Path(__file__).resolve().parents[2] / "records"  # the repository's shipped records
SUFFIX = ".jsonl.xz"  # a shipped record file's name: <notebook>.jsonl.xz
INLINE_MAX = 2**20  # bytes: a larger record file ships its digest only (the notebook recomputes it); the largest JSON
# records (FedPG's, 258 KiB) ship whole, the incompressible final model states (1.3–7.7 MB) as digests
# A paper-profile JSON record costs minutes to hours to recompute (FedPG's P-model jobs: 15-45 minutes each, 3.8 MB),
# so it ships whole up to this size: importing it decides the paper-setting claims again without recomputing. Final
# model states (torch files) keep INLINE_MAX at every profile.
PAPER_INLINE_MAX = 64 * 2**20
DIGEST_ONLY = "digest"  # the encoding of a line without content
WALL_CLOCK = ("time", "wall_time_s", "seconds", "fa_time")  # keys whose values are wall-clock times, at any depth


def stable(record: Any) -> Any:
    """``record`` as plain JSON values without what differs between two computations of it on two machines: the
    wall-clock fields (:data:`WALL_CLOCK`) at any depth, and of its ``kernels`` description all but the mode."""
    if isinstance(record, dict):
        out = {}
        for k, v in record.items():
            if k in WALL_CLOCK:
                continue
            if k == "kernels" and isinstance(v, dict):
                out[k] = {"mode": v.get("mode")}
                continue
            out[str(k)] = stable(v)
        return out
    if isinstance(record, list | tuple):
        return [stable(v) for v in record]
    return to_jsonable(record) if isinstance(record, torch.Tensor) else record


def digest(record: Any) -> str:
    """SHA-256 of the record's canonical JSON (:func:`stable`, keys sorted, NaN and infinities as strings)."""
    text = json.dumps(strict_json(to_jsonable(stable(record))), sort_keys=True, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The path of the first field where two stable records differ (None when equal)."""
    a, b = strict_json(to_jsonable(stable(a))), strict_json(to_jsonable(stable(b)))
    return _diff(a, b, where)


def _diff(a: Any, b: Any, where: str) -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}.{k} (present in one only)".lstrip(".")
            d = _diff(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where} (length {len(a)} vs {len(b)})".lstrip(".")
        for i, (x, y) in enumerate(zip(a, b)):
            d = _diff(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{where} ({a!r} vs {b!r})".lstrip(".")


@dataclass
class Line:
    """One shipped record: its cache ``path`` (relative to the results root), the ``notebook`` and ``kind`` (tuning,
    verdict, ...) that asked for it, the paper's ``experiments`` that read it (none for a job no experiment ran, an
    older file's lines), its digest, and its content (a JSON record, a torch record in base64, or None: encoding
    :data:`DIGEST_ONLY`)."""

    notebook: str
    kind: str
    path: str
    digest: str
    content: Any
    encoding: str = "json"
    experiments: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.experiments = tuple(self.experiments)

    @property
    def shipped(self) -> bool:
        """Whether the line holds its record (not its digest only)."""
        return self.encoding != DIGEST_ONLY

    def record(self) -> Any:
        """The record the content holds."""
        if not self.shipped:
            raise ValueError(f"{self.where()}: shipped as its digest only; its notebook recomputes it")
        if self.encoding == "torch":
            return torch.load(io.BytesIO(base64.b64decode(self.content)), map_location="cpu", weights_only=False)
        return self.content

    def where(self) -> str:
        return f"{self.notebook}: {self.path}"

    def cache_path(self) -> str:
        """Where the record belongs in a results cache: its profile's folder for the kernels it was computed under
        (:func:`pflnb.kernels.cache_folder`'s rule, read from the record's own ``kernels.mode``), so that a record of
        another kernel mode than today's default (the ``avx2`` pin's, say) is read by a process under that mode and
        never stands in for a record of the default kernels."""
        if not self.shipped:
            return self.path  # its folder as exported
        head, _, rest = self.path.partition("/")
        record = self.record()
        made = (record.get("kernels") or {}).get("mode") if isinstance(record, dict) else None
        profile = head.split(".", 1)[0]
        folder = profile if made in (None, kernels.DEFAULT) else f"{profile}.{made}"
        return f"{folder}/{rest}" if rest else self.path


def _read_cached(path: Path) -> tuple[Any, str, Any]:
    """(record, encoding, content) of a cache file."""
    if path.suffix == ".pt" or path.name.endswith("pt"):
        return read_torch(path), "torch", base64.b64encode(path.read_bytes()).decode()
    record = read_json(path)
    return record, "json", json.loads(path.read_text())


def logged_jobs(run_log: Path) -> list[dict[str, Any]]:
    """The jobs a notebook's run log names as loaded or computed (first mention of each job: its method, key and
    suffix), with their kind, and ``experiments``: every experiment that asked for the job, in order."""
    seen: dict[tuple[str, str, str], dict[str, Any]] = {}
    for line in run_log.read_text().splitlines():
        event = json.loads(line)
        if event.get("event") not in ("loaded", "computed"):
            continue
        job = (event.get("method"), event.get("key"), event.get("suffix"))
        first = seen.setdefault(job, {**event, "experiments": []})
        if event.get("experiment") and event["experiment"] not in first["experiments"]:
            first["experiments"].append(event["experiment"])
    return list(seen.values())


def export(
    executed: Path, out: Path, root: Path | None = None, inline_max: int | None = None, merge: bool = False
) -> dict[str, dict[str, Any]]:
    """Write ``out/<notebook>.jsonl.xz`` (replacing an older ``.jsonl.gz`` of it) for every run log under
    ``executed/runs/``: each record the notebook read from the results cache ``root`` (default :func:`results_root`),
    a file larger than ``inline_max`` bytes as its digest only (default :data:`INLINE_MAX`, and
    :data:`PAPER_INLINE_MAX` for the paper profile's JSON records); returns per notebook its record count, digest-only
    count, size in bytes and ``kept``. With ``merge``, the lines of the existing file whose records the log does not
    name are kept (``kept`` counts them), before the logged ones, and a logged record already in the file keeps the
    experiments its line named besides the log's: runs shipped in parts, each part's log naming only the runs it
    loaded or computed (a long paper-setting sweep stopped and resumed on another machine); where the log adds only
    records the file lacks, they are appended to it as one more xz stream (readers take the streams in order), so a
    part costs the compression of its own records, not of the whole file again. A logged job
    whose record is not in the cache is an error naming it, unless it ran inside another job (no ``kind``: FedPG's
    P-model job computes its engine run uncached)."""
    root = Path(root or results_root())
    logs = sorted((Path(executed) / "runs").glob("*.jsonl"))
    if not logs:
        raise FileNotFoundError(f"no run logs under {Path(executed) / 'runs'}: run `pflnb reproduce` first")
    Path(out).mkdir(parents=True, exist_ok=True)
    summary = {}
    for log in logs:
        entries, digest_only = [], 0
        for event in logged_jobs(log):
            folder = root / kernels.cache_folder(event["profile"], event.get("seed"))  # the profile's, these kernels
            # the job's own file (two jobs may share a label and key: a run's record and its final states, .final.pt);
            # logs written before the suffix was logged are matched on every suffix
            name = f"{event['method']}-{event['key']}.{event.get('suffix') or '*'}"
            matches = [m for m in sorted(folder.glob(name)) if m.suffix not in (".ckpt", ".tmp")]
            if not matches and not event.get("kind"):
                continue  # a job computed inside another (its engine run, not cached): the outer job's record holds it
            if len(matches) != 1:
                what = "is not" if not matches else f"is {len(matches)} times"
                raise FileNotFoundError(f"{log.stem}: the record of {event['method']} {event['key']} {what} under {folder}")
            path = matches[0]
            record, encoding, content = _read_cached(path)
            whole = event["profile"] == "paper" and encoding == "json"
            limit = inline_max if inline_max is not None else PAPER_INLINE_MAX if whole else INLINE_MAX
            if path.stat().st_size > limit:
                encoding, content, digest_only = DIGEST_ONLY, None, digest_only + 1
            entries.append(
                {
                    "notebook": log.stem,
                    "kind": event.get("kind") or "run",
                    "experiments": event["experiments"],
                    "path": path.relative_to(root).as_posix(),
                    "digest": digest(record),
                    "encoding": encoding,
                    "content": content,
                }
            )
        target, earlier, kept = Path(out) / f"{log.stem}{SUFFIX}", Path(out) / f"{log.stem}.jsonl.gz", []
        shipped = next((f for f in (target, earlier) if f.exists()), None)
        appended = False
        if merge and shipped:  # the shipped lines of records this log does not name, first
            with _open(shipped) as handle:
                old = {(line := json.loads(text))["path"]: (text, line) for text in handle if text.strip()}
            appended = shipped == target and not any(entry["path"] in old for entry in entries)
            for entry in entries:  # a record logged again keeps the experiments its shipped line named
                was = old.pop(entry["path"], (None, {}))[1].get("experiments", [])
                entry["experiments"] = [*was, *(e for e in entry["experiments"] if e not in was)]
            kept = [text.rstrip("\n") for text, _ in old.values()]
            digest_only += sum(line["encoding"] == DIGEST_ONLY for _, line in old.values())
        new = [json.dumps(entry, sort_keys=True, allow_nan=False) for entry in entries]
        if appended:  # only new records: one more xz stream after the shipped file's (minutes less to compress)
            data = target.read_bytes() + _compress(new) if new else target.read_bytes()
        else:
            data = _compress(kept + new)
        write_atomic(target, data)
        earlier.unlink(missing_ok=True)  # the earlier format of the same records
        summary[log.stem] = {"records": len(kept) + len(new), "digest_only": digest_only, "bytes": len(data), "kept": len(kept)}
    return summary


def _compress(lines: list[str]) -> bytes:
    """``lines`` as one xz stream (the strongest preset: records are shipped once and read many times)."""
    return lzma.compress(("\n".join(lines) + "\n").encode(), preset=9 | lzma.PRESET_EXTREME)


def export_report(summary: dict[str, dict[str, Any]], out: Path) -> str:
    """:func:`export`'s summary as text: a line per notebook (records, MiB, digest-only and kept lines), one for all."""
    rows = []
    for nb, info in summary.items():
        only = f"  ({info['digest_only']} as digests only)" if info["digest_only"] else ""
        kept = f"  ({info['kept']} kept from the shipped file)" if info.get("kept") else ""
        rows.append(f"{nb:24s} {info['records']:6d} records  {info['bytes'] / 2**20:8.2f} MiB{only}{kept}")
    total = sum(i["bytes"] for i in summary.values())
    rows.append(f"{'all':24s} {sum(i['records'] for i in summary.values()):6d} records  {total / 2**20:8.2f} MiB -> {out}")
    return "\n".join(rows)


def _open(f: Path) -> IO[str]:
    """A shipped record file opened for reading text (xz, or gzip for earlier exports)."""
    return (gzip.open if str(f).endswith(".gz") else lzma.open)(f, "rt")


def read_lines(files: Iterable[Path]) -> Iterator[Line]:
    """Every line of shipped record files (``.jsonl.xz``, or gzip's ``.jsonl.gz`` of earlier exports)."""
    for f in files:
        with _open(f) as handle:
            for text in handle:
                if text.strip():
                    yield Line(**json.loads(text))


def shipped_files(folder: Path | None = None, profile: str = "cpu") -> list[Path]:
    """The shipped record files of ``profile`` (default folder: the repository's ``records/<profile>``)."""
    folder = Path(folder) if folder is not None else RECORDS / profile
    files = sorted([*folder.glob(f"*{SUFFIX}"), *folder.glob("*.jsonl.gz")])
    if not files:
        raise FileNotFoundError(f"no shipped records under {folder} (`pflnb records export` writes them)")
    return files


class RecordDigestError(ValueError):
    """A shipped record whose content does not give its digest."""


def import_records(files: Sequence[Path], root: Path | None = None) -> dict[str, int]:
    """Fill the results cache ``root`` from shipped record files: every line's digest checked first (any mismatch:
    :class:`RecordDigestError` naming each, nothing written); then each record written where no file is, under the
    folder of the kernels it was computed with (:meth:`Line.cache_path`), an existing file left as it is. A
    digest-only line writes nothing: its file, where the notebook has recomputed it, is checked like any existing one.
    Returns counts: written, present (equal), different (an existing file with another digest, listed in
    ``differ``), missing (digest-only lines whose file is not there yet: their notebook recomputes them)."""
    root = Path(root or results_root())
    lines = list(read_lines(files))
    bad = [ln.where() for ln in lines if ln.shipped and digest(ln.record()) != ln.digest]
    if bad:
        raise RecordDigestError(f"{len(bad)} shipped record(s) do not match their digest, nothing imported: {', '.join(bad)}")
    counts: dict[str, Any] = {"written": 0, "present": 0, "different": 0, "missing": 0, "differ": []}
    for ln in lines:
        target = root / ln.cache_path()
        if target.exists():
            record, _, _ = _read_cached(target)
            same = digest(record) == ln.digest
            counts["present" if same else "different"] += 1
            if not same:
                counts["differ"].append(ln.where())
            continue
        if not ln.shipped:
            counts["missing"] += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if ln.encoding == "torch":
            write_atomic(target, base64.b64decode(ln.content))
        else:
            write_json_atomic(target, ln.content)
        counts["written"] += 1
    return counts


def sample(lines: Sequence[Line], n: int, seed: int, notebook: str | None = None) -> list[Line]:
    """``n`` lines drawn at random with ``seed`` from those that hold their record (not digest-only), stratified: the
    strata (notebook, kind) are visited in turn, one line each, until ``n`` are drawn (all of them when ``n`` exceeds
    the lines)."""
    pool = [ln for ln in lines if ln.shipped and (notebook is None or ln.notebook == notebook)]
    if notebook is not None and not pool:
        raise ValueError(f"no shipped record of notebook {notebook!r}")
    rng = random.Random(seed)
    strata: dict[tuple[str, str], list[Line]] = defaultdict(list)
    for ln in pool:
        strata[(ln.notebook, ln.kind)].append(ln)
    for group in strata.values():
        rng.shuffle(group)
    order = sorted(strata)
    out: list[Line] = []
    while len(out) < min(n, len(pool)):
        for key in order:
            if strata[key] and len(out) < n:
                out.append(strata[key].pop())
    return out


def claim_reads(text: str, figures: Path | None = None) -> tuple[str, str, tuple[str, ...]]:
    """(paper, claim, experiments) of the one claim in the committed claims CSVs (``figures/<paper>/claims*.csv``)
    whose text starts with ``text``: the experiments whose runs its verdict read (column ``reads``). No such claim,
    several, or a row that names no experiment (a theory check, or a CSV written before the column) is an error
    saying which."""
    folder = Path(figures) if figures is not None else figures_root()
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for path in sorted(folder.glob("*/claims*.csv")):
        table, _ = read_claims(path)
        for claim, reads in zip(table["claim"], table["reads"]):
            if claim.startswith(text):
                found[(path.parent.name, claim)] = tuple(reads.split())
    if not found:
        raise ValueError(f"no committed claim starts with {text!r} (the claims CSVs under {folder})")
    if len(found) > 1:
        shown = "; ".join(f"{p}: {c[:70]}" for p, c in list(found)[:5])
        raise ValueError(f"{len(found)} claims start with {text!r}, give more of its text: {shown}")
    (((paper, claim), reads),) = found.items()
    if not reads:
        raise ValueError(
            f"{paper}: {claim!r} names no experiment it read (a check decided on no run, or a claims CSV written before "
            "the 'reads' column: re-execute its notebook)"
        )
    return paper, claim, reads


def claim_lines(lines: Sequence[Line], text: str, figures: Path | None = None) -> tuple[str, list[Line]]:
    """The claim starting with ``text`` (:func:`claim_reads`) and the shipped lines of the runs it read: its paper's
    notebook's records asked for by one of its experiments. None is an error naming the experiments."""
    paper, claim, reads = claim_reads(text, figures)
    pool = [ln for ln in lines if ln.notebook.partition("_")[2] == paper and set(ln.experiments) & set(reads)]
    if not pool:
        raise ValueError(
            f"no shipped record of {paper}'s experiments {list(reads)} (read by {claim!r}); records exported before "
            "the run logs named experiments hold none: export them again"
        )
    return claim, pool


def rebuild(record: dict[str, Any]) -> Job | None:
    """The job that computed ``record``: the first of :data:`~pflnb.experiments.jobs.REBUILDERS` (the papers' own
    jobs, such as FedPG's P-model scores or FedFac's simulations) that knows it, else the engine run of its config;
    None for a record of neither."""
    for key in PAPERS:  # each paper registers its own jobs where it declares them
        importlib.import_module(f"pflnb.papers.{key}.paper")
    job = next((job for job in (fn(record) for fn in REBUILDERS) if job is not None), None)
    if job is None and "config" in record and "key" in record:
        job = RunJob(ExperimentConfig.from_dict(record["config"]))
    return job


class KeyMismatch(ValueError):
    """A shipped plain run whose config no longer gives the key in its file name (the record is stale)."""


def recompute(line: Line) -> tuple[Any | None, str]:
    """The record of ``line`` computed again by the job that computed it (:func:`rebuild`) in a fresh cache, and a
    note; None with the reason where the record is not a job that its fields describe (a wall-clock timing, say),
    or where the job rebuilt is not the one whose key names the record (an evaluation protocol that no
    paper registers, say). A plain run whose config gives another key than its file's raises :class:`KeyMismatch`."""
    record = line.record()
    job = rebuild(record) if isinstance(record, dict) else None
    if job is None:
        return None, "not an engine run nor a job a paper registers: recomputed by its notebook only"
    key = Path(line.path).stem.rsplit("-", 1)[-1]
    if job.key() != key and type(job) is RunJob and not record.get("protocol"):  # a plain run: its config names it
        raise KeyMismatch(f"its config's key is {job.key()}, not its file's {key}: computed under another key scheme")
    if job.key() != key:
        protocol = f" (an engine run under the evaluation protocol {record['protocol']!r})" if record.get("protocol") else ""
        return None, f"not rebuilt from its record{protocol}: recomputed by its notebook only"
    with tempfile.TemporaryDirectory(prefix="pflnb-verify-") as tmp:
        (fresh,) = execute([job], Serial(), cache=False, root=Path(tmp), progress=False)
    return {k: v for k, v in fresh.items() if k not in TRANSIENT}, ""


def _status(line: Line) -> tuple[str, str]:
    """(equal, differs or skipped; the first differing field or why) of one shipped line, recomputed."""
    if not line.shipped:
        return "skipped", "shipped as its digest only: `pflnb records import` checks it once recomputed"
    shipped = line.record()
    if digest(shipped) != line.digest:
        return "differs", "the shipped content does not give its digest"
    try:
        fresh, why = recompute(line)
    except KeyMismatch as err:
        return "differs", str(err)
    if fresh is None:
        return "skipped", why
    if digest(fresh) == line.digest:
        return "equal", ""
    return "differs", first_difference(shipped, fresh) or "digest only"


def verify(lines: Sequence[Line], progress: bool = True) -> list[dict[str, Any]]:
    """Recompute each line's record and compare it with the shipped one: a row per line with ``status`` equal,
    differs (and the first differing field) or skipped (and why), and the seconds it took."""
    rows = []
    for i, ln in enumerate(lines):
        t0 = time.perf_counter()
        status, detail = _status(ln)
        row = {"notebook": ln.notebook, "kind": ln.kind, "path": ln.path, "status": status, "detail": detail}
        row["seconds"] = round(time.perf_counter() - t0, 1)
        rows.append(row)
        if progress:
            print(f"[{i + 1}/{len(lines)}] {row['status']:8s} {row['seconds']:7.1f} s  {ln.where()}  {row['detail']}", flush=True)
    return rows
