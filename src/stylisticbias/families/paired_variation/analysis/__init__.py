"""Statistics of a paired-variation protocol (``statistics.suite: paired_variation``).

The design of *Beauty and the Bias* (Sec. 3.5, Sec. 4): every person is judged in a base image
and in one variation of it (the original photo and the beauty-filtered one), phi_i(x) is the
share of a scenario's answers that pick its stereotyped choice, and

- the **variation bias** of scenario i is a Kruskal-Wallis test of {phi_i(x^o)} against
  {phi_i(x^b)} (two independent samples, as the paper treats them; significant at the
  protocol's alpha, no correction across scenarios), its direction the group with the higher
  mean;
- the **halo rate** is the share of the scenarios tagged ``statistics.halo_tag`` that are
  significant *and* lean to the stereotyped (positive) choice in the variation;
- the **demographic biases** are Kruskal-Wallis tests of phi between the groups of an axis
  (all images of both kinds); a scenario with a ``stereotype`` is also tested between its two
  stereotyped groups (Tables 17-30) with the direction of the stereotype;
- **W^attr** (Tables 5, A, B): the variation bias H computed within each subgroup of an axis,
  compared between every pair of subgroups by a Wilcoxon signed-rank test across scenarios,
  Bonferroni-corrected within the axis; and Table 4's converse, the demographic bias H on the
  base images against the variation images. These are the paper's tests (``analysis.definitions:
  official``); the defaults compare effects, one value per person (:mod:`.subgroups`).

Every Kruskal-Wallis test here is computed from **counts**: phi takes few distinct values (k/12
for 12 answers), so a test is a (groups x values) table of counts, and a face-level bootstrap
replicate of every test at once is the draw-count matrix times the per-face count tensor
(:mod:`stylisticbias.analysis.bootstrap`). :func:`kruskal_counts` equals
``scipy.stats.kruskal`` (tie-corrected H, chi-square p with groups - 1 df) on the expanded data;
the tests check that. A test whose values are all equal has no H (NaN, not significant).

The modules: :mod:`.counts` (phi as count tensors, Kruskal-Wallis from counts, the bootstrap
settings), :mod:`.variation` (the variation bias and the halo rate), :mod:`.groups` (the
demographic and stereotype tests, the category rates) and :mod:`.subgroups` (W^attr and
Table 4's comparison).
"""
