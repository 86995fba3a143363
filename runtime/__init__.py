"""Legion-shaped task runtime (placeholder until the runtime lands)."""

__flexflow_component__ = "runtime"
