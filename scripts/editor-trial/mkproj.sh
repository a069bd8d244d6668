#!/bin/sh
# usage: mkproj.sh [DIR]
# (Re)creates the scratch project the trial runs in (default: .run/proj next
# to this script): a README, main.go, pkg/util/util.go, ignored files
# (vendor_ignored/, build/, *.log via .gitignore) and its own git repo.
set -e
D=$(cd "$(dirname "$0")" && pwd)
P=${1:-${TRIAL_RUN:-$D/.run}/proj}
case $P in
  /*/*) ;;
  *) echo "mkproj.sh: refusing to recreate $P (need an absolute path at least two levels deep)" >&2; exit 2 ;;
esac
rm -rf "$P"; mkdir -p "$P/pkg/util" "$P/vendor_ignored/dep" "$P/build"
cat > "$P/README.md" <<'R'
# Scratch project

Used to drive Rebound through an ACP client.
The magic word is BANANA.
R
printf 'vendor_ignored/\nbuild/\n*.log\n' > "$P/.gitignore"
printf 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println("hello BANANA")\n}\n' > "$P/main.go"
printf 'package util\n\n// Add adds. BANANA\nfunc Add(a, b int) int { return a + b }\n' > "$P/pkg/util/util.go"
printf 'package dep\n\n// BANANA in an ignored dir\nfunc X() {}\n' > "$P/vendor_ignored/dep/dep.go"
printf 'package build\n\n// BANANA\n' > "$P/build/gen.go"
printf 'BANANA log\n' > "$P/debug.log"
(cd "$P" && git init -q . 2>/dev/null || true)
