"""The csagent graph (the app engineer replaces this placeholder with the lazy ``graph`` export)."""
