"""Commands of this group are registered on the shared app (see docket.cli.app)."""

from docket.cli.app import app  # noqa: F401
