#!/usr/bin/env bash
# check-tracked-test.sh tests check-tracked.sh in throwaway git repositories:
# it passes on source and on images under docs/, and fails on a binary, on a
# file over the size limit and on a binary with a space in its name. make
# lint runs it before running the check itself.
set -euo pipefail

check=$(cd "$(dirname "$0")" && pwd)/check-tracked.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# repo makes a fresh repository with a Go file and a docs image in it.
repo() {
	rm -rf "$tmp/repo"
	git init -q "$tmp/repo"
	mkdir -p "$tmp/repo/docs"
	printf 'package x\n' >"$tmp/repo/x.go"
	printf '\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR' >"$tmp/repo/docs/shot.png"
	head -c 600000 /dev/zero >"$tmp/repo/docs/big.svg" # large, and binary to git: an image docs/ shows
	git -C "$tmp/repo" add -A
}

# expect runs the check in the repository and compares its outcome.
expect() {
	local want=$1 what=$2 got=pass
	(cd "$tmp/repo" && "$check" 2>"$tmp/err") || got=fail
	if [[ $got != "$want" ]]; then
		echo "check-tracked-test: $what: want $want, got $got" >&2
		cat "$tmp/err" >&2
		failures=$((failures + 1))
	fi
}

repo
expect pass "source and docs images"

repo
printf 'ELF\x00\x01\x02' >"$tmp/repo/x.test"
git -C "$tmp/repo" add -A
expect fail "a tracked binary"
grep -q 'x.test: binary' "$tmp/err" || { echo "check-tracked-test: the binary is not named" >&2; failures=$((failures + 1)); }

repo
mkdir -p "$tmp/repo/sub dir"
printf '\x00' >"$tmp/repo/sub dir/a b"
git -C "$tmp/repo" add -A
expect fail "a binary whose path has spaces"

repo
printf '\x00' >"$tmp/repo/docs/notes.bin"
git -C "$tmp/repo" add -A
expect fail "a binary under docs/ that is not an image"

repo
awk 'BEGIN { for (i = 0; i < 40000; i++) print "a line of text" }' >"$tmp/repo/data.txt"
git -C "$tmp/repo" add -A
expect fail "a text file over 512 KiB"
MAX_BYTES=1000000 expect pass "the same under MAX_BYTES=1000000"

repo
git -C "$tmp/repo" -c user.name=t -c user.email=t@localhost commit -q -m source
printf '\x00' >"$tmp/repo/untracked.bin"
expect pass "an untracked binary"

if ((failures > 0)); then
	exit 1
fi
echo "check-tracked-test: ok"
