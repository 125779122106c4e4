"""``python -m forecast``: the same CLI as the ``wallcast`` console script."""

from forecast.cli import main

if __name__ == "__main__":
    main()
