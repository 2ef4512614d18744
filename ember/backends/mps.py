"""torch.backends.mps: Apple's Metal backend, never built into ember."""


def is_available() -> bool:
    return False


def is_built() -> bool:
    return False
