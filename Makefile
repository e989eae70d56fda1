# StylisticBias -- the two commands of the README are `make repro` and `make test`.
# Each creates .venv (if needed) from requirements.lock (exact versions, CPU torch), then runs.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export PATH := $(abspath $(BIN)):$(PATH)
# src/ on the path: `stylisticbias_dev` (tiny test checkpoints, benchmarks) is not in the wheel,
# so the dev targets (test, bench*, tiny) import it from this checkout.
export PYTHONPATH := $(abspath src)$(if $(PYTHONPATH),:$(PYTHONPATH))
# Python may cache bytecode (gitignored __pycache__/, ignored by the stage-input hashes): where the
# environment sets PYTHONDONTWRITEBYTECODE, every stage and test process would recompile src/ and
# pytest would re-rewrite every test module's asserts on every run (~35 CPU-s of `make test`).
export PYTHONDONTWRITEBYTECODE :=

.PHONY: help setup lock repro exp test test-slow test-all lint tiny params check-params bench bench-gpu bench-grammar bench-calibration bench-calibration-paired bench-valid-inference bench-soda bench-overhead bench-exact-requests bench-scores bench-analysis bench-tests bench-tests-load bench-demo clean-data

help:  ## list targets
	@grep -E '^[a-z-]+:.*##' Makefile | sed 's/:.*## /\t/'

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)  ## create .venv and install the locked environment + the project (CPU torch)

lock:  ## re-resolve pyproject.toml's dependencies (+dev) in a fresh venv -> requirements.lock
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet --upgrade pip
	.lock-venv/bin/pip install --quiet torch==2.13.0
	.lock-venv/bin/pip install --quiet '.[dev,bench]'
	{ sed -n '1,/^$$/p' requirements.lock; .lock-venv/bin/pip freeze --exclude-editable \
	  | grep -vi '^stylisticbias'; } > requirements.lock.new && mv requirements.lock.new requirements.lock
	rm -rf .lock-venv

repro: $(STAMP)  ## run the main job: the demo pipeline (dvc repro)
	$(BIN)/dvc repro

# the columns one compares experiments by (README "Reading dvc exp show")
EXP_KEEP := Experiment$$|Created$$|experiment$$|judged_models$$|protocols\..*|generator_protocols\..*|faces\.n$$|judge\.seeds$$|.*engine\.name$$|[^.]+\.stylisticbias\.(sbs|sbs_ci_low|sbs_ci_high)$$|[^.]+\.[^.]+\.(halo_rate|win_rate_max|log_odds_max_abs)$$
exp: $(STAMP)  ## dvc exp show without the dependency hashes: the view's params and the headline metrics
	$(BIN)/dvc exp show --no-pager --drop '.*' --keep '$(EXP_KEEP)'

# pytest-xdist workers (both cores of the 2-core dev machine); WORKERS=0 runs in one process.
# --dist loadscope keeps a module's tests (and its module-scoped fixtures) on one worker.
WORKERS ?= 2
XDIST   := $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadscope)

test: $(STAMP)  ## ruff, the layer contracts (lint-imports) and the default test suite (<= 3 min)
	$(BIN)/ruff check src tests pipelines
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q $(XDIST)

test-slow: $(STAMP)  ## only the slow tier (@pytest.mark.slow): what make test leaves out
	$(BIN)/python -m pytest -q $(XDIST) -m "slow and not gpu"

test-all: $(STAMP)  ## every test but the GPU ones: make test + the slow tier
	$(BIN)/python -m pytest -q $(XDIST) -m "not gpu"

lint: $(STAMP)  ## ruff + the layer contracts
	$(BIN)/ruff check src tests pipelines
	$(BIN)/lint-imports
	$(BIN)/ruff format --check src tests pipelines

tiny: $(STAMP)  ## build the tiny random-weight checkpoints of conf/model/tiny-*.yaml (.cache/tiny/)
	$(BIN)/python -m stylisticbias_dev.tiny --all

params: $(STAMP)  ## re-compose params.yaml from conf/
	$(BIN)/python -m stylisticbias.configure compose

check-params: $(STAMP)  ## fail if params.yaml drifted from conf/
	$(BIN)/python -m stylisticbias.configure check

bench: $(STAMP)  ## regenerate reports/bench/*.json (CPU benchmarks; minutes)
	$(BIN)/python -m stylisticbias_dev.bench.generation --faces 500
	$(BIN)/python -m stylisticbias_dev.bench.judge --images 2 --repeats 5 --generate-scenarios 2
	$(BIN)/python -m stylisticbias_dev.bench.analysis --models 6,20,100 --add-one --workdir .cache/bench-analysis
	$(BIN)/python -m stylisticbias_dev.bench.simulated_judge --images 2000 --repeats 3
	$(BIN)/python -m stylisticbias_dev.bench.scan_engines --workdir .cache/bench-analysis --models 20
	$(BIN)/python -m stylisticbias_dev.bench.openai_engine --images 2 --scenarios 3 --repeats 3
	$(BIN)/python -m stylisticbias_dev.bench.scores --workdir .cache/bench-scores --repeats 5
	$(BIN)/python -m stylisticbias_dev.bench.official_import
	$(BIN)/python -m stylisticbias_dev.bench.leaderboard --models 100 --repeats 3

bench-analysis: $(STAMP)  ## reports/bench/analysis.json: judgments -> scores -> analysis, 6/20/100 models + add one (CPU; ~45 min incl. judging 101 simulated models once into .cache/bench-analysis)
	$(BIN)/python -m stylisticbias_dev.bench.analysis --models 6,20,100 --add-one --workdir .cache/bench-analysis

bench-scores: $(STAMP)  ## reports/bench/scores.json: the scores stage beside a plain DuckDB query, paper scale (~2 min)
	$(BIN)/python -m stylisticbias_dev.bench.scores --workdir .cache/bench-scores --repeats 5

# Not through .venv (CPU torch): run where a CUDA build of torch and the project are installed.
bench-gpu:  ## reports/bench/judge_gpu.json: full-size random-weight 8B/7B models (CUDA python)
	$(PYTHON) -m stylisticbias_dev.bench.judge_gpu --model qwen3-vl-8b
	$(PYTHON) -m stylisticbias_dev.bench.judge_gpu --model llava-v1-6-mistral-7b

bench-calibration: $(STAMP)  ## reports/bench/calibration.json: 30 replicates x 3 plants + 500-replicate null FDR study + 200-replicate de-biased VS coverage (CPU, ~48 min)
	$(BIN)/python -m stylisticbias_dev.bench.calibration --replicates 30 --faces 100 --population 10000 --fdr-replicates 500 --jobs 2
	$(BIN)/python -m stylisticbias_dev.bench.calibration --only vs_debiased --replicates 200 --plants default,null

bench-calibration-paired: $(STAMP)  ## reports/bench/calibration.json, protocols section: beauty-demo, 96 replicates (CPU, ~11 min)
	$(BIN)/python -m stylisticbias_dev.bench.paired_calibration --experiment beauty-demo --replicates 96 --faces 108 --population 5000

bench-valid-inference: $(STAMP)  ## reports/bench/calibration.json, protocols.*.valid_inference: every protocol's tests under person/photo/cluster effects (CPU, ~2.5 h)
	$(BIN)/python -m stylisticbias_dev.bench.stylisticbias_validity --replicates 600 --null-test-replicates 2000
	$(BIN)/python -m stylisticbias_dev.bench.stylisticbias_tables_validity --replicates 600 --effect-replicates 100
	$(BIN)/python -m stylisticbias_dev.bench.stylisticbias_answer_tables --replicates 800
	$(BIN)/python -m stylisticbias_dev.bench.paired_valid_inference --replicates 100
	$(BIN)/python -m stylisticbias_dev.bench.paired_valid_inference --only subgroups --replicates 600
	$(BIN)/python -m stylisticbias_dev.bench.paired_valid_inference --only rechecks
	$(BIN)/python -m stylisticbias_dev.bench.paired_valid_inference --only by_kind --replicates 600 --n-resamples 500
	$(BIN)/python -m stylisticbias_dev.bench.paired_valid_inference --only by_kind --replicates 1800 --n-resamples 500 --designs subgroup_null_edit_everywhere
	$(BIN)/python -m stylisticbias_dev.bench.paired_valid_inference --only by_kind --replicates 1200 --n-resamples 500 --designs planted_weak_person_300
	$(BIN)/python -m stylisticbias_dev.bench.paired_valid_inference --only wattr --replicates 600
	$(BIN)/python -m stylisticbias_dev.bench.tasks_valid_inference --vignette-null 800
	$(BIN)/python -m stylisticbias_dev.bench.tasks_valid_inference --designs few-clusters --vignette-null 1000 --vignette-planted 200 --reflect-null 1000 --reflect-planted 150 --bootstrap 199
	$(BIN)/python -m stylisticbias_dev.bench.soda_valid_inference --designs structured --null-objects 1000 --power-objects 250 --replicates 800 --power-replicates 150 --n-perm 499 --n-perm-mitigation 299
	$(BIN)/python -m stylisticbias_dev.bench.soda_valid_inference --designs refusal_shift --null-objects 500 --power-objects 150 --replicates 600 --power-replicates 100 --n-perm 499 --n-perm-mitigation 299

bench-exact-requests: $(STAMP)  ## reports/bench/openai_engine.json, exact_requests: served exact mode's requests per prompt on 40 planted answer trees (CPU, ~5 min)
	$(BIN)/python -m stylisticbias_dev.bench.exact_requests --trees 40

bench-soda: $(STAMP)  ## reports/bench/soda_null_calibration.json: SODA permutation test size, 200 null replicates (CPU, ~1 min)
	$(BIN)/python -m stylisticbias_dev.bench.soda_null --replicates 200 --n 20 --n-perm 10000

bench-overhead: $(STAMP)  ## reports/bench/judge_overhead.json: engine vs bare forwards vs b0e6d99 (CPU, ~30 min)
	$(BIN)/pip install --quiet -e '.[bench]'
	$(BIN)/python -m stylisticbias_dev.bench.judge_overhead --images 3 --profile

bench-grammar: $(STAMP)  ## reports/bench/grammar_check.json: full-size models on CPU (~18 GB RAM)
	$(BIN)/python -m stylisticbias_dev.bench.grammar_check --model qwen3-vl-8b --scales 1,1e-3
	$(BIN)/python -m stylisticbias_dev.bench.grammar_check --model llava-v1-6-mistral-7b --scales 1,1e-3

bench-tests: $(STAMP)  ## reports/bench/tests.json: wall time of make test and make test-slow, with the load average
	$(BIN)/python -m stylisticbias_dev.bench.tests --tier test --tier test-slow

bench-demo: $(STAMP)  ## reports/bench/demo_repro.json: the default demo (every protocol) from scratch in a fresh clone of HEAD, target <= 300 s
	$(BIN)/python -m stylisticbias_dev.bench.demo_repro

bench-tests-load: $(STAMP)  ## reports/bench/tests.json under_load: make test 3x in a row with 8 busy processes on the cores
	$(BIN)/python -m stylisticbias_dev.bench.tests --hog 8 --repeat 3 --tier test

clean-data:  ## remove generated data (not the render cache)
	rm -rf data/faces data/variations data/judgments data/scores
