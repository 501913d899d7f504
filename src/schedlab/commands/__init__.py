"""Command groups of the ``schedlab`` CLI.

Each module here defines ``register(app: typer.Typer) -> None`` that adds its commands (or a
sub-app with ``app.add_typer``). Import heavy dependencies inside the command functions, not at
module level, so that ``schedlab --help`` stays fast. Use :func:`schedlab.cli_support.user_errors`
so that bad input prints one line and exits with code 2.
"""
