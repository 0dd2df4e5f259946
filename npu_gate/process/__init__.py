"""Process-wide controls every layer may use: the garbage collector paused over a big build
(``gc_pause``) and the run's deadline raised inside a running stage (``interrupt``)."""
