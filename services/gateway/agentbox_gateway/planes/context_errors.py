"""Typed context errors, apart from the plane so the skills module can raise them without a cycle."""


class ContextError(Exception):
    """A context request that cannot be answered (no such runtime, bad skill name ...)."""


class SkillNotFound(ContextError):
    pass
