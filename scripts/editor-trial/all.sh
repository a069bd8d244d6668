#!/usr/bin/env bash
# usage: scripts/editor-trial/all.sh
#
# The editor trial: builds rebound from this checkout, installs the ACP client's
# npm dependencies if needed (npm ci), then runs every case (see README.md)
# against `rebound mock-provider` and checks each one right after it ran.
# Prints one PASS/FAIL line per case and exits 1 if any case failed (2 if it
# could not start). Work files go to $TRIAL_RUN (default .run next to this
# script): the binary, the scratch project, the state dir and out/ with each
# case's transcript, client stdout/stderr (Rebound's log included) and the mock
# provider's request log.
set -u
D=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$D/../.." && pwd)
export TRIAL_RUN=${TRIAL_RUN:-$D/.run}
unset REBOUND_BIN  # always the binary built here
R=$TRIAL_RUN/out

die() { echo "all.sh: $*" >&2; exit 2; }
for c in go node npm python3; do command -v $c >/dev/null || die "$c is required (see README.md)"; done
node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' || die "Node >= 20 is required, found $(node --version)"
python3 -c 'import jsonschema, referencing' 2>/dev/null || die "python3 needs jsonschema >= 4.18 (pip install jsonschema)"

mkdir -p "$TRIAL_RUN"
echo "building $ROOT/cmd/rebound -> $TRIAL_RUN/rebound"
(cd "$ROOT" && go build -o "$TRIAL_RUN/rebound" ./cmd/rebound) || die "go build failed"
echo "building $D/mcpmock -> $TRIAL_RUN/mcpmock (the mock MCP server)"
(cd "$ROOT" && go build -o "$TRIAL_RUN/mcpmock" ./scripts/editor-trial/mcpmock) || die "go build of mcpmock failed"
if [ ! -d "$D/node_modules/@agentclientprotocol/sdk" ]; then
  echo "npm ci in $D"
  (cd "$D" && npm ci --no-audit --no-fund) || die "npm ci failed"
fi
rm -rf "$TRIAL_RUN/state" "$R" "$TRIAL_RUN"/xdg*; mkdir -p "$R"
[ -f "$TRIAL_RUN/config.toml" ] || printf '# empty: the trial uses the defaults, not your config\n' > "$TRIAL_RUN/config.toml"

PASSED=0; FAILED=()
# one NAME SCRIPT [client args...]: run the case, then check it at once (the
# next case recreates the project).
one() {
  local name=$1
  "$D/run.sh" "$@" > "$R/$name.run.log" 2>&1
  if python3 "$D/check.py" --case "$name" --run "$TRIAL_RUN"; then
    PASSED=$((PASSED + 1))
  else
    FAILED+=("$name"); echo "     (logs: $R/$name.*)"
  fi
}
sid() { sed -n 's/^sessionId: //p' "$R/$1.stdout" 2>/dev/null; }
# json STRING: STRING as a JSON string, for paths inside --mcp-server JSON.
json() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1]))' "$1"; }
S=$D/scripts

one a  "$S/a-read-find-search.json" --prompt "look around"
one b  "$S/b-edit.json" --prompt "edit main.go"
one c  "$S/c-edit-reject.json" --prompt "edit main.go" --permission reject
one d  "$S/d-run.json" --prompt "run echo" --terminal
one e  "$S/d-run.json" --prompt "run echo"
one f  "$S/f-drop.json" --prompt "what is the magic word"
one g  "$S/g-cancel.json" --prompt "edit then test" --permission-delay-ms 3000 --cancel-after-ms 500
KEEP_PROJ=1 one g2 "$S/g2-after-cancel.json" --load-session "$(sid g)" --prompt "again"
one g3 "$S/g3-cancel-then-prompt.json" --prompt "edit then test" --prompt "are you there" --permission-delay-ms 3000 --cancel-after-ms 500
"$D/mkproj-link.sh" "$TRIAL_RUN/proj"
KEEP_PROJ=1 one h "$S/h-escape.json" --prompt "read passwd"
one i1 "$S/i-multi.json" --prompt "what does main.go print" --prompt "change it to APPLE" --prompt "write a note" --permission allow_always
KEEP_PROJ=1 one i2 "$S/i-load.json" --load-session "$(sid i1)" --prompt "edit the note" --permission reject
one k  "$S/k-cancel-command.json" --prompt "slow" --prompt "next" --terminal --cancel-after-ms 1000
one k2 "$S/k-cancel-command.json" --prompt "slow" --cancel-after-ms 1000
one x  "$S/x-extras.json" --prompt "probe" --terminal
KEEP_PROJ=1 one xload "$S/g2-after-cancel.json" --load-session "$(sid x)" --terminal
one y  "$S/y-bigout-local.json" --prompt "big"
one yt "$S/y-bigout-local.json" --prompt "big" --terminal
one z  "$S/z-reasoning-truncation.json" --prompt "list"
# The session methods beyond new/load/prompt (issue 11): list, resume,
# set_mode, set_config_option, close, delete.
one l1 "$S/b-edit.json" --prompt "edit main.go for the list"
"$D/mkproj.sh" "$TRIAL_RUN/proj2"
one l2 "$S/b-edit.json" --cwd "$TRIAL_RUN/proj2" --prompt "edit main.go elsewhere"
one l  "$S/no-model.json" --list-sessions --list-page-size 5
one lc "$S/no-model.json" --list-sessions --list-cwd "$TRIAL_RUN/proj"
one r  "$S/r-resume.json" --resume-session "$(sid l1)" --prompt "continue"
one m  "$S/m-read-only.json" --set-mode read_only --prompt "write a note"
one o  "$S/o-config.json" --set-config model=o3-mini --set-config thought_level=high --set-config mode=accept_edits --prompt "which model"
one obad "$S/o-config.json" --set-config model=nope --prompt "never sent"
# What a panel shows beside the reply (issue 20): the slash commands, a plan
# the model keeps, how full the context is (the window from the provider's
# model list), and a command Rebound answers itself.
one u "$S/u-panel.json" --prompt "plan the change" --prompt "/status"
one cl "$S/cl-close.json" --prompt "close after this" --close-session
one del "$S/no-model.json" --delete-session "$(sid l2)" --list-sessions
# MCP servers (mcpServers in session/new): the mock MCP server built above,
# named by @MCPMOCK@ (run.sh passes its path in MCPMOCK_BIN).
one mcp "$S/mcp.json" --prompt "use the mock server" \
  --mcp-server '{"name":"mock","command":"@MCPMOCK@","args":[],"env":[]}'
one mcp-dead "$S/mcp-dead.json" --prompt "who is there" --client-caps '{"session":{"notices":{}}}' \
  --mcp-server '{"name":"dead","command":"@MCPMOCK@","args":[],"env":[{"name":"REBOUND_MCPMOCK_EXIT_AT_ONCE","value":"1"}]}' \
  --mcp-server '{"name":"live","command":"@MCPMOCK@","args":[],"env":[]}'
one mcp-cleanup "$S/mcp-cleanup.json" --prompt "start a child" \
  --mcp-server '{"name":"mock","command":"@MCPMOCK@","args":[],"env":[{"name":"REBOUND_MCPMOCK_PIDFILE","value":'"$(json "$R/mcp-cleanup.mcpmock.pid")"'}]}'
# Signing in: Rebound started without OPENAI_API_KEY (NO_API_KEY=1), with
# XDG_CONFIG_HOME (TRIAL_XDG) an empty dir of its own, or one that
# `rebound login` stored the key in.
NO_API_KEY=1 TRIAL_XDG=$TRIAL_RUN/xdg-none one auth-none "$S/no-model.json" --authenticate api-key --prompt "no key yet"
mkdir -p "$TRIAL_RUN/xdg-login"
printf 'sk-trial-login-key\n' | env -u OPENAI_API_KEY "XDG_CONFIG_HOME=$TRIAL_RUN/xdg-login" "REBOUND_CONFIG=$TRIAL_RUN/config.toml" \
  "$TRIAL_RUN/rebound" login > "$R/auth-login.login.out" 2>&1
echo $? > "$R/auth-login.login.rc"
NO_API_KEY=1 TRIAL_XDG=$TRIAL_RUN/xdg-login one auth-login "$S/auth-ok.json" --authenticate api-key --prompt "signed in?"
NO_API_KEY=1 TRIAL_XDG=$TRIAL_RUN/xdg-terminal one auth-terminal "$S/auth-ok.json" --client-caps '{"auth":{"terminal":true}}' \
  --terminal-login sk-trial-terminal-key --authenticate api-key --prompt "signed in?"

echo "editor trial: $PASSED passed, ${#FAILED[@]} failed${FAILED:+ (${FAILED[*]})}"
[ ${#FAILED[@]} -eq 0 ]
