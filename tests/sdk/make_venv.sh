#!/bin/sh
# Creates the Python virtual environment of the SDK tests: make_venv.sh REQUIREMENTS VENV_DIR.
# One per build directory, reused while REQUIREMENTS is unchanged (its SHA-256 is kept beside it).
set -eu
requirements=$1
venv=$2
stamp="$venv/requirements.sha256"
wanted=$(sha256sum "$requirements" | cut -d' ' -f1)
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$wanted" ]; then
  exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --disable-pip-version-check --no-input --quiet \
  -r "$requirements"
echo "$wanted" > "$stamp"
