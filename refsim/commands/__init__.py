"""Built-in ``refsim`` subcommands; each module registers its command on ``refsim.cli.app``."""
