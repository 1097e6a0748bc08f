"""A router's preset file (`--models-preset`): the one table of fields, a text-preserving INI editor, whole sections
to and from the form, the diff and what a reload restarts, the keys the router accepts, and reading and writing it
on the serving machine under a lock (in one request over ssh).

May import: `machine/` and everything below it.
"""
