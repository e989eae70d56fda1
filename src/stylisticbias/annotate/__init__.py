"""Ask a model structured questions about images and keep the answers (the ``annotate`` stage).

:mod:`~.questions`: a question (categorical, multi-label, yes/no, free attribute discovery), its
prompt and the JSON schema its answer is validated against; :mod:`~.items`: the images and the
questions asked of each (the QA checks of our edits); :mod:`~.simulated` and :mod:`~.openai`: the
engines; :mod:`~.run`: the resumable, cached stage writing ``data/annotations/<annotator>/``.
"""
