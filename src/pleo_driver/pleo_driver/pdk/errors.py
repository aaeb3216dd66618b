"""The errors a build can end with; each carries a message meant for the user."""

from legacy_robot_common.errors import MalformedFrame


class BuildError(Exception):
    """The project cannot be built as asked (bad UPF, bad input file, missing tool, too big)."""


class MalformedResource(MalformedFrame):
    """A URF/UMF/USF/UCF/AMX file that does not have the layout of its format."""
