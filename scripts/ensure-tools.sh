#!/usr/bin/env bash
# Installs what agentspec's tests need when it is missing: ripgrep, for the
# FileSystem tools list_files and grep. Uses Debian's packages (apt-get) as root
# or through sudo; elsewhere it says what to install and carries on, and the
# ripgrep tests skip themselves.
set -euo pipefail

if command -v rg >/dev/null 2>&1; then
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		sudo="sudo -n"
	fi
fi
if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ -n "$sudo" ]; }; then
	echo "installing ripgrep (apt-get)" >&2
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq ripgrep >&2
else
	echo "ripgrep (rg) is not installed; install it to run the list_files and grep tests" >&2
fi
