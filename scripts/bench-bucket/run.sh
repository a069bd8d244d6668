#!/bin/sh
# Issue 33's benchmark: 8 prompts at once against a mock provider bucket of
# 4 requests per 10 s, from 8 sessions of one Rebound and from 8 Rebound
# processes, and 8 held on a window used up (herd), with
# provider.share_limits off and on, in one run. Prints the
# Markdown rows BENCHMARKS.md ("One provider limit") quotes. Real time: it
# takes about four minutes.
set -eu
cd "$(dirname "$0")/../.."
echo '| shape | share_limits | requests | 429s | into a closed window | to the last answer | answered | shared state at the end |'
echo '|---|---|---|---|---|---|---|---|'
go test ./cmd/rebound/ -run '^$' -bench SharedBucket -benchtime 1x -v 2>&1 |
	sed -n 's/^ *bucket_bench_test.go:[0-9]*: \(|.*\)$/\1/p'
