GO      ?= go
BIN     ?= bin
FUZZTIME ?= 2m
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
GOLANGCI_LINT_VERSION ?= v2.15.0
APIDIFF_VERSION ?= v0.0.0-20261113113407-e3970619a1a4
STRESS_RUNS        ?= 10
STRESS_RUN_TIMEOUT ?= 20m
STRESS_TIMEOUT     ?= 90m

.PHONY: all help build test test-short test-stress bench bench-ui bench-cluster bench-peers cluster-cost script-cost lint api-check api-baseline fmt soak dev clean fuzz fuzz-http

## all: build, then test
all: build test

## help: this list of targets
help:
	@sed -n 's/^## \([a-zA-Z_-]*\): */\1\t/p' $(MAKEFILE_LIST) | awk -F '\t' '{ printf "  %-12s %s\n", $$1, $$2 }'

## build: the taskq CLI and the example workers into ./bin
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/... ./examples/...

## dev: the whole system on an embedded Redis, with a demo
dev:
	$(GO) run ./cmd/taskq dev

## test: every test, race detector on, against real Redis, a Redis Cluster and miniredis (Redis at 127.0.0.1:6379 or TASKQ_TEST_REDIS_URL, else a redis-server each test binary starts for itself; the cluster at TASKQ_TEST_REDIS_CLUSTER_URL, else one each test binary starts)
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -parallel 8 -timeout 8m ./...

## test-short: every test with -short (fewer iterations in the randomized key tests), without the race detector
test-short:
	$(GO) test -short -count=1 -parallel 8 -timeout 8m ./...

## test-stress: make test STRESS_RUNS times (default 10) while another process keeps one core busy, each run within STRESS_RUN_TIMEOUT (20m) and all within STRESS_TIMEOUT (90m); prints how many passed, logs in bin/test-stress
test-stress:
	@RUNS="$(STRESS_RUNS)" RUN_TIMEOUT="$(STRESS_RUN_TIMEOUT)" TOTAL_TIMEOUT="$(STRESS_TIMEOUT)" \
		LOG_DIR="$(BIN)/test-stress" .ci/stress

## bench: taskq beside Redis doing the same work (cmd/taskq-bench), with the key-derivation benchmarks in its table (BENCH_FLAGS="-redis redis://127.0.0.1:6390/0 -n 50000")
bench:
	@mkdir -p $(BIN)
	@$(GO) test -run '^$$' -bench . -benchmem ./pkg/idempotency/ > $(BIN)/keybench.txt; status=$$?; cat $(BIN)/keybench.txt; exit $$status
	$(GO) run ./cmd/taskq-bench -key-bench $(BIN)/keybench.txt $(BENCH_FLAGS)

## bench-ui: server time of each dashboard page (overview with charts, run lists, a run, a task) with 100,000 runs present on a private redis-server, ms per page (target: under 200 ms)
bench-ui:
	$(GO) test -run '^$$' -bench '^BenchmarkPagesWith100kRuns$$' -benchtime 20x -count=1 ./internal/webui/

## bench-peers: taskq beside asynq v0.26 on one redis-server (a private one unless -redis), each through its public API, alternating rounds: trigger, duplicate rejection, end to end, with medians, ratios and redis-server CPU per op (bench/peers, a module of its own; BENCH_FLAGS="-n 50000 -rounds 5")
bench-peers:
	cd bench/peers && $(GO) run . $(BENCH_FLAGS)

## bench-cluster: a single node and a private 3-master, 3-replica Redis Cluster side by side: Redis CPU per trigger and per run, each master's share, paced latency (cmd/taskq-bench -cluster; BENCH_FLAGS="-cluster-partitions 24"; by default one partition per master, the default of a namespace first used on a cluster)
bench-cluster:
	$(GO) run ./cmd/taskq-bench -cluster $(BENCH_FLAGS)

## cluster-cost: instructions per trigger in a redis-server under callgrind: a single node and a cluster-mode node, each alone and feeding a replica, one trigger per call, batches of 16, and batches and completed runs split over NODECOST_PARTITIONS partitions (3 and 6 when unset), side by side with ratios (valgrind must be installed)
cluster-cost:
	$(GO) test -tags nodecost -run '^TestNodeCost$$' -count=1 -v ./cmd/taskq-bench/

## fuzz-http: the HTTP API against api/openapi.yaml under schema-driven fuzzing, longer than in make test (FUZZ_HTTP_REQUESTS=20000, FUZZ_HTTP_SEED=<n> to replay a run)
FUZZ_HTTP_REQUESTS ?= 20000
fuzz-http:
	TASKQ_HTTP_FUZZ_REQUESTS=$(FUZZ_HTTP_REQUESTS) TASKQ_HTTP_FUZZ_SEED=$(FUZZ_HTTP_SEED) \
		$(GO) test -race -count=1 -timeout 30m -run '^TestContractFuzz$$' -v ./internal/httpapi/

## script-cost: instructions redis-server executes per run for each script call, and per event push (redis-server under valgrind's callgrind: the same count on every run, whatever the machine's load)
script-cost:
	$(GO) test -tags scriptcost -run '^(TestScriptCost|TestEventScriptCost|TestDuplicateScriptCost)$$' -count=1 -v ./internal/redisstore/

## fuzz: search for CEL expressions and inputs that escape the evaluation limits (time, memory, typed errors) or make the fast paths disagree with CEL, FUZZTIME per target (FUZZTIME=10m); plain `go test` runs only the seeds
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzEvaluationBounds$$' -fuzztime $(FUZZTIME) ./pkg/idempotency/
	$(GO) test -run '^$$' -fuzz '^FuzzKey$$' -fuzztime $(FUZZTIME) ./pkg/idempotency/

## lint: gofmt, go vet, golangci-lint (the version pinned below, built from the Go module proxy on first use; see .golangci.yml) and api-check
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...
	@$(MAKE) --no-print-directory api-check

## api-check: fail on an incompatible change to the exported API of pkg/... since the baseline in api/compat (golang.org/x/exp/cmd/apidiff, pinned below); additions pass
api-check:
	@GO="$(GO)" BIN="$(BIN)" APIDIFF_VERSION="$(APIDIFF_VERSION)" .ci/api-compat check

## api-baseline: record the exported API of pkg/... as the new baseline in api/compat, after a deliberate, documented change (see CONTRIBUTING.md)
api-baseline:
	@GO="$(GO)" BIN="$(BIN)" APIDIFF_VERSION="$(APIDIFF_VERSION)" .ci/api-compat baseline

## fmt: gofmt every Go file
fmt:
	gofmt -w $$(git ls-files '*.go')

## clean: remove ./bin
clean:
	rm -rf $(BIN)

## soak: minutes of mixed load with faults injected, on a redis-server of its own, ending in a report (SOAK_FLAGS="-duration 10m")
soak:
	$(GO) run ./cmd/taskq-soak $(SOAK_FLAGS)
