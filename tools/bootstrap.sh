#!/usr/bin/env bash
# Idempotent, cached set-up of the development environment:
#   1. a virtual environment (.venv) with the ROS 2 wheels from requirements.txt,
#   2. the CMake path fix the message wheels need (tools/fix_wheel_cmake_paths.py),
#   3. a colcon build of every package under src/.
# Each step is skipped when its inputs have not changed since it last succeeded,
# so a second run with nothing changed takes a few seconds.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
stamps="$venv/.stamps"

say() { printf 'bootstrap: %s\n' "$*" >&2; }
fail() { printf 'bootstrap: ERROR: %s\n' "$*" >&2; exit 1; }

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || fail "no '$python' on PATH; install CPython 3.11 (the ROS 2 wheels are cp311 only)"
pyver="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ "$pyver" = "3.11" ] || fail "'$python' is Python $pyver; the ROS 2 Kilted wheels need CPython 3.11 (set PYTHON=...)"
# cmake and a C/C++ compiler build the interface package; install them if we may.
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v c++ >/dev/null || missing+=(g++)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing ${missing[*]} with apt-get"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >/dev/null \
      || fail "apt-get could not install ${missing[*]}"
  else
    fail "missing ${missing[*]} (needed to build the interface package): install them, e.g. apt-get install ${missing[*]}"
  fi
fi

# 1. virtual environment and wheels
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv"
  "$python" -m venv "$venv" || fail "could not create the virtual environment (python3-venv missing?)"
fi
mkdir -p "$stamps"
touch "$venv/COLCON_IGNORE"   # the wheels put package.xml files under .venv/share
# requirements-speech.txt: the Nabaztag bridge's speech engines (GPL, run in a worker process of
# their own); LEGACY_ROBOTS_SPEECH=0 leaves them out (say then answers which package to install)
requirement_files=("$root/requirements.txt")
[ "${LEGACY_ROBOTS_SPEECH:-1}" = 0 ] || requirement_files+=("$root/requirements-speech.txt")
requirement_args=()
for file in "${requirement_files[@]}"; do requirement_args+=(-r "$file"); done
req_hash="$(cat "${requirement_files[@]}" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamps/requirements" 2>/dev/null)" != "$req_hash" ]; then
  say "installing Python packages (ROS 2 wheels; about a minute)"
  mkdir -p "$root/log"
  "$venv/bin/python" -m pip install --disable-pip-version-check \
    "${requirement_args[@]}" \
    > "$root/log/bootstrap-pip.log" 2>&1 || {
    grep -v 'is ignored: it is neither a file nor a directory' "$root/log/bootstrap-pip.log" | tail -n 20 >&2
    fail "pip could not install requirements.txt (is PyPI reachable?); full log: log/bootstrap-pip.log"
  }
  rm -f "$stamps/cmake-fix"
  echo "$req_hash" > "$stamps/requirements"
fi

# 2. CMake path fix (idempotent; rerun after every install)
if [ ! -f "$stamps/cmake-fix" ]; then
  "$venv/bin/python" "$root/tools/fix_wheel_cmake_paths.py" "$venv" >&2 || fail "CMake path fix failed"
  touch "$stamps/cmake-fix"
fi

# 3. colcon build, when any source file changed since the last good build; ros_compat/ holds
#    ROS packages the wheels lack (tf2_msgs), built only while the venv has no copy of its own
base_paths=(src)
[ -d "$venv/share/tf2_msgs" ] || base_paths+=(ros_compat)
src_hash="$(cd "$root" && find src msg launch config colcon.meta ros_compat -type f \
  -not -path '*/__pycache__/*' -not -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamps/build" 2>/dev/null)" != "$src_hash" ] || [ ! -f "$root/install/setup.bash" ]; then
  say "colcon build (log: log/bootstrap-build.log)"
  mkdir -p "$root/log"
  (
    cd "$root"
    # shellcheck disable=SC1091
    . "$venv/bin/activate"
    export CMAKE_PREFIX_PATH="$VIRTUAL_ENV" AMENT_PREFIX_PATH="$VIRTUAL_ENV"
    colcon --log-base log build --symlink-install --base-paths "${base_paths[@]}" --event-handlers console_cohesion- summary+ \
      --cmake-args -DPython3_EXECUTABLE="$VIRTUAL_ENV/bin/python" -DBUILD_TESTING=OFF
  ) > "$root/log/bootstrap-build.log" 2>&1 || {
    tail -n 40 "$root/log/bootstrap-build.log" >&2
    fail "colcon build failed; full log: log/bootstrap-build.log"
  }
  echo "$src_hash" > "$stamps/build"
fi
say "ready (. tools/env.sh to use it in a shell)"
