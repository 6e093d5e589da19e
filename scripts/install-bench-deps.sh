#!/usr/bin/env bash
# Installs the build dependencies plus python3-torch, which braid-bench runs (through /usr/bin/python3)
# as the comparison anchor of the engine and async suites, and python3-matplotlib, which
# tools/hw_plots.py needs. Neither is ever a dependency of braid.
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/install-deps.sh" --bench "$@"
