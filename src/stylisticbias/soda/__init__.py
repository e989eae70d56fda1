"""SODA (Choi et al.): audit an image generator by the attribute distributions of its images.

:mod:`~.protocol`: objects x demographic prompt templates (its Table 1, ``conf/benchmark/
soda.yaml``); :mod:`~.metrics`: BDS, CDS, VAC, the seeded permutation test and the mitigation
paired t-test; :mod:`~.demo`: the offline stand-in (planted attribute distributions, drawn as
images, labelled by an annotator) and the null calibration; :mod:`~.stage`: the DVC stage.
"""
