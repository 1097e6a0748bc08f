"""Proving a model answers: a streaming chat completion through the router (text and images as data URIs), its
timings, and the probe that tells a loaded model that still answers from one that the router lists as loaded but
no longer answers.

May import: activity, fit, machine, lifecycle, router, hosts, core (never fleet, never the UI).
"""
