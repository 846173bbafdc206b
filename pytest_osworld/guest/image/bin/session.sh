#!/bin/bash
# The desktop session: PID 1 of the container (and of the VM, whose init execs it as root).
#
# Its processes are supervised so that whatever the desktop user kills comes back within a second
# or two: Xvfb, the session bus, openbox, x11vnc and the guest server each run under runit's runsv
# (bin/supervised/), as `user`. The supervisor runs as root, out of the desktop user's reach
# (`kill -9 -1`, `pkill -f guest` as `user` cannot touch it), under tini, which reaps orphans and
# hands `docker stop`'s SIGTERM on.
#
# The container starts as `user` (the image's user, which `docker exec` keeps): this script becomes
# root through sudo, which execs it in place (etc/sudoers/pytest-osworld-session), so PID 1 stays
# one process that the desktop user cannot signal.
set -euo pipefail

self=/usr/local/lib/pytest-osworld/session.sh
supervised=/usr/local/lib/pytest-osworld/supervised
run_dir=/run/pytest-osworld
services=(xvfb dbus openbox x11vnc guest-server)

if [[ "$(id -u)" != 0 ]]; then
    # The environment goes along whole: sudo would drop part of it (PYTHONPATH, LD_*) and add its own.
    exec sudo -n "$self" --environment "$(env -0 | base64 -w0)"
fi
if [[ "${1:-}" == --environment ]]; then
    mapfile -d '' -t given < <(printf '%s' "$2" | base64 -d)
    exec env -i "${given[@]}" "$self"
fi

# The services' directories, made afresh at every start (after `docker restart` too): runsv keeps
# its state in them. The log of starts and ends is the guest's record of restarts (GET
# /pytest-osworld/restarts); only root writes it.
rm -rf "$run_dir/service"
install -d -m 0755 "$run_dir" "$run_dir/service"
: >"$run_dir/supervised.jsonl"
chmod 0644 "$run_dir/supervised.jsonl"
for service in "${services[@]}"; do
    install -d -m 0755 "$run_dir/service/$service"
    ln -s "$supervised/$service" "$run_dir/service/$service/run"
    ln -s "$supervised/finish" "$run_dir/service/$service/finish"
done
install -d -m 0700 -o user -g user "${XDG_RUNTIME_DIR:-/run/user/1000}"

# -P: each runsv in a session of its own, so a signal to the supervisor's group is not theirs.
exec /usr/bin/tini -g -- /usr/bin/runsvdir -P "$run_dir/service"
