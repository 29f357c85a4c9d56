#!/usr/bin/env bash
# Start what the tests talk to when it is down: PostgreSQL on 127.0.0.1:5432 (its loopback clients
# trusted, as tests/conftest.py logs in as postgres without a password) and Redis on 6379.
# Called by `make test` and `.ci/run`; installing them is .ci/run's (apt-get, as root).
set -euo pipefail

say() { echo "services: $*" >&2; }

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
    if ! command -v pg_ctlcluster >/dev/null; then
        say "PostgreSQL is not installed: apt-get install -y postgresql (or run .ci/run as root)"
        exit 1
    fi
    cluster=$(ls /etc/postgresql | head -n 1)
    say "starting PostgreSQL $cluster"
    pg_ctlcluster --skip-systemctl-redirect "$cluster" main start
    for _ in $(seq 30); do pg_isready -h 127.0.0.1 -p 5432 -q && break; sleep 1; done
fi
# A new Debian cluster asks loopback clients for a password (scram-sha-256): trust loopback on a
# test machine.
if ! psql -h 127.0.0.1 -U postgres -d postgres -w -qAtc 'SELECT 1' >/dev/null 2>&1; then
    hba=$(find /etc/postgresql -name pg_hba.conf | head -n 1)
    say "trusting loopback clients in $hba"
    sed -i -E 's#^(host\s+all\s+all\s+(127\.0\.0\.1/32|::1/128)\s+)\S+#\1trust#' "$hba"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main reload
    for _ in $(seq 10); do
        psql -h 127.0.0.1 -U postgres -d postgres -w -qAtc 'SELECT 1' >/dev/null 2>&1 && break
        sleep 1
    done
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    if ! command -v redis-server >/dev/null; then
        say "Redis is not installed: apt-get install -y redis-server (or run .ci/run as root)"
        exit 1
    fi
    say "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
    for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
fi
