#!/bin/sh
# tests/format.sh - every C file of the tree is as clang-format 14 writes
# it (.clang-format), one TAP line a file. Skipped (a TAP "1..0 # SKIP" plan) without
# clang-format 14: other versions format some constructs differently.
# `make format` rewrites the files; `make format-check` runs this alone.
src=${top_srcdir:-.}
cf=
for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null 2>&1 && "$c" --version 2>/dev/null | grep -q 'version 14\.'; then
        cf=$c
        break
    fi
done
if [ -z "$cf" ]; then
    echo "1..0 # SKIP clang-format 14 not found (apt-get install clang-format)"
    exit 0
fi
cd "$src" || exit 1
# the files git tracks; in a tree without git, the sources (not generated ones)
files=$(git ls-files '*.c' '*.h' 2>/dev/null)
[ -n "$files" ] ||
    files=$(find include core engine ops dsl datasets runtime interop tools bench tests plugins \
        -name '*.[ch]' ! -name '*.pb-c.*' 2>/dev/null | sort)
n=0
fail=0
for f in $files; do
    n=$((n + 1))
    if out=$("$cf" --dry-run --Werror "$f" 2>&1); then
        echo "ok $n - $f"
    else
        echo "not ok $n - $f is not as clang-format writes it (make format)"
        printf '%s\n' "$out" | head -12 | sed 's/^/# /'
        fail=1
    fi
done
echo "1..$n"
exit $fail
