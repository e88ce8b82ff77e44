"""A toy shop back end."""
