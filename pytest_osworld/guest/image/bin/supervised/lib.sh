# Sourced by the supervised services' run scripts (one per service, named after it) and by their
# finish script. runsv runs both as root, in the service's directory under /run/pytest-osworld/service.
# shellcheck shell=bash

SUPERVISED_LOG=/run/pytest-osworld/supervised.jsonl
SERVICE="${PWD##*/}"

note() { echo "$SERVICE: $*" >&2; }

# One JSON line per start and per end of a service's process; the guest server reads restarts from it.
record() {  # event [more "key":value fields]
    printf '{"service":"%s","event":"%s","at":%s%s}\n' "$SERVICE" "$1" "$EPOCHREALTIME" "${2:+,$2}" \
        >>"$SUPERVISED_LOG"
}

# The service's process itself, as the desktop user (exec: runsv supervises that very process).
exec_as_user() {
    exec setpriv --reuid=user --regid=user --init-groups -- "$@"
}

display_answers() { xset -display "$DISPLAY" q >/dev/null 2>&1; }
window_manager_answers() { wmctrl -m >/dev/null 2>&1; }
session_bus_listens() { [[ -S "${DBUS_SESSION_BUS_ADDRESS#unix:path=}" ]]; }

# A readiness check polled for up to about $1 seconds: true as soon as it holds, never a fixed wait.
wait_for() {
    local limit=$1 i
    shift
    for ((i = 0; i < limit * 20; i++)); do
        "$@" && return 0
        sleep 0.05  # poll interval
    done
    "$@"
}

display_number() {
    local number="${DISPLAY#:}"
    echo "${number%%.*}"
}
