#!/bin/sh
# bench/netns_rsh.sh - Open MPI's launch agent for bench/mpi_netns.sh, in place
# of ssh (--mca plm_rsh_agent): "netns_rsh.sh [options] HOST COMMAND..." runs
# COMMAND (joined with spaces and run by sh, as ssh would) in network
# namespace HOST, with HOST as its host name (its own UTS namespace), so Open
# MPI sees one machine per namespace.
while [ $# -gt 0 ]; do
    case $1 in
    -*) shift ;; # ssh options Open MPI may pass
    *) break ;;
    esac
done
host=${1:?netns_rsh.sh: no host}
shift
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
