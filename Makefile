# Tool versions, pinned in one place. Tools run through `go run pkg@version`,
# so a fresh machine needs nothing but Go.
STATICCHECK_VERSION := v0.8.2
# The oldest Go the module supports (go.mod's go line), fetched as a toolchain
# module through the module proxy.
MIN_GO              := go1.22.12
# benchstat, for make bench-peers.
BENCHSTAT_VERSION   := v0.0.0-20260908200009-22c9c6c9d4da
# Modules nested in this repository, each with a go.mod of its own (so that
# their dependencies stay out of the core's): test and lint run in each.
NESTED_MODULES      := grpcbreaker examples/grpc prombreaker examples/metrics otelbreaker

.DEFAULT_GOAL := help
.PHONY: help test race test-min-go bench bench-peers lint cover fuzz simulate

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

test: ## vet and race tests, nested modules too: what CI runs
	go vet ./...
	go test -race -count=1 ./...
	@set -e; for m in $(NESTED_MODULES); do \
		echo "cd $$m && go vet ./... && go test -race -count=1 ./..."; \
		(cd $$m && go vet ./... && go test -race -count=1 ./...); \
	done

race: test ## same as test

test-min-go: ## the tests on the oldest supported Go
	GOTOOLCHAIN=$(MIN_GO) go test -count=1 ./...

bench: ## benchmarks with allocation counts, written to bench.txt
	go test -run '^$$' -bench . -benchmem -count 6 ./... | tee bench.txt

# Rounds of the peer comparison, and -benchtime of each benchmark in it.
BENCH_COUNT ?= 5
BENCH_TIME  ?= 1s

bench-peers: ## compare with other Go breakers (bench/, its own module); BENCH_COUNT=5 BENCH_TIME=1s
	BENCH_COUNT=$(BENCH_COUNT) BENCH_TIME=$(BENCH_TIME) BENCHSTAT_VERSION=$(BENCHSTAT_VERSION) ./bench/run.sh

lint: ## go vet, staticcheck at a pinned version, gofmt, tidy check, nested modules too
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }
	go mod tidy -diff
	@set -e; for m in $(NESTED_MODULES); do \
		echo "cd $$m && go vet ./... && staticcheck ./... && go mod tidy -diff"; \
		(cd $$m && go vet ./... && \
			go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... && go mod tidy -diff); \
	done

cover: ## coverage summary
	go test -coverprofile=cover.out ./...
	go tool cover -func=cover.out

fuzz: ## fuzz the rolling window for 30s
	go test -run '^$$' -fuzz '^FuzzWindow$$' -fuzztime 30s ./rollingwindow

simulate: ## run the outage simulation
	go run ./examples/simulate
