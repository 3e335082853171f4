"""`python -m triton_mps check|selftest` (also the `triton-mps` console script)."""

from __future__ import annotations

import sys

USAGE = """usage: python -m triton_mps <command> [options]   (or: triton-mps <command>)

commands:
  check      is this machine ready? one PASS/WARN/FAIL line per check (--json for JSON)
  selftest   run a battery of kernels on one device (--device metal|sim|metal-emu|<index>)"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    command, rest = argv[0], argv[1:]
    if command == "check":
        from .check import main as check_main

        return check_main(rest)
    if command == "selftest":
        from .selftest import main as selftest_main

        return selftest_main(rest)
    print(f"unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
