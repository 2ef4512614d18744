"""ember.cuda: no CUDA backend yet (a CuPy backend is a later issue)."""


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0
