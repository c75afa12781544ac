"""(to be written)"""


def register(sub):
    pass
