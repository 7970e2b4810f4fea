"""usmp-dialect: a unified static memory planner for ML inference programs, on xDSL."""

__version__ = "0.1.0"
