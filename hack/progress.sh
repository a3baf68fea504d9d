#!/usr/bin/env bash
# progress.sh WHAT COMMAND...: runs COMMAND, saying every 30 s that it still builds WHAT, so
# that a long cold build (go build prints nothing until it is done, and nothing at all while it
# downloads modules) never looks stuck. A round of PROGRESS_INTERVAL one-second sleeps (29)
# takes a little more than that many seconds: 29 keeps every silence under 30 s.
set -uo pipefail
what=$1
shift
interval=${PROGRESS_INTERVAL:-29}
"$@" &
pid=$!
start=$SECONDS
while kill -0 "$pid" 2>/dev/null; do
	for _ in $(seq "$interval"); do
		kill -0 "$pid" 2>/dev/null || break 2
		sleep 1
	done
	kill -0 "$pid" 2>/dev/null && echo "    ... still building $what ($((SECONDS - start))s)"
done
wait "$pid"
