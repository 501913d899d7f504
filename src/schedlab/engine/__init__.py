"""The one event engine shared by the packing, loss and pooled model families: its compiled core
and the session that drives it (what a run measured is read by :mod:`schedlab.measurement`)."""
