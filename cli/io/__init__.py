"""States in and results out: command-line vectors, ``--input`` readers (JSON Lines, CSV,
``.npz``), the sinks that write results, and the model loader."""
