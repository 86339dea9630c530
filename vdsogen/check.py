"""Validation entry points (rule engine to follow in the next commit)."""


def build_validator(target, so, dbg):
    return []
