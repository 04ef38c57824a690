#!/bin/sh
# tests/tools/cli_reference.sh - docs/cli.md is slimrun's --help.
#
# docs/cli.md (the command-line reference) is what tools/cli_md.sh makes of
# every command's `slimrun CMD --help`, so the flag tables are written once,
# in the commands' flag_def tables. One TAP line per command section; on a
# difference, `make cli-reference` rewrites the file.
src=${top_srcdir:-.}
build=${top_builddir:-.}
slimrun=$build/tools/slimrun
doc=$src/docs/cli.md
[ -x "$slimrun" ] || { echo "1..0 # SKIP $slimrun not built"; exit 0; }
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
TMPDIR=$T sh "$src/tools/cli_md.sh" "$slimrun" > "$T/want" || {
    echo "1..1"; echo "not ok 1 - tools/cli_md.sh failed"; exit 1; }

# split a file into its "## slimrun CMD" sections: DIR/CMD (the head: DIR/0)
split() {
    mkdir -p "$2"
    awk -v d="$2" 'BEGIN { f = d "/0" } /^## slimrun / { f = d "/" $3 } { print > f }' "$1"
}
split "$T/want" "$T/w"
split "$doc" "$T/h"
n=0
fail=0
for f in "$T"/w/* "$T"/h/*; do
    c=${f##*/}
    [ -e "$T/seen.$c" ] && continue
    : > "$T/seen.$c"
    n=$((n + 1))
    what=$([ "$c" = 0 ] && echo "the head" || echo "slimrun $c")
    if cmp -s "$T/w/$c" "$T/h/$c"; then
        echo "ok $n - docs/cli.md: $what is its --help"
    else
        echo "not ok $n - docs/cli.md: $what differs from --help (run make cli-reference)"
        diff "$T/h/$c" "$T/w/$c" 2>&1 | head -20 | sed 's/^/# /'
        fail=1
    fi
done
echo "1..$n"
exit $fail
