"""Quality checks of the dataset's edits: pixel-level edit locality (no model) and the QA table.

:mod:`~stylisticbias.qa.locality` measures how much of an edit's change lies inside the region
the edit was meant to touch (REFLECT's face-mask audit, per attribute); :mod:`~.checks` joins it
with an annotator's attribute and identity answers into one pass/fail row per variation and
applies the QA policy (report only, or exclude failing images from judging).
"""
