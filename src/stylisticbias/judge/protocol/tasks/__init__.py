"""Task types: one module per kind of question (:mod:`.binary_choice` for the protocol; the
scenario task types :mod:`.binary_scenario`, :mod:`.choice_k`, :mod:`.pairwise`,
:mod:`.numeric`, :mod:`.factuality`, :mod:`.text_only`), the interfaces (:mod:`.base`,
:mod:`.scenario_task`) and the one place they are registered (:mod:`.registry`)."""
