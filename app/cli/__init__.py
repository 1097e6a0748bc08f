"""Command-line entry points: argparse in main.py, one module per group of commands."""
