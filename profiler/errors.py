"""The one exception type for mistakes a user can fix (bad input, missing file, wrong
option). The CLI prints it as a single line, never as a traceback."""


class UserError(Exception):
    """An error the user can act on; its message is the whole story, in one line."""
