#!/bin/sh
# bench/mpi_netns.sh - "several machines" on one: network namespaces joined by
# veth pairs to a bridge, so traffic between ranks crosses a real network
# stack, each link shaped with tc. Root only. mpirun starts one orted per
# namespace through bench/netns_rsh.sh (Open MPI's plm_rsh_agent: `ip netns
# exec` instead of ssh), each with its own host name (a UTS namespace), so
# Open MPI sees separate hosts and talks TCP between them.
#
#   bench/mpi_netns.sh up [HOSTS] [RATE] [DELAY]   create slimh0..slimh{HOSTS-1}
#                                                   (default 2 hosts, 10gbit, no delay)
#   bench/mpi_netns.sh shape RATE [DELAY]           reshape every link (e.g. 1gbit 0.5ms)
#   bench/mpi_netns.sh run [-npernode N] -- CMD...  mpirun CMD on the hosts
#   bench/mpi_netns.sh down                         remove it all
#   bench/mpi_netns.sh status
#
# Links: host i has eth0 10.77.0.(i+1)/24 in namespace slimh<i>, its peer
# slimv<i> on bridge slimbr (10.77.0.254, where mpirun listens). RATE shapes
# both directions of every link with tbf (host egress and the bridge port's
# egress); DELAY adds netem delay on both ends (each way). A kernel without
# netem (CONFIG_NET_SCH_NETEM) gets the delay from bench/delayline instead:
# when `up` is given a DELAY there, each link is a pair of TAP devices joined
# by a delayline process (delay each way, changed by `shape`; it copies up to
# about 3 Gbit/s, so use it for the 1 Gbit/s links). SLIM_NETNS_LINK=veth or
# =delayline forces the kind of link.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix=slimh
bridge=slimbr
[ "$(id -u)" -eq 0 ] || { echo "mpi_netns.sh: needs root (ip netns, tc)" >&2; exit 1; }
command -v ip > /dev/null && command -v tc > /dev/null || {
    echo "mpi_netns.sh: needs ip and tc (apt-get install iproute2)" >&2; exit 1; }

# the delay line: built by `make bench/delayline` (or found beside this script)
delayline=${SLIM_DELAYLINE:-$here/delayline}
[ -x "$delayline" ] || [ ! -x "$here/../bench/delayline" ] || delayline=$here/../bench/delayline
dlfile=/run/slim-netns.delay

to_us() { # 0.5ms / 500us / 1s -> microseconds
    echo "${1:-0}" | awk '{v=$1+0; u=tolower($1); sub(/^[0-9.]+/, "", u)
        m = u=="s"?1e6 : u=="ms"?1e3 : u=="us"?1 : 1e3; printf "%d", v*m}'
}

hosts() { ip netns list | awk -v p="$prefix" '$1 ~ "^"p"[0-9]+$" {print $1}' | sort -V; }

# tbf needs a bucket of at least rate/HZ bytes; 2 ms of traffic is plenty
shape_dev() { # NS|"" DEV RATE DELAY
    ns=$1 dev=$2 rate=$3 delay=$4
    run() { if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi; }
    run tc qdisc del dev "$dev" root 2> /dev/null || true
    bps=$(echo "$rate" | awk '{v=$1+0; u=tolower($1); sub(/^[0-9.]+/, "", u)
        m = u=="gbit"?1e9 : u=="mbit"?1e6 : u=="kbit"?1e3 : 1; print v*m}')
    burst=$(awk -v b="$bps" 'BEGIN {x = b / 8 * 0.002; if (x < 65536) x = 65536; printf "%d", x}')
    if [ -n "$delay" ] && [ "$delay" != 0 ] && [ "$netem" = yes ] && [ ! -f "$dlfile" ]; then
        run tc qdisc add dev "$dev" root handle 1: netem delay "$delay" limit 100000
        run tc qdisc add dev "$dev" parent 1:1 handle 10: tbf rate "$rate" burst "$burst" \
            latency 20ms
    else
        run tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" latency 20ms
    fi
}

have_netem() {
    ip link add slimq0 type veth peer name slimq1 2> /dev/null || { echo no; return; }
    if tc qdisc add dev slimq0 root netem delay 1ms 2> /dev/null; then echo yes; else echo no; fi
    ip link del slimq0 2> /dev/null || true
}

shape_all() { # RATE DELAY
    netem=$(have_netem)
    if [ -f "$dlfile" ]; then
        to_us "$2" > "$dlfile"
        for p in /run/slim-netns.dl*.pid; do kill -HUP "$(cat "$p")"; done
    elif [ -n "$2" ] && [ "$2" != 0 ] && [ "$netem" = no ]; then
        echo "mpi_netns.sh: this kernel has no netem (CONFIG_NET_SCH_NETEM) and the links" \
            "are veth: they get the rate ($1) but not the delay ($2); bring them up with" \
            "a delay (down, then up N RATE DELAY) to use bench/delayline" >&2
    fi
    for h in $(hosts); do
        i=${h#"$prefix"}
        shape_dev "$h" eth0 "$1" "$2"
        shape_dev "" "slimv$i" "$1" "$2"
    done
    echo "$1 ${2:-0}" > /run/slim-netns.shape
}

case ${1:-} in
up)
    n=${2:-2} rate=${3:-10gbit} delay=${4:-}
    [ -z "$(hosts)" ] || { echo "mpi_netns.sh: already up (down first)" >&2; exit 1; }
    link=${SLIM_NETNS_LINK:-}
    if [ -z "$link" ]; then
        link=veth
        [ -n "$delay" ] && [ "$delay" != 0 ] && [ "$(have_netem)" = no ] && link=delayline
    fi
    if [ "$link" = delayline ]; then
        [ -x "$delayline" ] || { echo "mpi_netns.sh: no $delayline (make bench/delayline)" >&2
            exit 1; }
        to_us "$delay" > "$dlfile"
    fi
    ip link add "$bridge" type bridge
    ip addr add 10.77.0.254/24 dev "$bridge"
    ip link set "$bridge" up
    i=0
    while [ $i -lt "$n" ]; do
        h=$prefix$i
        ip netns add "$h"
        if [ "$link" = delayline ]; then
            setsid "$delayline" "$h" eth0 "slimv$i" "$dlfile" \
                < /dev/null > /dev/null 2>> "/run/slim-netns.dl$i.log" &
            echo $! > "/run/slim-netns.dl$i.pid"
            t=0 # the devices appear once it runs
            until ip link show "slimv$i" > /dev/null 2>&1; do
                t=$((t + 1)); [ $t -lt 50 ] || { echo "mpi_netns.sh: delayline failed:" \
                    "$(cat "/run/slim-netns.dl$i.log")" >&2; exit 1; }
                sleep 0.1
            done
        else
            ip link add "slimv$i" type veth peer name eth0 netns "$h"
        fi
        ip link set "slimv$i" master "$bridge" up
        ip netns exec "$h" ip addr add "10.77.0.$((i + 1))/24" dev eth0
        ip netns exec "$h" ip link set eth0 up
        ip netns exec "$h" ip link set lo up
        i=$((i + 1))
    done
    shape_all "$rate" "$delay"
    echo "up: $n hosts ($(hosts | tr '\n' ' ')), $link links $rate${delay:+, delay $delay each way}"
    ;;
shape)
    shape_all "${2:?rate}" "${3:-}"
    echo "links now ${2}${3:+, delay $3 each way}"
    ;;
run)
    shift
    npn=1
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        case $1 in
        -npernode) npn=$2; shift 2 ;;
        *) echo "mpi_netns.sh run: unknown option $1" >&2; exit 2 ;;
        esac
    done
    [ "${1:-}" = -- ] && shift
    hl=$(hosts | awk -v n="$npn" '{printf "%s%s:%d", sep, $1, n; sep=","}')
    np=$(($(hosts | wc -l) * npn))
    [ "$np" -gt 0 ] || { echo "mpi_netns.sh: not up" >&2; exit 1; }
    # TCP between the hosts only (the bridge's subnet); no shared memory
    # across them (they are separate hosts to Open MPI); root allowed. No
    # binding: every "host" would bind its first rank to core 0, and all the
    # ranks would share that one core (measured: half the speed).
    exec mpirun --allow-run-as-root -np "$np" --host "$hl" --bind-to none \
        --mca plm_rsh_agent "$here/netns_rsh.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24 \
        --mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none \
        -x SLIM_MODEL_PATH -x OMPI_MCA_rmaps_base_oversubscribe=1 "$@"
    ;;
down)
    for h in $(hosts); do
        ip link del "slimv${h#"$prefix"}" 2> /dev/null || true
        ip netns del "$h"
    done
    for p in /run/slim-netns.dl*.pid; do
        [ -f "$p" ] && kill "$(cat "$p")" 2> /dev/null || true
        rm -f "$p"
    done
    ip link del "$bridge" 2> /dev/null || true
    rm -f /run/slim-netns.shape "$dlfile" /run/slim-netns.dl*.log
    echo down
    ;;
status)
    hosts
    [ -f /run/slim-netns.shape ] && echo "shape: $(cat /run/slim-netns.shape)"
    [ -f "$dlfile" ] && echo "delay lines: $(cat "$dlfile") us each way"
    for h in $(hosts); do ip netns exec "$h" tc qdisc show dev eth0; done
    ;;
*)
    sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
    ;;
esac
