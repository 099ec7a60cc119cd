#!/usr/bin/env bash
# Checks that the go.mod and go.sum of each nested module given are tidy, as
# `go mod tidy -diff` would, for modules that require the core (or a sibling)
# at a version that is not released yet: go mod tidy ignores go.work, so here
# it resolves those versions from a local proxy of the working tree (see
# common.sh). The lines of go.sum for this repository's modules are left out
# of the comparison: their hashes at a candidate version are not known until
# it is tagged (docs/design/releasing.md). `make lint` runs this; with -fix, which
# `make tidy` passes, it writes the tidy files back instead of comparing.
#
#   tools/release/tidy-check.sh [-fix] MODULE_DIR...   (relative to the repository root)
set -euo pipefail
source "$(dirname "$0")/common.sh"

fix=false
if [[ ${1:-} == -fix ]]; then
	fix=true
	shift
fi

pack >/dev/null
status=0
for m in "$@"; do
	work="$tmp/tidy/$m"
	mkdir -p "$work"
	cp "$root/$m/go.mod" "$work/go.mod"
	# Committed hashes of a released version would not match the candidate's.
	if [[ -f "$root/$m/go.sum" ]]; then
		strip_candidates "$root/$m/go.sum" >"$work/go.sum"
	fi
	echo "tidy check: $m"
	if ! (cd "$root/$m" && candidate go mod tidy -modfile="$work/go.mod") 2>"$work/log"; then
		cat "$work/log" >&2
		status=1
		continue
	fi
	if $fix; then
		cp "$work/go.mod" "$root/$m/go.mod"
		# The tidy go.sum, with the committed lines of this repository's
		# modules (hashes of released versions) kept, in go.sum's order.
		strip_candidates "$work/go.sum" | LC_ALL=C awk -v keep="$root/$m/go.sum" '
			BEGIN { first = "github.com/srebreaker/srebreaker" }
			function ours() {
				while ((getline line < keep) > 0) if (line ~ /^github\.com\/srebreaker\/srebreaker[ \/]/) print line
				done = 1
			}
			!done && $1 > first { ours() }
			{ print }
			END { if (!done) ours() }' >"$work/go.sum.fixed"
		mv "$work/go.sum.fixed" "$root/$m/go.sum"
		continue
	fi
	diff -u --label "$m/go.mod" --label "$m/go.mod, tidy" "$root/$m/go.mod" "$work/go.mod" || status=1
	diff -u --label "$m/go.sum" --label "$m/go.sum, tidy" \
		<(strip_candidates "$root/$m/go.sum" 2>/dev/null) <(strip_candidates "$work/go.sum" 2>/dev/null) || status=1
done
if ((status != 0)); then
	echo "tidy check: failed; where go mod tidy ran, make tidy writes what it wants" >&2
fi
exit $status
