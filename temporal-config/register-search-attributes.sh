#!/bin/sh
# Registers activity-core's custom search attributes (the list is in
# docs/operating.md, "The search-attribute check") on a Temporal
# server, idempotently. docker-compose.dev.yml runs it once per `up` in the
# `temporal-search-attributes` container; it also works by hand against any
# server:  TEMPORAL_ADDRESS=127.0.0.1:7233 sh temporal-config/register-search-attributes.sh
#
# Keep SEARCH_ATTRIBUTES in step with packages/dev-services/src/search-attributes.ts,
# which the CLI dev server path (`npm start`) and the start-up check read.
#
# POSIX sh on purpose: it runs in the temporalio/auto-setup image (Alpine).
set -eu

ADDRESS="${TEMPORAL_ADDRESS:-temporal:7233}"
NAMESPACE="${TEMPORAL_NAMESPACE:-default}"
SEARCH_ATTRIBUTES="${SEARCH_ATTRIBUTES:-ActivityId=Keyword ActivityName=Keyword TriggerType=Keyword ScheduledFor=Datetime EventId=Keyword RerunOf=Keyword}"
WAIT_SECONDS="${WAIT_SECONDS:-300}"
TEMPORAL_BIN="${TEMPORAL_BIN:-temporal}"

log() { printf '[search-attributes] %s\n' "$*"; }
fail() { printf '[search-attributes] ERROR: %s\n' "$*" >&2; exit 1; }

t() { "$TEMPORAL_BIN" --address "$ADDRESS" "$@"; }

# Calls "$@" until it succeeds or WAIT_SECONDS pass. Output is discarded: the
# server is expected to refuse for a while during start-up.
wait_for() {
  what="$1"; shift
  waited=0
  until "$@" >/dev/null 2>&1; do
    if [ "$waited" -ge "$WAIT_SECONDS" ]; then
      fail "gave up after ${WAIT_SECONDS}s waiting for $what"
    fi
    sleep 2
    waited=$((waited + 2))
  done
  log "$what: ok"
}

cluster_serving() { t operator cluster health 2>/dev/null | grep -q SERVING; }

# Prints the registered type of search attribute $1 in $NAMESPACE, or nothing.
# The CLI prints an aligned "Name  Type" table; '|' borders, should a CLI
# version draw them, are blanked first.
registered_type() {
  t operator search-attribute list --namespace "$NAMESPACE" 2>/dev/null \
    | awk -v name="$1" '{ gsub(/\|/, " ") } $1 == name { print $2; exit }'
}

log "server $ADDRESS, namespace $NAMESPACE"
wait_for "frontend serving" cluster_serving
# auto-setup creates the namespace in the background after the frontend is up.
wait_for "namespace $NAMESPACE exists" t operator namespace describe --namespace "$NAMESPACE"
# A fresh namespace can take a namespace-cache refresh before its search
# attributes can be read or written.
wait_for "search attributes of $NAMESPACE readable" t operator search-attribute list --namespace "$NAMESPACE"

for pair in $SEARCH_ATTRIBUTES; do
  name="${pair%%=*}"
  type="${pair#*=}"
  [ -n "$name" ] && [ -n "$type" ] && [ "$name" != "$pair" ] || fail "bad entry '$pair' (want Name=Type)"

  attempt=1
  created=no
  while :; do
    current="$(registered_type "$name")"
    if [ "$current" = "$type" ]; then
      if [ "$created" = yes ]; then log "$name ($type): registered"; else log "$name ($type): already registered"; fi
      break
    fi
    if [ -n "$current" ]; then
      fail "$name is registered as $current, activity-core needs $type. A search attribute's type cannot be changed in place: remove it (temporal operator search-attribute remove --namespace $NAMESPACE --name $name) or reset the volume (docker compose -f docker-compose.dev.yml down -v)."
    fi
    # Older servers and CLIs answer "already exists" for a racing or repeated
    # create; either way the re-read at the top of the loop decides.
    if t operator search-attribute create --namespace "$NAMESPACE" --name "$name" --type "$type"; then
      created=yes
    fi
    attempt=$((attempt + 1))
    if [ "$attempt" -gt 10 ]; then
      fail "$name ($type) still not visible after 10 attempts"
    fi
    sleep 2
  done
done

log "all registered: $SEARCH_ATTRIBUTES"
