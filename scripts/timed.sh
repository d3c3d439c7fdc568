#!/usr/bin/env bash
# Run one step of `make demo` and note how long it took: timed.sh LOG "step name" command [args..]
# The step's output and exit status pass through unchanged; `make demo` prints LOG at the end.
set -uo pipefail
log=$1 name=$2
shift 2
start=$(date +%s)
"$@"
status=$?
printf '%-28s %5ds\n' "$name" "$(($(date +%s) - start))" >>"$log"
exit $status
