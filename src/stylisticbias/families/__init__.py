"""The protocol families, one package each (``<name>/__init__.py`` defines ``FAMILY``, a
:class:`stylisticbias.family.Family`): what the family does at every stage.

The stage modules never import a family: they ask :func:`stylisticbias.family.family_of` for
the protocol's family (its package imported then) and call its hook. No family imports another
(import-linter contracts in ``pyproject.toml``). For now a family's hooks delegate to the stage
modules' functions of that family.
"""
