"""The `speedpatch` command line."""
