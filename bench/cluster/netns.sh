#!/bin/sh
# bench/cluster/netns.sh up K | down | show: the modelled network of NET=tbf (bench/cluster/README.md).
#
#   up K   a bridge fdbr0 (10.213.0.1/24) in the root namespace and, per worker i = 1..K, a
#          network namespace fdw<i> with a veth pair: fdv<i> (root end, on the bridge) and
#          fdvp<i> (in fdw<i>, 10.213.0.(10+i)/24, renamed there to eth0). Both ends get
#          `tc qdisc add dev X root tbf rate 10gbit burst 4mb latency 10ms`, so every byte
#          between the coordinator (on 10.213.0.1) and a worker crosses one shaped link each
#          way, and a byte between two workers two (out of one namespace, into the other),
#          as through a switch. Only these private addresses; nothing is routed off the machine.
#          With COORD_HOST=1 the coordinator gets a host of its own the same way: namespace
#          fdw0 at 10.213.0.10 (veth fdv0), so the client left in the root namespace reads the
#          local runner's results over a shaped link too, as it reads the workers'.
#   down   removes, by name, whatever of the above exists: first SIGTERM (then SIGKILL after
#          5 s) to the processes still inside a fdw<i> namespace (`ip netns pids`: only what
#          this benchmark started there), then the veths fdv<i>, the bridge, the namespaces.
#          Safe to run any number of times; scaling.mjs runs it at start and exit, and
#          scaling.sh on EXIT/INT/TERM.
#   show   the namespaces, links and qdiscs that exist now.
# Needs root (ip netns, ip link, tc). RATE=10gbit BURST=4mb LATENCY=10ms override the shaping.
set -e
BR=fdbr0
NET=10.213.0
RATE=${RATE:-10gbit}
BURST=${BURST:-4mb}
LATENCY=${LATENCY:-10ms}

namespaces() { ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^fdw[0-9]+$' || true; }
veths() { ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^fdv[0-9]+$' || true; }

down() {
    pids=''
    for ns in $(namespaces); do pids="$pids $(ip netns pids "$ns" 2>/dev/null || true)"; done
    pids=$(echo $pids)
    if [ -n "$pids" ]; then
        echo "netns.sh: stopping processes left in the fdw* namespaces: $pids" >&2
        kill -TERM $pids 2>/dev/null || true
        i=0
        while [ $i -lt 50 ]; do
            alive=''
            for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
            [ -z "$alive" ] && break
            sleep 0.1
            i=$((i + 1))
        done
        [ -n "$alive" ] && kill -KILL $alive 2>/dev/null || true
    fi
    # deleting the root end of a veth deletes its peer in the namespace too
    for v in $(veths); do ip link del "$v" 2>/dev/null || true; done
    ip link show "$BR" >/dev/null 2>&1 && ip link del "$BR" 2>/dev/null || true
    for ns in $(namespaces); do ip netns del "$ns" 2>/dev/null || true; done
    return 0
}

shape() { # shape DEV [netns]
    if [ -n "$2" ]; then
        ip netns exec "$2" tc qdisc replace dev "$1" root tbf rate "$RATE" burst "$BURST" latency "$LATENCY"
    else
        tc qdisc replace dev "$1" root tbf rate "$RATE" burst "$BURST" latency "$LATENCY"
    fi
}

up() {
    k=$1
    [ -n "$k" ] && [ "$k" -ge 1 ] && [ "$k" -le 50 ] || { echo "netns.sh up K: K from 1 to 50" >&2; exit 2; }
    down
    ip link add "$BR" type bridge
    ip link set dev "$BR" addrgenmode none 2>/dev/null || true
    ip addr add "$NET.1/24" dev "$BR"
    ip link set "$BR" up
    i=1
    [ "${COORD_HOST:-0}" = 1 ] && i=0
    while [ $i -le "$k" ]; do
        ns=fdw$i
        ip netns add "$ns"
        ip link add "fdv$i" type veth peer name "fdvp$i"
        ip link set dev "fdv$i" addrgenmode none 2>/dev/null || true
        ip link set "fdvp$i" netns "$ns"
        ip link set "fdv$i" master "$BR"
        ip link set "fdv$i" up
        shape "fdv$i"
        ip netns exec "$ns" ip link set lo up
        ip netns exec "$ns" ip link set dev "fdvp$i" name eth0
        ip netns exec "$ns" ip link set dev eth0 addrgenmode none 2>/dev/null || true
        ip netns exec "$ns" ip addr add "$NET.$((10 + i))/24" dev eth0
        ip netns exec "$ns" ip link set eth0 up
        shape eth0 "$ns"
        i=$((i + 1))
    done
}

show() {
    ip netns list | grep -E '^fdw' || true
    ip -br link show | grep -E '^(fdbr0|fdv[0-9])' || true
    for v in $(veths); do tc qdisc show dev "$v"; done
    for ns in $(namespaces); do echo "$ns: $(ip netns exec "$ns" tc qdisc show dev eth0)"; done
}

case "$1" in
    up) up "$2" ;;
    down) down ;;
    show) show ;;
    *) echo "usage: $0 up K | down | show" >&2; exit 2 ;;
esac
