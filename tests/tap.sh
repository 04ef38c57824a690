# tests/tap.sh - TAP helpers for the shell tests, sourced after they set T
# (a scratch directory):
#   ok DESC / not_ok DESC      one result
#   check DESC COMMAND...      ok when COMMAND succeeds; else not ok, with its
#                              output as "# " diagnostics
#   skip DESC WHY              ok with a TAP SKIP directive
#   tap_end                    the plan; succeeds when nothing failed
n=0
fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }
check() {
    d=$1
    shift
    if "$@" > "$T/last.out" 2>&1; then ok "$d"; else not_ok "$d"; sed 's/^/# /' "$T/last.out"; fi
}
tap_end() {
    echo "1..$n"
    [ "$fails" -eq 0 ]
}
