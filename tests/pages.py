"""Which pages hold an array: the flags of its memory mapping (Linux /proc/self/smaps)."""


def vm_flags(arr):
    """The VmFlags of the mapping holding ``arr``'s middle byte (numpy advises the whole pages of
    an array, not the first partial one); 'hg' is MADV_HUGEPAGE."""
    addr = arr.__array_interface__["data"][0] + arr.nbytes // 2
    inside = False
    with open("/proc/self/smaps") as fh:   # closed on return: an open file is a ResourceWarning
        for line in fh:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                lo, hi = (int(x, 16) for x in head.split("-"))
                inside = lo <= addr < hi
            elif inside and line.startswith("VmFlags:"):
                return line.split()[1:]
    return None
