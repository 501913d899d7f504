"""The one event engine shared by the packing, loss and pooled model families."""
