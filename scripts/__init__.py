"""Developer tooling run from a checkout (`make screenshots`); not part of the shipped package."""
