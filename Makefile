GO      ?= go
BIN     ?= bin
FUZZTIME ?= 2m
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build test test-short bench script-cost lint fmt soak dev clean fuzz

all: build test

## build: the taskq CLI and the example workers into ./bin
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/... ./examples/...

## dev: the whole system on an embedded Redis, with a demo
dev:
	$(GO) run ./cmd/taskq dev

## test: every test, race detector on, against real Redis (127.0.0.1:6379) and miniredis
test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 8m ./...

## bench: taskq beside Redis doing the same work (cmd/taskq-bench), with the key-derivation benchmarks in its table (BENCH_FLAGS="-redis redis://127.0.0.1:6390/0 -n 50000")
bench:
	@mkdir -p $(BIN)
	@$(GO) test -run '^$$' -bench . -benchmem ./pkg/idempotency/ > $(BIN)/keybench.txt; status=$$?; cat $(BIN)/keybench.txt; exit $$status
	$(GO) run ./cmd/taskq-bench -key-bench $(BIN)/keybench.txt $(BENCH_FLAGS)

## script-cost: instructions redis-server executes per run for each script call (redis-server under valgrind's callgrind: the same count on every run, whatever the machine's load)
script-cost:
	$(GO) test -tags scriptcost -run TestScriptCost -count=1 -v ./internal/redisstore/

## fuzz: search for CEL expressions and inputs that escape the evaluation limits (time, memory, typed errors) or make the fast paths disagree with CEL, FUZZTIME per target (FUZZTIME=10m); plain `go test` runs only the seeds
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzEvaluationBounds$$' -fuzztime $(FUZZTIME) ./pkg/idempotency/
	$(GO) test -run '^$$' -fuzz '^FuzzKey$$' -fuzztime $(FUZZTIME) ./pkg/idempotency/

## lint: formatting and vet
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)

## soak: minutes of mixed load with faults injected, on a redis-server of its own, ending in a report (SOAK_FLAGS="-duration 10m")
soak:
	$(GO) run ./cmd/taskq-soak $(SOAK_FLAGS)
