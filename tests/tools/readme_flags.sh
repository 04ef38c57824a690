#!/bin/sh
# tests/tools/readme_flags.sh - the README's flag tables are slimrun's --help.
#
# Each block of README.md between
#   <!-- slimrun CMD --help -->   and   <!-- end slimrun CMD --help -->
# is `slimrun CMD --help` as Markdown: the usage line(s) in a code block,
# then a table of the flags (section headings in bold), so the flag tables
# are written once, in the commands' flag_def tables. Without arguments this
# is a TAP test, one line a block; with --update it rewrites the blocks
# (`make readme-flags`).
src=${top_srcdir:-.}
build=${top_builddir:-.}
slimrun=$build/tools/slimrun
readme=$src/README.md
[ -x "$slimrun" ] || { echo "1..0 # SKIP $slimrun not built"; exit 77; }

# `slimrun CMD --help` on stdin -> the Markdown block's body on stdout
to_markdown() {
    awk '
    function cell(s) { gsub(/\|/, "\\|", s); return s }
    NR == 1 && /^usage: / { sub(/^usage: /, ""); usage = 1; print "```sh"; print; next }
    usage && /^ +[^ -]/ { sub(/^       /, ""); print; next }
    usage && /^ *$/ { usage = 0; print "```"; next }
    /^  --/ {
        if (!table) { print ""; print "| flag | |"; print "|---|---|"; table = 1 }
        line = $0; sub(/^  /, "", line)
        name = line; sub(/  +.*$/, "", name)
        help = line; sub(/^[^ ]+( [^ ]+)?  +/, "", help)
        if (help == line) help = ""
        printf "| `%s` | %s |\n", name, cell(help); next
    }
    /^[a-z][a-z ]*:$/ {
        if (!table) { print ""; print "| flag | |"; print "|---|---|"; table = 1 }
        h = $0; sub(/:$/, "", h)
        if (h != "flags" && h != "options") printf "| **%s** | |\n", h
        next
    }
    END { if (usage) print "```" }'
}

cmds=$(sed -n 's/^<!-- slimrun \([a-z_]*\) --help -->$/\1/p' "$readme")
if [ "${1-}" = --update ]; then
    tmp=$readme.tmp.$$
    cp "$readme" "$tmp"
    for c in $cmds; do
        "$slimrun" "$c" --help | to_markdown > "$tmp.block" || exit 1
        awk -v c="$c" -v block="$tmp.block" '
            $0 == "<!-- slimrun " c " --help -->" { print; while ((getline l < block) > 0) print l; skip = 1; next }
            $0 == "<!-- end slimrun " c " --help -->" { skip = 0 }
            !skip' "$tmp" > "$tmp.new" && mv "$tmp.new" "$tmp"
    done
    rm -f "$tmp.block"
    mv "$tmp" "$readme"
    echo "README.md: the --help blocks of $(echo $cmds) rewritten"
    exit 0
fi

n=0
fail=0
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
for c in $cmds; do
    n=$((n + 1))
    "$slimrun" "$c" --help | to_markdown > "$T/want"
    awk -v c="$c" '
        $0 == "<!-- end slimrun " c " --help -->" { exit }
        on
        $0 == "<!-- slimrun " c " --help -->" { on = 1 }' "$readme" > "$T/have"
    if cmp -s "$T/want" "$T/have"; then
        echo "ok $n - README's slimrun $c table is its --help"
    else
        echo "not ok $n - README's slimrun $c table differs from its --help (make readme-flags)"
        diff "$T/have" "$T/want" | head -20 | sed 's/^/# /'
        fail=1
    fi
done
if [ "$n" -eq 0 ]; then
    echo "1..0 # SKIP no slimrun --help blocks in README.md"
    exit 77
fi
echo "1..$n"
exit $fail
