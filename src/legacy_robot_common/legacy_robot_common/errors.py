"""The exception types shared by every robot package."""


class MalformedFrame(ValueError):
    """Input bytes that do not form a valid frame, record or file.

    Decoders raise only this for bad input; clients count it and skip the frame.
    """


class ConnectionLost(ConnectionError):
    """The link to the robot is gone (peer closed, read timeout, I/O error)."""


class LinkTimeout(ConnectionLost):
    """Nothing arrived from the robot for longer than the read timeout."""


class WorldError(ValueError):
    """A simulated world (map file, start pose) that cannot be used: commands exit with code 2."""
