"""The one event engine shared by the packing, loss and pooled model families."""

from schedlab.engine.indexing import install as _install_indexing

_install_indexing()  # before any of schedlab's functions compiles (indexing.py)
