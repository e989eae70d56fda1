"""Task types: one module per kind of question (:mod:`.binary_choice`), the interface
(:mod:`.base`) and the one place they are registered (:mod:`.registry`)."""
