"""The five paper units, one file each; each is ONE Function with a hand-written backward."""
__all__ = []
