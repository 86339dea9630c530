"""Errors that reach the user as one clear line and an exit code, never a traceback."""


class VdsogenError(Exception):
    """Base class; `exit_code` is what the CLI returns."""

    exit_code = 2


class SpecError(VdsogenError):
    """A spec or layout file is unusable: names the file and the key."""

    def __init__(self, path: object, key: str | None, message: str):
        self.path = str(path)
        self.key = key
        self.message = message
        where = f"{self.path}: {key}" if key else self.path
        super().__init__(f"{where}: {message}")


class SpecErrors(SpecError):
    """Several problems of one load, each a SpecError: the user sees them all at once."""

    def __init__(self, errors: list[SpecError]):
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.path, first.key, first.message)
        self.args = ("\n".join(str(e) for e in self.errors),)

    def __str__(self) -> str:
        return self.args[0]


class ImageError(VdsogenError):
    """An ELF image cannot be read: names the file and, where known, the offset."""

    def __init__(self, path, message, offset=None):
        self.path = str(path)
        self.offset = offset
        where = self.path if offset is None else f"{self.path} @0x{offset:x}"
        super().__init__(f"{where}: {message}")


class BuildError(VdsogenError):
    """The toolchain failed or is missing."""

    exit_code = 1


class HarnessError(VdsogenError):
    """The harness could not be built or started."""

    exit_code = 1
