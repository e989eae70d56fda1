"""REFLECT (``paradigm: reflect``): counterfactual edits of one source photo, asked as pairs
(2AFC), k-way choices (MCQ) and numbers (salary). Every pairwise task makes the win-rate
tables and position bias; no selection or text-only tables."""

from stylisticbias.families.tasks.paradigm import Paradigm

PARADIGM = Paradigm(
    name="reflect",
    pairwise_tables=("reflect_win_rates", "reflect_win_matrix", "task_position_bias"),
)
