#!/usr/bin/env bash
# The mail trigger's latency (make bench; not in CI): from a DKIM-signed
# message written into the real Dovecot's Maildir, the watcher idling (IMAP
# IDLE), to the FAKE claude's start in the run it triggers, beside `docker
# run --rm IMAGE true` on the same image, interleaved (tests/e2e
# BenchmarkServeMail). Goal: the ratio <= 1.5. Needs what the e2e suite
# needs (Docker Engine) and dovecot-imapd. ROUNDS=N changes the rounds
# (default 9).
set -euo pipefail
cd "$(dirname "$0")/../.."
go test ./tests/e2e -run '^$' -bench '^BenchmarkServeMail$' -benchtime "${ROUNDS:-9}x" -count 1 -timeout 30m
