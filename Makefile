# Allot: `make run` serves the portal with the embedded default; `make test` runs the test suite.
# The venv's Python must be one every user may run: run as root, the portal starts each Jupyter
# session as a user of its own with this Python (a pyenv one under a 0700 /root is out of reach,
# and the session would be refused). The system's python3.11 when there is one.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3.11 /usr/local/bin/python3.11) python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test check lint format bench bench-portal bench-history bench-load bench-dashboards bench-eta bench-k8s replay k8s-lab helm-lint manifests clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -e .  # the `allot` command
	touch $(STAMP)

# The embedded default: SQLite in var/, in-memory channel layer, the cycle and the simulated
# agent inside the web process. No Docker, PostgreSQL or Redis.
# One person's trial: Jupyter sessions may run as your own user (not root: docs/security.md).
# `make run PORT=8123 HOST=0.0.0.0` serves elsewhere; users get the portal's own error pages
# (DEBUG=0 over plain HTTP, a secret key kept in var/secret_key); `make run DEBUG=1` is the
# developer's switch to Django's debug pages.
PORT ?= 8000
# Simulated training jobs finish after a run time drawn from the Philly trace (README, first lines).
DEMO ?= 1
HOST ?= 127.0.0.1
DEBUG ?= 0
ALLOWED_HOSTS ?= 127.0.0.1,localhost,$(HOST)
# Notebooks on origins of their own (docs/security.md): every *.localhost name reaches this
# machine in browsers; serving others, give a wildcard name, e.g. SESSIONS_ORIGIN=http://*.nb.lab:8000.
SESSIONS_ORIGIN ?= http://*.localhost:$(PORT)
PORTAL_URL ?= http://$(HOST):$(PORT)
RUN_ENV := DEBUG=$(DEBUG) ALLOWED_HOSTS=$(ALLOWED_HOSTS) SECRET_KEY_FILE=var/secret_key \
	ALLOT_SESSIONS_ORIGIN='$(SESSIONS_ORIGIN)' ALLOT_PORTAL_URL=$(PORTAL_URL) \
	SECURE_SSL_REDIRECT=0 SESSION_COOKIE_SECURE=0 CSRF_COOKIE_SECURE=0 SECURE_HSTS_SECONDS=0
run: $(STAMP)
	@mkdir -p var && test -s var/secret_key || (umask 077 && $(PY) -c \
		"import secrets; print(secrets.token_urlsafe(50))" > var/secret_key)
	@$(RUN_ENV) $(PY) manage.py migrate --noinput --verbosity 0
	@$(RUN_ENV) $(PY) manage.py collectstatic --noinput --verbosity 0
	@$(RUN_ENV) $(PY) manage.py bootstrap --url http://$(HOST):$(PORT)/
	@$(RUN_ENV) ALLOT_SESSIONS_SINGLE_USER=1 ALLOT_SIM_PROCESSES=1 ALLOT_SIM_DEMO=$(DEMO) $(PY) manage.py runserver \
		--noreload $(HOST):$(PORT)

# PostgreSQL and Redis are started first when they are installed but down (scripts/services.sh).
test: $(STAMP)
	@bash scripts/services.sh
	$(PY) -m pytest -q --durations=25

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

check: lint test

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

replay: $(STAMP)
	$(PY) -m scheduler_tools.replay tests/fixtures/tr4858.json

bench: $(STAMP)
	$(PY) -m scheduler_tools.bench --scenario fill --nodes 500 --gpus-per-node 8 --projects 100 --jobs 4000 --json
	$(PY) -m scheduler_tools.bench --scenario reclaim --nodes 500 --gpus-per-node 8 --projects 100 --jobs 4000 --json
	$(PY) -m scheduler_tools.bench --scenario steady --nodes 2000 --gpus-per-node 8 --projects 100 --jobs 10000 --json
	$(PY) -m scheduler_tools.bench --scenario fill --nodes 500 --gpus-per-node 8 --projects 100 --jobs 4000 --resources --json
	$(PY) -m scheduler_tools.bench --scenario reclaim --nodes 500 --gpus-per-node 8 --projects 100 --jobs 4000 --resources --json
	$(PY) -m scheduler_tools.bench --scenario steady --nodes 2000 --gpus-per-node 8 --projects 100 --jobs 10000 --resources --json
	$(PY) -m scheduler_tools.bench --sweep
	$(PY) benchmarks/whatif_bench.py

# The portal end to end on PostgreSQL + Redis + Celery (both must be running; see .ci/run):
# 4,000 jobs one POST each, then the same as sweeps of 100 through jobs/bulk/, then one POST
# each with CPU and memory in every job and on every node (issue 26).
bench-portal: $(STAMP)
	$(PY) benchmarks/portal_bench.py
	$(PY) benchmarks/portal_bench.py --bulk 100
	$(PY) benchmarks/portal_bench.py --resources

# The jobs listing's first page over 10,000 ended jobs (issue 23: < 200 ms), in-process.
bench-history: $(STAMP)
	$(PY) benchmarks/history_bench.py

# Twenty REST clients submitting and listing for 60 s on the same stack.
bench-load: $(STAMP)
	$(PY) benchmarks/load_bench.py

# Analytics over 30 days x 100 projects, and 50 live overview websockets (PostgreSQL + Redis).
bench-dashboards: $(STAMP)
	$(PY) benchmarks/dashboard_bench.py

# What one refresh of the pending jobs' ETAs costs on busy clusters (scheduler only).
bench-eta: $(STAMP)
	$(PY) benchmarks/eta_bench.py

# Issue 24 item 1: "Launch Jupyter" click to a cell's output in Chromium through the portal as
# `make run` serves it, 10 first visits; median and p90 per phase (`--profile DIR` keeps HARs).
.PHONY: bench-jupyter
bench-jupyter: $(STAMP)
	$(PY) benchmarks/jupyter_bench.py --runs 10

# KAI's scale test on a real control plane (a lab of 500 KWOK nodes x 8 GPUs) with Allot as the
# scheduler on PostgreSQL + Redis + Celery (both must be running): 4,000 jobs, then a reclaim of
# the same shape; times to all pods Running by the API server's count, CPU per part. Last, KAI's
# topology shape (issue 38): 512 one-pod-per-node jobs on 512 nodes in 16 racks, plain then with
# required: rack, both times reported.
bench-k8s: $(STAMP) k8s-lab
	$(PY) benchmarks/k8s_bench.py
	$(PY) benchmarks/k8s_bench.py --external 0.25  # a quarter as indexed Jobs made on the API server
	$(PY) benchmarks/k8s_bench.py --topology --nodes 512 --jobs 512 --projects 16 --no-floor

# The Kubernetes lab's binaries (tests/k8s), built from the modules pinned in scripts/k8s-lab.d/
# into ~/.cache/allot-k8s-lab (slow once, then cached); `scripts/k8s-lab start` runs the lab.
k8s-lab:
	$(PYTHON) scripts/k8s-lab build

# The Helm chart (deploy/helm/allot/), with Helm built like the lab's binaries (scripts/helm):
# lint it, and render deploy/kubernetes/allot.yaml from it (tests/deploy checks they agree).
helm-lint:
	scripts/helm lint --strict deploy/helm/allot

manifests:
	$(PYTHON) scripts/render-manifest

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache .hypothesis
