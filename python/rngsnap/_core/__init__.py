"""Layer core (the bottom of rngsnap's Python package): the errors and the
byte encodings, over the C binding rngsnap._rngsnap.  Nothing here holds a
context or imports torch, NumPy or a framework; every layer above reads
and raises with these.  The layers, bottom first: core, rngsnap._context,
rngsnap (the public names), rngsnap.torch, rngsnap.integrations
(tests/python/test_layers.py holds the table and checks every import)."""
