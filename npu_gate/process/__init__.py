"""Process-wide controls every layer may use: the garbage collector paused over a big build
(``gc_pause``), the run's deadline raised inside a running stage (``interrupt``) and what an
untrusted child process gets (``isolation``: its stripped environment, its user)."""
