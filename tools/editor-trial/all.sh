#!/usr/bin/env bash
# usage: tools/editor-trial/all.sh
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
if [ ! -d "$D/node_modules/@agentclientprotocol/sdk" ]; then
  echo "npm ci in $D"
  (cd "$D" && npm ci --no-audit --no-fund) || die "npm ci failed"
fi
rm -rf "$TRIAL_RUN/state" "$R"; mkdir -p "$R"

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
one cl "$S/cl-close.json" --prompt "close after this" --close-session
one del "$S/no-model.json" --delete-session "$(sid l2)" --list-sessions

echo "editor trial: $PASSED passed, ${#FAILED[@]} failed${FAILED:+ (${FAILED[*]})}"
[ ${#FAILED[@]} -eq 0 ]
