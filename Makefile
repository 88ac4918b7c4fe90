# pflnb: `make reproduce` runs every notebook on the cpu profile (main scope; `make reproduce-all`: every experiment); `make test` runs the tests; `make site` builds the site.
# They create the environment (.venv) and fetch the embedded data first when missing.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.pflnb-installed
FMNIST := /usr/share/datasets/fashion-mnist
PROFILE ?= cpu
WORKERS ?= 2
THREADS ?= 1
# BACKEND=ray runs each notebook's sweeps as Ray tasks: on RAY_ADDRESS (auto, HOST:PORT, ray://HOST:10001) or, when
# empty, on one local Ray instance shared by all notebooks; RAY_CPUS / RAY_GPUS are the resources of each run.
BACKEND ?= local
RAY_ADDRESS ?=
RAY_CPUS ?= 1
RAY_GPUS ?= 0
export PYTHONHASHSEED := 0
export MPLBACKEND := Agg

.PHONY: help env data browser test test-gpu test-long unit notebooks lint format reproduce reproduce-all robustness check-outputs ledger site benchmark records verify outputs \
	benchmark-gpu clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements.txt constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $(STAMP)

env: $(STAMP) ## create .venv with the pinned requirements and the package (editable)

data: ## install the real Fashion-MNIST (Debian package dataset-fashion-mnist) where apt-get is allowed
	@if [ -d $(FMNIST) ]; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq dataset-fashion-mnist >/dev/null) \
	  || echo "note: could not install dataset-fashion-mnist; Fashion-MNIST falls back to \$$PFLNB_DATA or torchvision's download"; \
	else echo "note: apt-get not available; Fashion-MNIST is read from \$$PFLNB_DATA or downloaded by torchvision"; fi

browser: ## install Chromium and ChromeDriver (Debian packages) for the site's browser test where apt-get is allowed
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then :; \
	elif command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null) \
	  || echo "note: could not install chromium; the site's browser test will be skipped"; \
	else echo "note: apt-get not available; install chromium and chromium-driver to run the site's browser test"; fi

lint: env ## ruff check and format check
	$(VENV)/bin/ruff check pflnb tests benchmarks
	$(VENV)/bin/ruff format --check pflnb tests benchmarks

format: env ## apply ruff format and safe fixes
	$(VENV)/bin/ruff check --fix pflnb tests benchmarks
	$(VENV)/bin/ruff format pflnb tests benchmarks

# tests/test_site.py executes the notebooks at the smoke profile (executed/smoke/, when missing or older than the
# notebooks), builds the site into _site/test/ and opens it in headless Chromium; screenshots: _site/test/screenshots/.
# Both on the two cores: pytest-xdist with --dist loadgroup (the tests sharing a local Ray instance, and the site's build,
# each stay on one worker: tests/conftest.py's XDIST_GROUPS); the slowest tests are listed at the end.
TEST_WORKERS ?= 2
unit: env data browser ## unit tests (CPU; tests marked gpu skip without CUDA; not those marked long) and the site in a headless browser
	PFLNB_PROFILE=smoke $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=15 -m "not long" tests

# Whole-pipeline proofs of a minute or more each, kept out of `make test` (15 minutes on 2 cores): `pflnb reproduce` killed
# after its first notebook and resumed gives the uninterrupted outputs; the quickstart's figures are byte-identical with one
# and with two workers. Run them before resolving a change to the reproduction, the executors or the cache.
test-long: env data ## the tests marked long (whole-pipeline proofs, minutes): reproduce killed and resumed, one vs two workers
	PFLNB_PROFILE=smoke $(PY) -m pytest -q -n $(TEST_WORKERS) -m long tests

notebooks: env data ## nbmake run of every notebook on the smoke profile
	PFLNB_PROFILE=smoke PFLNB_PROGRESS=0 $(PY) -m pytest -q -n $(TEST_WORKERS) --nbmake --nbmake-timeout=600 notebooks

test: env data browser lint unit notebooks ## everything CI runs: lint, unit tests (the site in a browser included), smoke notebooks

# Tests marked `gpu` (pytest -m gpu) need CUDA and skip without it: CPU/GPU agreement and determinism of every
# method, every notebook at the smoke profile with PFLNB_DEVICE=cuda, and the first round of each paper profile
# on data written in the real formats. CUBLAS_WORKSPACE_CONFIG must be set before CUDA starts (importing pflnb does).
test-gpu: env ## the tests marked gpu, on a CUDA machine (they skip without CUDA)
	@$(PY) -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'make test-gpu needs CUDA: torch.cuda.is_available() is False')"
	CUBLAS_WORKSPACE_CONFIG=:4096:8 PFLNB_PROFILE=smoke PFLNB_PROGRESS=0 $(PY) -m pytest -q -m gpu -rsx tests

reproduce: env data ## the main scope: every notebook without the extended experiments (sweeps, analogues) into executed/$(PROFILE)-main/, 1 h 32 min cold on 2 cores
	PFLNB_WORKERS=$(WORKERS) PFLNB_BACKEND=$(BACKEND) PFLNB_RAY_ADDRESS=$(RAY_ADDRESS) PFLNB_RAY_CPUS=$(RAY_CPUS) \
	  PFLNB_RAY_GPUS=$(RAY_GPUS) $(VENV)/bin/pflnb reproduce --scope main --profile $(PROFILE) --threads $(THREADS)

reproduce-all: env data ## every notebook and experiment with papermill (PROFILE=cpu, WORKERS=2 runs at a time or BACKEND=ray, THREADS=1 per kernel) into executed/; the committed outputs
	PFLNB_WORKERS=$(WORKERS) PFLNB_BACKEND=$(BACKEND) PFLNB_RAY_ADDRESS=$(RAY_ADDRESS) PFLNB_RAY_CPUS=$(RAY_CPUS) \
	  PFLNB_RAY_GPUS=$(RAY_GPUS) $(VENV)/bin/pflnb reproduce --scope all --profile $(PROFILE) --threads $(THREADS)
	$(VENV)/bin/pflnb claims --update-readme

# The verdicts' robustness: the main scope's verdict seeds again under perturbed CPU kernels (torch's generic path; the
# tuning seeds' records held at the pinned ones), each claim whose verdict changes marked fragile in figures/robustness.csv;
# then the notebooks again (from the cache) so that the claims CSVs, the README ledger and the site carry the marks.
robustness: env data ## rerun the main scope's verdict seeds under perturbed kernels; mark the verdicts that change fragile (figures/robustness.csv)
	PFLNB_WORKERS=$(WORKERS) $(VENV)/bin/pflnb robustness --profile $(PROFILE) --threads $(THREADS)
	$(MAKE) --no-print-directory reproduce-all

# Run before resolving any change to pflnb/ code that a notebook uses: the regenerated outputs must equal the committed
# ones (PNGs by pixels, claims CSVs by cells, the README ledger by text; timing* files are listed, not counted).
# EXECUTED=1 compares an already executed run instead of running `make reproduce-all` first.
EXECUTED ?= 0
check-outputs: env data ## make reproduce-all, then fail listing every committed figure, claims CSV or README ledger that changed
	@if [ "$(EXECUTED)" != 1 ]; then $(MAKE) --no-print-directory reproduce-all; fi
	$(VENV)/bin/pflnb check-outputs

ledger: env ## print every paper's claims and verdicts; rewrite the README's results overview from figures/*/claims.csv
	$(VENV)/bin/pflnb claims --update-readme
	$(VENV)/bin/pflnb claims

# Shipped run records (records/<profile>/<notebook>.jsonl.xz): the cache behind the committed outputs, each record with
# a digest of everything but its wall-clock fields. `make records` exports them after `make reproduce-all`; `make verify`
# recomputes a random sample (VERIFY_N, seed printed; VERIFY_ARGS="--notebook 03_fedpg", "--claim <its text>", "--all",
# "--seed S") in a fresh cache and fails naming each mismatch; `make outputs` imports them, re-executes the notebooks
# from the cache (recomputing what shipped as a digest only: a record file over 1 MiB) and imports them again, which
# checks each recomputed file against its digest.
VERIFY_N ?= 12
VERIFY_ARGS ?=
records: env ## export the records behind executed/$(PROFILE)/ into records/$(PROFILE)/ (after make reproduce-all)
	$(VENV)/bin/pflnb records export --profile $(PROFILE)

verify: env data ## recompute VERIFY_N shipped records at random (stratified by notebook and kind) and compare them bit for bit
	PFLNB_PROGRESS=0 $(VENV)/bin/pflnb verify -n $(VERIFY_N) --profile $(PROFILE) $(VERIFY_ARGS)

outputs: env data ## the committed outputs from the shipped records: import them, re-execute every notebook from the cache, check-outputs
	$(VENV)/bin/pflnb records import --profile $(PROFILE)
	$(MAKE) --no-print-directory check-outputs
	$(VENV)/bin/pflnb records import --profile $(PROFILE)

# The site: executed/$(PROFILE)/ when every notebook is there (after `make reproduce-all`), else executed/smoke/ (executed
# first when needed); claims and figures from figures/. Output in _site/html (git-ignored); no server needed to view it.
site: env data ## build the static site (executed notebooks, claims ledger, guides, API reference) into _site/html
	$(VENV)/bin/pflnb site --profile $(PROFILE)

benchmark: env data ## client-steps per second and peak memory of the engine; serial vs worker-process batches
	$(PY) benchmarks/engine_throughput.py --threads 1 2
	$(PY) benchmarks/run_many_workers.py --workers 1 2

# The runner table on a GPU: sequential vs batched client-steps/s for the FedAvg CNN rows and one row per paper.
benchmark-gpu: env ## on a CUDA machine: the client-runner table (benchmarks/runner_speedup.py) into benchmarks/results/
	@$(PY) -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'make benchmark-gpu needs CUDA: torch.cuda.is_available() is False')"
	@mkdir -p benchmarks/results
	$(PY) benchmarks/runner_speedup.py --device cuda --rounds 3 --json benchmarks/results/runner_speedup_gpu.json \
	  --out benchmarks/results/runner_speedup_gpu.md

clean: ## remove executed notebooks, cached results and the built site
	rm -rf executed results _site .pytest_cache
