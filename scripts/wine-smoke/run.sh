#!/usr/bin/env bash
# Runs Rebound's Windows build under Wine through an editor's first minutes:
# initialize, session/new, a prompt whose model (rebound mock-provider, run
# natively) runs a command with cmd.exe and edits a file, then again with the
# command in the editor's terminal. See README.md's security model,
# "Windows and macOS". Needs wine (Debian's wine64, 8.0) and mingw-w64 to
# build bcryptprimitives.dll, which Wine 8 lacks; as root it installs them.
# Bounded: every step has a timeout; about a minute on a fresh prefix.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# --ci: a machine that cannot get the tools (no root, no apt, a failed
# install) skips the smoke test, saying so loudly; once the tools are there,
# any failure fails. Without --ci, missing tools fail.
ci=false
[ "${1:-}" = --ci ] && ci=true
missing() { ! command -v wine >/dev/null || ! command -v x86_64-w64-mingw32-gcc >/dev/null || ! command -v python3 >/dev/null; }
if missing; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    timeout 900 apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq wine64 gcc-mingw-w64-x86-64 python3 >/dev/null || true
  fi
  if missing; then
    echo "wine-smoke: needs wine64, gcc-mingw-w64-x86-64 and python3, and could not install them" >&2
    if $ci; then
      echo "wine-smoke: SKIPPED: the Windows build was vetted and built, not run" >&2
      exit 0
    fi
    exit 1
  fi
fi
work=$(mktemp -d)
mock=""
cleanup() {
  [ -n "$mock" ] && kill "$mock" 2>/dev/null || true
  WINEPREFIX="$work/prefix" timeout 30 wineserver -k 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
export WINEPREFIX="$work/prefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
x86_64-w64-mingw32-gcc -O2 -shared -nostdlib -Wl,--entry=0 -o "$work/bcryptprimitives.dll" \
  "$here/bcryptprimitives.c" "$here/bcryptprimitives.def" -ladvapi32
(cd "$root" && GOOS=windows GOARCH=amd64 go build -o "$work/rebound.exe" ./cmd/rebound \
  && go build -o "$work/rebound" ./cmd/rebound)
timeout 300 wineboot -i >/dev/null 2>&1
# The Go runtime loads it from System32 only.
cp "$work/bcryptprimitives.dll" "$WINEPREFIX/drive_c/windows/system32/"

# The Windows-only code's own tests (the file lock and the holder it names,
# the dir sync, the job object, cmd.exe's command line and the editor
# terminal's, the bucket files shared between processes), built for Windows
# and run here: package, then the tests to run (internal/filelock's all).
while read -r pkg tests; do
  (cd "$root" && GOOS=windows GOARCH=amd64 go test -c -o "$work/${pkg//\//_}.test.exe" "./$pkg")
  (cd "$work" && timeout 180 wine "$work/${pkg//\//_}.test.exe" -test.run "$tests" -test.count 1)
done <<'TESTS'
internal/filelock .
session Windows|TestDirSyncRefused
internal/proc Windows|TestJob_|TestStart_CmdLine
agent/tools Windows|TestWithinPath
agent/tools/shell Windows
ratelimit TestFileLock_BetweenProcesses
TESTS

mkdir -p "$work/proj/notes"
# Wine maps the Unix root to Z:, so Rebound sees Windows paths throughout.
winpath() { printf 'Z:%s' "${1//\//\\}"; }
# Twice: the command run by Rebound, then in the editor's terminal; each
# run with a mock provider of its own, whose script starts over.
for terminal in 0 1; do
  rm -f "$work/mock.url"
  "$work/rebound" mock-provider --script "$here/mock.json" >"$work/mock.url" 2>"$work/mock.log" &
  mock=$!
  for _ in $(seq 100); do [ -s "$work/mock.url" ] && break; sleep 0.1; done
  [ -s "$work/mock.url" ] || { cat "$work/mock.log" >&2; exit 1; }
  printf 'old line\n' >"$work/proj/notes/todo.txt"
  DRIVE_TERMINAL=$terminal OPENAI_API_KEY=smoke-key timeout 180 python3 "$here/drive.py" rebound.exe "$(winpath "$work/proj")" "$work/proj" \
    wine "$work/rebound.exe" --base-url "$(cat "$work/mock.url")" --model smoke \
    --state-dir "$(winpath "$work/state")"
  kill "$mock" 2>/dev/null || true
  wait "$mock" 2>/dev/null || true
  mock=""
done
