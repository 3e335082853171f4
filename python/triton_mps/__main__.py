"""`python -m triton_mps selftest [--device D]`."""

from __future__ import annotations

import sys


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] != "selftest":
        print("usage: python -m triton_mps selftest [--device metal|sim|metal-emu|<index>]", file=sys.stderr)
        return 2
    from .selftest import main as selftest_main

    return selftest_main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
