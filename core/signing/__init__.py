"""Operators, their keys, the signed audit log and the actions they sign."""
