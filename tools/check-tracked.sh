#!/usr/bin/env bash
# check-tracked.sh fails when the repository tracks a file that is not
# source: a binary (as git's own diff judges it: a NUL byte early on, or a
# .gitattributes -diff) or a file larger than MAX_BYTES (512 KiB by default).
# Images that docs/ shows (docs/**.png, docs/**.svg) are allowed either way.
# It reads git's index, so it checks what a commit would hold, and runs from
# anywhere inside a work tree: make lint runs it at the root of this one.
#
#	tools/check-tracked.sh            # exit 1, listing the offenders, if any
#	MAX_BYTES=1048576 tools/check-tracked.sh
set -euo pipefail

max=${MAX_BYTES:-524288}
cd "$(git rev-parse --show-toplevel)"

# allowed reports whether path is an image under docs/.
allowed() {
	case $1 in
	docs/*.png | docs/*.svg) return 0 ;;
	*) return 1 ;;
	esac
}

bad=()

# Binaries: git diff --numstat prints "-<TAB>-" for them; compared with the
# empty tree, every tracked file is in the diff.
empty=$(git hash-object -t tree /dev/null)
while IFS= read -r -d '' entry; do
	IFS=$'\t' read -r added deleted path <<<"$entry"
	if [[ $added == - && $deleted == - ]] && ! allowed "$path"; then
		bad+=("$path: binary")
	fi
done < <(git -c core.quotepath=off diff --cached --numstat -z --no-renames "$empty")

# Sizes, of the blobs in the index.
while IFS= read -r line; do
	size=${line%% *}
	path=${line#* }
	if ((size > max)) && ! allowed "$path"; then
		bad+=("$path: $size bytes, more than $max")
	fi
done < <(git ls-files -s -z | while IFS= read -r -d '' entry; do
	meta=${entry%%$'\t'*}
	read -r _ object _ <<<"$meta"
	printf '%s %s\n' "$object" "${entry#*$'\t'}"
done | git cat-file --batch-check='%(objectsize) %(rest)')

if ((${#bad[@]} > 0)); then
	echo "tracked files that are not source (git rm --cached them, and add them to .gitignore):" >&2
	printf '  %s\n' "${bad[@]}" >&2
	exit 1
fi
