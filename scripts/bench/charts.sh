#!/usr/bin/env bash
# Renders docs/benchmarks/charts/*.png|svg from bench/data/*.json.
# Creates (or refreshes) the virtualenv bench/.venv from the pinned
# scripts/bench/requirements.txt; never installs anything system-wide.
# `charts.sh --setup` only prepares the virtualenv (scripts/test.sh does it beside the tests).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=bench/.venv
req=scripts/bench/requirements.txt
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$venv/.requirements.txt"; then
  echo "charts: setting up $venv from $req (python3 -m venv + pip from PyPI)"
  python3 -m venv "$venv" || { echo "error: python3 -m venv failed (Debian: apt-get install python3-venv)" >&2; exit 1; }
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  cp "$req" "$venv/.requirements.txt"
fi
if [ "${1:-}" = --setup ]; then exit 0; fi
exec "$venv/bin/python" scripts/bench/charts.py "$@"
