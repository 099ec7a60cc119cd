# Tool versions, pinned in one place. Tools run through `go run pkg@version`,
# so a fresh machine needs nothing but Go.
STATICCHECK_VERSION := v0.8.2
# The oldest Go the module supports (go.mod's go line), fetched as a toolchain
# module through the module proxy.
MIN_GO              := go1.22.12
# benchstat, for make bench-peers.
BENCHSTAT_VERSION   := v0.0.0-20260908200009-22c9c6c9d4da
# Nested modules published on their own, tagged <dir>/vX.Y.Z after the core
# (docs/design/releasing.md).
PUBLISHED_MODULES   := grpcbreaker prombreaker otelbreaker redisbreaker goredisbreaker sqlbreaker connectbreaker
# Modules nested in this repository, each with a go.mod of its own (so that
# their dependencies stay out of the core's) and in go.work: test and lint run
# in each. docscheck checks README.md and docs/ against the code (it
# requires the published ones). retrytest measures retries through the
# peers' retry libraries (go-retryablehttp, go-grpc-middleware), unpublished.
# faulttest runs every integration against real servers behind toxiproxy
# (a Go module, run in its tests' process), unpublished: toxiproxy stays
# out of every published go.mod.
# leakcheck comes last: it fails while the core leaves goroutines running.
NESTED_MODULES      := grpcbreaker examples/grpc prombreaker examples/metrics examples/service otelbreaker redisbreaker goredisbreaker sqlbreaker connectbreaker \
                       retrytest faulttest tracetest \
                       examples/fleet statuspage/browsertest ops docscheck leakcheck
# The version of the core that the nested modules require, and that the tidy
# check and release-check pack the working tree at: the next release. go.work
# names it too.
VERSION             := v0.1.0
# The platforms make cross builds the core for.
CROSS_PLATFORMS     := linux/386 linux/arm linux/arm64 windows/amd64 darwin/arm64 js/wasm wasip1/wasm
# Settings of the scripts in tools/release (tidy, lint, release-check).
RELEASE_ENV         := VERSION=$(VERSION) PUBLISHED="$(PUBLISHED_MODULES)"

.DEFAULT_GOAL := help
.PHONY: help redis postgres chromium prometheus dashboard-svg test race test-min-go bench bench-peers bench-realtime bench-overload bench-chain lint tidy bump release-check cross cover fuzz simulate stress fleet-load pictures

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# redisbreaker's, goredisbreaker's, faulttest's and examples/fleet's tests start a real redis-server on a
# loopback port, and redisbreaker's a Redis Cluster of several, formed by
# redis-cli: Debian's redis-server and redis-tools, installed here when
# either is missing (as root, or through sudo), so that make test works on a
# fresh machine.
redis: ## install redis-server and redis-cli (Debian's packages) if either is missing
	@{ command -v redis-server && command -v redis-cli; } >/dev/null 2>&1 || { \
		echo "redis-server or redis-cli is missing: apt-get install redis-server redis-tools"; \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq redis-server redis-tools; }

# sqlbreaker's and faulttest's tests initialize and start a real PostgreSQL server on a
# loopback port (as the user postgres when run as root): Debian's package,
# installed here when missing in the same way. Its server programs live in
# /usr/lib/postgresql/<version>/bin, off the PATH.
postgres: ## install PostgreSQL (Debian's package) if it is missing
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || { \
		echo "PostgreSQL is missing: apt-get install postgresql"; \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; }

# statuspage/browsertest's tests drive a headless Chromium (Debian's
# package) at the status page served on loopback; installed here when
# missing, as redis-server is.
chromium: ## install chromium (Debian's package) if it is missing
	@command -v chromium >/dev/null 2>&1 || { \
		echo "chromium is missing: apt-get install chromium"; \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq chromium; }

# ops's tests run promtool on the alerting rules, and a real prometheus
# that scrapes examples/service and a Redis exporter (watching a
# redis-server of the test's) on loopback ports: Debian's prometheus (which
# brings promtool) and prometheus-redis-exporter, installed here when
# missing, as redis-server is.
prometheus: ## install prometheus, promtool and prometheus-redis-exporter (Debian's packages) if one is missing
	@{ command -v prometheus && command -v promtool && command -v prometheus-redis-exporter; } >/dev/null 2>&1 || { \
		echo "prometheus, promtool or prometheus-redis-exporter is missing: apt-get install prometheus prometheus-redis-exporter"; \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && \
		$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus prometheus-redis-exporter; }

# About a minute of wall time: examples/service through an outage, scraped
# by a real prometheus every second.
dashboard-svg: prometheus ## draw ops/dashboard.json's panels from a real Prometheus into docs/guide/dashboard.svg
	cd ops && go run ./cmd/picture -out ../docs/guide/dashboard.svg

# -timeout 30m: faulttest's black holes and the simulator's tests take most of go test's default ten
# minutes under the race detector on a loaded two-core machine.
test: redis postgres chromium prometheus ## vet and race tests, nested modules too (the core's linked with -checklinkname=1): what CI runs
	go vet ./...
	go test -race -count=1 -timeout 30m -ldflags=-checklinkname=1 ./...
	@set -e; for m in $(NESTED_MODULES); do \
		echo "cd $$m && go vet ./... && go test -race -count=1 -timeout 30m ./..."; \
		(cd $$m && go vet ./... && go test -race -count=1 -timeout 30m ./...); \
	done

race: test ## same as test

# GOWORK=off: go.work asks for the newest go line of its modules, above the
# oldest Go the core supports; the core alone needs nothing from the workspace.
test-min-go: ## the core's tests on the oldest supported Go
	GOWORK=off GOTOOLCHAIN=$(MIN_GO) go test -count=1 ./...

bench: ## benchmarks with allocation counts, written to bench.txt
	go test -run '^$$' -bench . -benchmem -count 6 ./... | tee bench.txt

# Rounds of the peer comparison, and -benchtime of each benchmark in it.
BENCH_COUNT ?= 5
BENCH_TIME  ?= 1s

bench-peers: ## compare with other Go breakers (bench/, its own module); BENCH_COUNT=5 BENCH_TIME=1s
	BENCH_COUNT=$(BENCH_COUNT) BENCH_TIME=$(BENCH_TIME) BENCHSTAT_VERSION=$(BENCHSTAT_VERSION) ./bench/run.sh

# Runs of the real-time standard scenario, 35 s each.
REALTIME_RUNS ?= 1

# bench is its own module, outside go.work (see bench/run.sh). Not part of
# make test: each run takes the scenario's length of wall time.
bench-realtime: ## the standard scenario on the wall clock at 2,000 requests/s (bench/cmd/realtime, 35 s a run); REALTIME_RUNS=1
	cd bench && GOWORK=off go run ./cmd/realtime -runs $(REALTIME_RUNS)

# The server under overload against the peers (issue 41), every scenario at
# 10 s a step: about 25 minutes of wall time, most of it on loopback HTTP.
# OVERLOAD_FLAGS adds flags (-quick, -scenarios steady,surge, -json).
OVERLOAD_FLAGS ?=

bench-overload: ## the server side under overload against no limit, a static limit and failsafe-go's limiters (bench/cmd/overload, ~25 min); OVERLOAD_FLAGS=
	cd bench && GOWORK=off go run ./cmd/overload $(OVERLOAD_FLAGS)
# Runs of the chain scenario, per protocol and rate, 45 s each.
CHAIN_RUNS ?= 1

bench-chain: ## a chain client → A → B → C with C down 30 s, over HTTP, gRPC and Connect at 20 and 200 requests/s (bench/cmd/chain, 4.5 min a run); CHAIN_RUNS=1
	cd bench && GOWORK=off go run ./cmd/chain -runs $(CHAIN_RUNS)

# tools/check-tracked.sh fails when git tracks a binary (images under docs/
# aside) or a file over 512 KiB; tools/check-tracked-test.sh tests it first.
# go mod tidy ignores go.work, and the nested modules require a version of
# the core that is not released yet: tools/release/tidy-check.sh tidies them
# against the working tree on a local module proxy.
lint: ## go vet, staticcheck at a pinned version, gofmt, tidy checks, nested modules and tools too; only source tracked
	tools/check-tracked-test.sh
	tools/check-tracked.sh
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }
	go mod tidy -diff
	@set -e; for m in $(NESTED_MODULES); do \
		echo "cd $$m && go vet ./... && staticcheck ./..."; \
		(cd $$m && go vet ./... && go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...); \
	done
	$(RELEASE_ENV) tools/release/tidy-check.sh $(NESTED_MODULES)
	cd tools/release && GOWORK=off go vet ./... && \
		GOWORK=off go run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... && GOWORK=off go mod tidy -diff

tidy: ## go mod tidy of every module, the nested ones against the working tree's core
	go mod tidy
	$(RELEASE_ENV) tools/release/tidy-check.sh -fix $(NESTED_MODULES)
	cd tools/release && GOWORK=off go mod tidy

# The requirements of this repository's modules, go.work's replace and
# VERSION above; go.mod files keep their format, so perl edits them in place.
bump: ## point the nested modules and go.work at the core's next version: make bump VERSION=v0.2.0
	perl -pi -e 's#(github\.com/srebreaker/srebreaker(?:/[a-z/]+)?) v\d+\.\d+\.\d+\S*#$$1 $(VERSION)#' \
		go.work $(addsuffix /go.mod,$(NESTED_MODULES))
	perl -pi -e 's#^(VERSION +:= ).*#$${1}$(VERSION)#' Makefile

release-check: redis postgres ## go get the published modules at VERSION from a local proxy of this tree, as a user would
	$(RELEASE_ENV) tools/release/release-check.sh

# The linker accepts the runtime symbols that widely used modules reach for
# (runtime.procPin, runtime.cheaprand64, ...) even with -checklinkname=1, so
# the source is searched for go:linkname as well.
cross: ## build the core and link its tests for CROSS_PLATFORMS; no go:linkname in its source
	@# Two runs, as an example may share its package's name (statuspage).
	@set -e; out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	for p in $(CROSS_PLATFORMS); do \
		echo "GOOS=$${p%/*} GOARCH=$${p#*/} go build ./... && go test -c -ldflags=-checklinkname=1 ./..."; \
		GOOS=$${p%/*} GOARCH=$${p#*/} go build ./...; \
		GOOS=$${p%/*} GOARCH=$${p#*/} go test -c -ldflags=-checklinkname=1 -o "$$out/$${p%/*}-$${p#*/}/lib/" $$(go list ./... | grep -v /examples/); \
		GOOS=$${p%/*} GOARCH=$${p#*/} go test -c -ldflags=-checklinkname=1 -o "$$out/$${p%/*}-$${p#*/}/examples/" ./examples/...; \
	done
	@found=$$(for d in $$(go list -f '{{.Dir}}' ./...); do grep -l '^//go:linkname' "$$d"/*.go || true; done); \
	test -z "$$found" || { echo "go:linkname reaches into the runtime, which a future Go may break:"; echo "$$found"; exit 1; }

cover: ## coverage summary
	go test -coverprofile=cover.out ./...
	go tool cover -func=cover.out

# The tests behind the build tag stress run hostile input and load at scale
# (huge failure reasons, 100,000 hosts through a Transport, churn against
# SetLimit, 10,000 goroutines, clients that give up), print memory and time
# figures and fail past the bounds they state; docs/design/reliability.md quotes
# them. Minutes and a few hundred MiB: not part of make test.
# The load probe of redisbreaker: fleets of sharers against a redis-server of
# its own on a loopback port; FLEET_LOAD_FLAGS=-fleets 10x10,50x10,200x10
# -duration 10s -hog 0.5 and so on (go run ./internal/fleetload -h in
# redisbreaker lists them).
FLEET_LOAD_FLAGS ?=
fleet-load: redis ## what sharing breakers costs Redis: CPU per process per breaker, commands, evidence age
	cd redisbreaker && go run ./internal/fleetload $(FLEET_LOAD_FLAGS)

stress: ## hostile input and load at scale: prints memory and time figures, fails past their bounds
	go vet -tags stress ./breaker ./httpbreaker
	go test -tags stress -run '^TestStress' -count=1 -v -timeout 15m ./breaker ./httpbreaker

# The packages with fuzz targets (grpcbreaker's module through go.work).
# make test runs each target's seed corpus (testdata/fuzz) as go test
# does; make fuzz explores from it, one target after another, FUZZTIME each.
FUZZ_PACKAGES ?= ./rollingwindow ./fleet ./criticality ./internal/serverside ./httpbreaker ./grpcbreaker \
                 ./retry ./statuspage ./examples/simulate
FUZZTIME      ?= 2m

fuzz: ## run every fuzz target of FUZZ_PACKAGES for FUZZTIME (2m) each
	@set -e; for p in $(FUZZ_PACKAGES); do \
		for t in $$(go test -list '^Fuzz' $$p | grep '^Fuzz'); do \
			echo "go test -run '^$$' -fuzz '^$$t\$$' -fuzztime $(FUZZTIME) $$p"; \
			go test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$p; \
		done; \
	done

simulate: ## run the outage simulation
	go run ./examples/simulate

# The tests that keep each picture what its generator draws rewrite them with -update.
pictures: ## redraw docs/pictures from runs of the real packages (examples/simulate, tracetest)
	go test -count=1 -run '^TestPictures$$' ./examples/simulate -args -update
	cd tracetest && go test -count=1 -run '^TestWriteWaterfall_dropTrace$$' . -args -update
