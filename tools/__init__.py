"""Business tools: the registry of declared tools, the backend protocol, the loader, the loop breaker.

A shop plugs in its own order system with ``CSAGENT_TOOLS=package.module:factory`` (see
:mod:`tools.loader`); planners read what each tool answers from its spec, never its name.
"""
