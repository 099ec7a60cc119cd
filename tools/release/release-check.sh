#!/usr/bin/env bash
# Installs the modules of this repository the way a user would, from a
# candidate version, before it is tagged. `make release-check` runs this.
#
#  1. Packs the core and the published nested modules, as they are in the
#     working tree, at $VERSION (default v0.1.0) into a file-based module
#     proxy (tools/release/main.go). It refuses a published go.mod with a
#     replace directive or a zero-version requirement.
#  2. Downloads the third-party modules they need into the module cache,
#     through the usual proxy, so that the next step needs no network.
#  3. In empty modules outside the repository, with no go.work and no
#     replace, runs go get of each published module at $VERSION, checks that
#     the core comes in at $VERSION too, and builds and runs a program that
#     uses them all (testdata/consumer), with only the candidate proxy and
#     the module cache as proxies.
#  4. Runs each published module's tests on exactly its own go.mod (not the
#     workspace's versions), against the candidates.
set -euo pipefail
source "$(dirname "$0")/common.sh"

if [[ -n "$(git -C "$root" status --porcelain 2>/dev/null)" ]]; then
	echo "release check: the working tree has uncommitted changes; they are packed, but a tag will not have them" >&2
fi

echo "== 1. pack $version into a local proxy"
pack

echo "== 2. download third-party modules through $upstream"
# In the workspace, where the candidates are local directories, so that
# none of them reaches the module cache. Its versions are the highest any
# module asks for, which is what a program using all the modules gets.
# go mod download records the hash of each module it fetches in
# go.work.sum, which is put back as it was.
cp "$root/go.work.sum" "$tmp/go.work.sum"
download_status=0
(cd "$root" && go mod download) || download_status=$?
cp "$tmp/go.work.sum" "$root/go.work.sum"
((download_status == 0))

echo "== 3. go get $version in empty modules, offline"
core=github.com/srebreaker/srebreaker
modules=()
for m in "${published[@]}"; do
	modules+=("$core/$m")
done
# As candidate (common.sh), but with the two local proxies alone. GOSUMDB
# is off because file proxies cannot serve the checksum database: the
# candidates are in none, and the third-party modules come from the module
# cache, where step 2 put them after checking their hashes against the
# modules' go.sum files and sum.golang.org. GOTOOLCHAIN=local: no toolchain
# download either.
offline() {
	local dir=$1
	shift
	(cd "$dir" && env GOWORK=off GOMODCACHE="$tmp/mod" GOFLAGS=-modcacherw \
		GOPRIVATE= GONOPROXY= GONOSUMDB= GOSUMDB=off GOTOOLCHAIN=local \
		GOPROXY="file://$tmp/proxy,file://$modcache/cache/download" "$@")
}
# quiet runs a command and shows its output only if it fails.
quiet() {
	local log
	log=$(mktemp "$tmp/log.XXXXXX")
	"$@" >"$log" 2>&1 || {
		local status=$?
		cat "$log" >&2
		return $status
	}
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
# One module at a time, as a user adds one: the core comes in at the version
# the module requires, not one given on the command line.
for m in "${modules[@]}"; do
	dir="$tmp/get/${m##*/}"
	mkdir -p "$dir"
	echo "go get $m@$version"
	quiet offline "$dir" go mod init example.com/consumer
	quiet offline "$dir" go get "$m@$version"
	want_versions "$dir" "$m" "$core"
done
# All of them in one program that uses each.
consumer="$tmp/consumer"
mkdir -p "$consumer"
cp "$root/tools/release/testdata/consumer/main.go" "$consumer/"
echo "go build of a program that uses ${modules[*]}"
quiet offline "$consumer" go mod init example.com/consumer
quiet offline "$consumer" go get "${modules[@]/%/@$version}"
quiet offline "$consumer" go mod tidy
want_versions "$consumer" "${modules[@]}" "$core"
offline "$consumer" go vet .
offline "$consumer" go build -o consumer .
"$consumer/consumer"

echo "== 4. each published module's tests on its own go.mod"
for m in "${published[@]}"; do
	work="$tmp/own/$m"
	mkdir -p "$work"
	cp "$root/$m/go.mod" "$work/go.mod"
	strip_candidates "$root/$m/go.sum" >"$work/go.sum"
	echo "cd $m && GOWORK=off go test ./..."
	# -mod=mod: the candidates' hashes go into the copy of go.sum.
	(cd "$root/$m" && candidate go test -mod=mod -modfile="$work/go.mod" -count=1 ./...)
done
echo "release check: $version installs and builds"
