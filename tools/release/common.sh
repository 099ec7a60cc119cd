# Sourced by the scripts in tools/release: a temporary directory, the
# candidate proxy, and a go command that resolves this repository's modules
# from it.
#
# Environment:
#   VERSION    the candidate version (default v0.1.0)
#   PUBLISHED  the published nested modules (default: grpcbreaker prombreaker otelbreaker redisbreaker goredisbreaker sqlbreaker connectbreaker)

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
version=${VERSION:-v0.1.0}
read -r -a published <<<"${PUBLISHED:-grpcbreaker prombreaker otelbreaker redisbreaker goredisbreaker sqlbreaker connectbreaker}"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/srebreaker-release.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The module cache's download directory has the layout of a file-based
# proxy: the third-party modules the repository uses, once downloaded.
modcache=$(go env GOMODCACHE)
upstream=$(go env GOPROXY)

# pack writes the core and the published modules, as they are in the working
# tree, at $version into the proxy $tmp/proxy.
pack() {
	local dirs=("$root")
	local m
	for m in "${published[@]}"; do
		dirs+=("$root/$m")
	done
	(cd "$root/tools/release" && GOWORK=off go run . -o "$tmp/proxy" -version "$version" "${dirs[@]}")
}

# candidate runs a go command outside the workspace, as a user would, with
# this repository's modules at $version coming from $tmp/proxy, which comes
# first; then the module cache; then the usual proxy, for anything else.
#
# The module cache is a fresh one: a candidate must not land in the usual
# cache, where it would stand in for the real release of the same version.
# GONOSUMDB: the candidates are in no checksum database, and once a version
# is published there, a candidate packed from a later tree would not match
# it. Third-party modules are checked as usual.
candidate() {
	env GOWORK=off GOMODCACHE="$tmp/mod" GOFLAGS="$(go env GOFLAGS) -modcacherw" \
		GOPRIVATE= GONOPROXY= GONOSUMDB=github.com/srebreaker/srebreaker \
		GOPROXY="file://$tmp/proxy,file://$modcache/cache/download,$upstream" "$@"
}

# strip_candidates prints a go.sum without the lines of this repository's
# modules, whose hashes at a candidate version change with every commit.
strip_candidates() {
	sed '/^github\.com\/srebreaker\/srebreaker[ /]/d' "$@"
}
