#!/usr/bin/env bash
# Runs the peer benchmarks BENCH_COUNT times, interleaved, then prints them
# through benchstat (one column per library, ratios to srebreaker) and the
# goal table. `make bench-peers` runs this; see docs/design/benchmarks.md.
#
# Environment:
#   BENCH_COUNT        rounds (default 5); each runs every library once
#   BENCH_TIME         -benchtime of each benchmark (default 1s)
#   BENCHSTAT_VERSION  golang.org/x/perf version benchstat is run at
set -euo pipefail
cd "$(dirname "$0")"
# bench is not in go.work, whose versions the other libraries' requirements
# would raise: it builds alone, with its replace of the core.
export GOWORK=off

count=${BENCH_COUNT:-5}
benchtime=${BENCH_TIME:-1s}
benchstat="golang.org/x/perf/cmd/benchstat@${BENCHSTAT_VERSION:-v0.0.0-20260908200009-22c9c6c9d4da}"

# The libraries, srebreaker first: the base column of benchstat's ratios.
libs=(srebreaker failsafe-adaptive failsafe-classic gobreaker go-zero aegis)
serial='^Benchmark(AllowAccept|Drop|Do|New|RegistryGet|Criticality|Buckets)$'
parallel='^Benchmark(Parallel|RegistryGetParallel)$'

mkdir -p results
out=results/peers.txt
bin=results/bench.test

# The setup checks first: a benchmark of a breaker in the wrong state
# measures nothing.
go vet ./...
go test -count=1 ./...
go test -c -o "$bin" .

# File-level keys, which benchstat prints above its tables.
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "go: $(go env GOVERSION)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "benchtime: $benchtime"
} >"$out"
for ((round = 0; round < count; round++)); do
	echo "round $((round + 1)) of $count" >&2
	# Each round starts one library further on, so that no library always
	# runs first or last.
	for ((i = 0; i < ${#libs[@]}; i++)); do
		lib=${libs[$(((round + i) % ${#libs[@]}))]}
		"$bin" -test.run '^$' -test.benchmem -test.count 1 -test.benchtime "$benchtime" \
			-test.bench "$serial/^lib=$lib\$" >>"$out"
		"$bin" -test.run '^$' -test.benchmem -test.count 1 -test.benchtime "$benchtime" \
			-test.bench "$parallel/^lib=$lib\$" -test.cpu 1,2,8 >>"$out"
	done
done

order=$(
	IFS=' '
	echo "${libs[*]}"
)
echo
go run "$benchstat" -col "/lib@($order)" "$out" | tee results/benchstat.txt
echo
go run ./cmd/report "$out" | tee results/report.txt
