"""Helpers the tests share: runners, targets, fixtures. No test module imports another test module."""
