#!/bin/sh
# usage: mkproj-link.sh [DIR]
# mkproj.sh plus DIR/link -> /etc, a symlink out of the workspace (case h).
set -e
D=$(cd "$(dirname "$0")" && pwd)
P=${1:-${TRIAL_RUN:-$D/.run}/proj}
"$D/mkproj.sh" "$P"
ln -s /etc "$P/link"
