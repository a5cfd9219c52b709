"""The demo: a simulated gateway that feeds the sample sessions into an inbox."""
