#!/usr/bin/env bash
# usage: run.sh NAME SCRIPT.json [client args...]
#
# Runs one case: starts `rebound mock-provider --script SCRIPT.json` on
# loopback, then client.mjs (the ACP client, offering fs and, with --terminal,
# terminal) with the built rebound as its agent, in the scratch project.
# Writes $TRIAL_RUN/out/NAME.{transcript.jsonl,stdout,stderr,rc,mock.log,
# mock.stderr,mock.rc,url}.
#
# Env:
#   TRIAL_RUN    work dir (default: .run next to this script); holds the
#                binary (rebound), the project (proj), the state dir (state),
#                the config (config.toml) and the outputs (out)
#   REBOUND_BIN  the binary to drive (default: $TRIAL_RUN/rebound)
#   KEEP_PROJ=1  keep the project as the previous case left it
#   MOCK_WAIT_S  how long to wait for the mock's URL (default 10)
#   NO_API_KEY=1 start Rebound without OPENAI_API_KEY (unset, not empty)
#   TRIAL_XDG    Rebound's XDG_CONFIG_HOME, where `rebound login` keeps the
#                key (default: $TRIAL_RUN/xdg, an empty dir, so that your own
#                stored key is never used)
#   MCPMOCK_BIN  the mock MCP server that @MCPMOCK@ in --mcp-server names
#                (default: $TRIAL_RUN/mcpmock)
set -u
D=$(cd "$(dirname "$0")" && pwd)
RUN=${TRIAL_RUN:-$D/.run}
BIN=${REBOUND_BIN:-$RUN/rebound}
if [ $# -lt 2 ]; then sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//;/^set -u/d' >&2; exit 64; fi
NAME=$1; SCRIPT=$2; shift 2
case $SCRIPT in /*) ;; *) SCRIPT=$PWD/$SCRIPT ;; esac
O=$RUN/out/$NAME
mkdir -p "$RUN/out" "$RUN/state"
rm -f "$O".{transcript.jsonl,stdout,stderr,rc,mock.log,mock.stderr,mock.rc,url}
[ -f "$RUN/config.toml" ] || printf '# empty: the trial uses the defaults, not your config\n' > "$RUN/config.toml"
[ -x "$BIN" ] || { echo "run.sh: no rebound binary at $BIN (run all.sh, or go build -o $BIN ./cmd/rebound)" >&2; exit 2; }
[ "${KEEP_PROJ:-}" = 1 ] || "$D/mkproj.sh" "$RUN/proj"

"$BIN" mock-provider --script "$SCRIPT" --log "$O.mock.log" > "$O.url" 2> "$O.mock.stderr" &
MOCK=$!
# Stop it with SIGINT (it exits 0); SIGKILL if it is still there after 5 s.
stop_mock() {
  [ -n "${MOCK:-}" ] || return 0
  kill -INT "$MOCK" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$MOCK" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$MOCK" 2>/dev/null; then
    echo "run.sh: $NAME: mock-provider still running 5s after SIGINT; killing it" >&2
    kill -KILL "$MOCK" 2>/dev/null
  fi
  wait "$MOCK"; echo $? > "$O.mock.rc"
  MOCK=
}
trap stop_mock EXIT

# The mock prints exactly one line, its base URL, once it listens. Wait for a
# whole line (read succeeds only at the newline), at most MOCK_WAIT_S seconds,
# and give up at once if the mock exits first.
URL=
deadline=$(( $(date +%s) + ${MOCK_WAIT_S:-10} ))
until IFS= read -r URL < "$O.url" 2>/dev/null && [ -n "$URL" ]; do
  URL=
  if ! kill -0 "$MOCK" 2>/dev/null; then
    echo "run.sh: $NAME: mock-provider exited before printing its URL:" >&2
    sed 's/^/  /' "$O.mock.stderr" >&2
    wait "$MOCK"; echo $? > "$O.mock.rc"; MOCK=
    exit 3
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "run.sh: $NAME: no URL from mock-provider within ${MOCK_WAIT_S:-10}s" >&2
    exit 3
  fi
  sleep 0.05
done
case $URL in http://127.0.0.1:*/v1|http://\[::1\]:*/v1|http://localhost:*/v1) ;;
  *) echo "run.sh: $NAME: unexpected mock URL: $URL" >&2; exit 3 ;; esac

XDG=${TRIAL_XDG:-$RUN/xdg}
mkdir -p "$XDG"
KEY=(OPENAI_API_KEY=x)
[ "${NO_API_KEY:-}" = 1 ] && KEY=(-u OPENAI_API_KEY)
env "${KEY[@]}" "OPENAI_BASE_URL=$URL" REBOUND_MODEL=mock-model \
  "REBOUND_STATE_DIR=$RUN/state" "REBOUND_CONFIG=$RUN/config.toml" "XDG_CONFIG_HOME=$XDG" \
  "MCPMOCK_BIN=${MCPMOCK_BIN:-$RUN/mcpmock}" \
  node "$D/client.mjs" --cwd "$RUN/proj" --transcript "$O.transcript.jsonl" --timeout-ms 60000 "$@" \
  -- "$BIN" > "$O.stdout" 2> "$O.stderr"
RC=$?
echo $RC > "$O.rc"
stop_mock
echo "== $NAME rc=$RC mock=$(cat "$O.mock.rc")"
cat "$O.stdout"
exit $RC
