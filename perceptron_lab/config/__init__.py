"""Configs: schema, checks, YAML reading, overrides, the paper registry and the docs of each key."""
