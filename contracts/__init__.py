"""Typed contracts at the bottom of the house: state shapes, evidence, tools, facts, errors.

Nothing here imports another package of this project; every other package may import this one.
"""
