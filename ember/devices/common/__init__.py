"""Kernels written once in Python array API standard operations, by family: any array library that follows the
standard runs them; a device overrides one where its library has something faster (``cpu/`` for NumPy).
``namespace.make_namespace(name, xp)`` builds from them the raw namespace of a device made from any such library
(https://data-apis.org/array-api/latest/), which ``ember.devices.register`` installs."""
