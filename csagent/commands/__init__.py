"""csagent CLI subcommands."""
