#!/usr/bin/env bash
# Installs the modules of this repository the way a user would, from a
# candidate version, before it is tagged. `make release-check` runs this.
#
#  1. Packs the core and the published nested modules, as they are in the
#     working tree, at $VERSION (default v0.1.0) into a file-based module
#     proxy (tools/release/main.go). It refuses a published go.mod with a
#     replace directive or a zero-version requirement.
#  2. Runs each published module's tests on exactly its own go.mod (not the
#     workspace's versions), outside the workspace, against the candidates;
#     then does step 3's go get and go mod tidy once with network. Both
#     download the third-party modules into a module cache of this run's,
#     through the usual proxy.
#  3. In empty modules outside the repository, with no go.work and no
#     replace, runs go get of each published module at $VERSION, checks that
#     the core comes in at $VERSION too, and builds and runs a program that
#     uses them all (testdata/consumer). Its only proxies are the candidates'
#     and the download directory of step 2's module cache: no network.
set -euo pipefail
source "$(dirname "$0")/common.sh"

if [[ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]]; then
	echo "release check: the working tree has uncommitted changes; they are packed, but a tag will not have them" >&2
fi

core=github.com/srebreaker/srebreaker
modules=()
for m in "${published[@]}"; do
	modules+=("$core/$m")
done

# online runs a go command in a directory as candidate (common.sh) does.
online() {
	local dir=$1
	shift
	(cd "$dir" && candidate "$@")
}
# offline runs it with a module cache of its own and two local proxies
# alone: the candidates, then what step 2 downloaded. GOSUMDB is off because
# file proxies cannot serve the checksum database: the candidates are in
# none, and step 2 checked the third-party modules' hashes against the
# published go.sum files and sum.golang.org as it downloaded them.
# GOTOOLCHAIN=local: no toolchain download either.
offline() {
	local dir=$1
	shift
	(cd "$dir" && env GOWORK=off GOMODCACHE="$tmp/offline" GOFLAGS=-modcacherw \
		GOPRIVATE= GONOPROXY= GONOSUMDB= GOSUMDB=off GOTOOLCHAIN=local \
		GOPROXY="file://$tmp/proxy,file://$tmp/mod/cache/download" "$@")
}
# quiet runs a command and shows its output only if it fails.
quiet() {
	local log status
	log=$(mktemp "$tmp/log.XXXXXX")
	"$@" >"$log" 2>&1 || {
		status=$?
		cat "$log" >&2
		return $status
	}
}
# consume makes, under base, an empty module per published module that
# go gets it alone, as a user adds one, and one (all/) that gets all of them
# for the program in testdata/consumer. run is online or offline.
consume() {
	local run=$1 base=$2 m dir
	for m in "${modules[@]}"; do
		dir="$base/${m##*/}"
		mkdir -p "$dir"
		quiet $run "$dir" go mod init example.com/consumer
		quiet $run "$dir" go get "$m@$version"
	done
	dir="$base/all"
	mkdir -p "$dir"
	cp "$root/tools/release/testdata/consumer/main.go" "$dir/"
	quiet $run "$dir" go mod init example.com/consumer
	quiet $run "$dir" go get "${modules[@]/%/@$version}"
	quiet $run "$dir" go mod tidy
}
# want_versions fails unless the module in dir selects $version of each
# module given.
want_versions() {
	local dir=$1 m got
	shift
	for m in "$@"; do
		got=$(offline "$dir" go list -m -f '{{.Version}}' "$m")
		if [[ $got != "$version" ]]; then
			echo "release check: $m resolved to $got, want $version" >&2
			return 1
		fi
	done
}

echo "== 1. pack $version into a local proxy"
pack

echo "== 2. each published module's tests on its own go.mod; downloads"
for m in "${published[@]}"; do
	work="$tmp/own/$m"
	mkdir -p "$work"
	cp "$root/$m/go.mod" "$work/go.mod"
	strip_candidates "$root/$m/go.sum" >"$work/go.sum"
	echo "cd $m && GOWORK=off go test ./..."
	# -mod=mod: the candidates' hashes go into the copy of go.sum.
	(cd "$root/$m" && candidate go test -mod=mod -modfile="$work/go.mod" -count=1 ./...)
done
consume online "$tmp/online"

echo "== 3. go get $version in empty modules, offline"
consume offline "$tmp/get"
for m in "${modules[@]}"; do
	# The core comes in at the version the module requires.
	want_versions "$tmp/get/${m##*/}" "$m" "$core"
	echo "go get $m@$version: ok, with $core@$version"
done
want_versions "$tmp/get/all" "${modules[@]}" "$core"
offline "$tmp/get/all" go vet .
offline "$tmp/get/all" go build -o consumer .
"$tmp/get/all/consumer"

echo "release check: $version installs and builds"
