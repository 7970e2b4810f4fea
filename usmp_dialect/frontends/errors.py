"""The error every model frontend raises for a model it cannot import."""


class ModelImportError(Exception):
    """A model that cannot be imported: the message is one line naming the problem and where it
    is (the file, and the operator or tensor), ready for `usmp-opt: error: ...`."""
