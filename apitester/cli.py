"""Command line (filled in below the slice)."""


def main(argv):
    raise SystemExit("CLI not implemented yet")
