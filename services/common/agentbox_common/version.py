"""The agentbox version, written once: here. ``pyproject.toml`` reads it (``[tool.setuptools.dynamic]``),
so the installed distribution's metadata says the same, and every program reports it from this
module without asking the installed metadata (no start-up cost, and the same answer from a bare
source tree)."""

__version__ = "0.1.0"
