"""Is the running kernel's vDSO data laid out as a target's image expects?

Natively, `vdsogen run` puts the image where the kernel put its own vDSO,
directly above the kernel's data pages, so the image reads them as they are.
Before that, this module reads the live pages of this very process (the
[vvar...] mappings directly below [vdso] in /proc/self/maps) through the
target's layout and checks what a wrong layout could not get right: the page
count, the clock modes, plausible mult/shift, the coarse clocks' times
against clock_gettime, and hrtimer_res (the last field of the time data,
after the aux clocks) against clock_getres.

The kernel backs some data pages only where they are used (the time
namespace's page outside one, the pvclock and hvclock pages without those
clocks): touching one is SIGBUS.  So the pages are never touched: the kernel
copies them (write() to a pipe), and says EFAULT for a page it does not
back.  /proc/self/mem and process_vm_readv() cannot read these mappings at
all (EIO, EFAULT: they are not pages of memory the kernel can pin).
"""

import ctypes
import errno
import os
import struct
import time

from vdsogen.errors import VdsogenError
from vdsogen.spec.contract import MODE_NONE, MODE_TIMENS

CLOCK_MODE_TIMENS = MODE_TIMENS.number
CLOCK_REALTIME_COARSE = 5
CLOCK_MONOTONIC_COARSE = 6
# A coarse clock's base lags clock_gettime by at most a tick; allow for a slow machine.
SLACK_NS = 2_000_000_000


class LayoutMismatch(VdsogenError):
    """The running kernel's data pages are not what the target's image reads."""

    exit_code = 2


def kernel_data(maps="/proc/self/maps"):
    """(start of the data mappings, start of [vdso]) in this process, or None without a vDSO."""
    run_lo = prev_hi = None
    with open(maps) as f:
        for line in f:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            name = fields[5] if len(fields) > 5 else ""
            if run_lo is not None and prev_hi != lo:
                run_lo = None
            if name.startswith("[vvar"):
                run_lo = lo if run_lo is None else run_lo
            elif name == "[vdso]":
                return (lo if run_lo is None else run_lo), lo
            else:
                run_lo = None
            prev_hi = hi
    return None


class Unreadable(OSError):
    """A page of this process that cannot be read (the kernel does not back it)."""


_libc = ctypes.CDLL(None, use_errno=True)
_libc.write.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t)
_libc.write.restype = ctypes.c_ssize_t


CHUNK = 4096     # what a pipe always holds


def read_memory(addr: int, size: int) -> bytes:
    """`size` bytes at `addr` in this process, copied by the kernel through a pipe: Unreadable
    (EFAULT) where it does not back the memory, never SIGBUS."""
    out = []
    r, w = os.pipe()
    try:
        for at in range(addr, addr + size, CHUNK):
            n = min(CHUNK, addr + size - at)
            done = _libc.write(w, at, n)
            if done != n:
                err = ctypes.get_errno() if done < 0 else errno.EFAULT
                raise Unreadable(err, os.strerror(err))
            out.append(os.read(r, n))
    finally:
        os.close(r)
        os.close(w)
    return b"".join(out)


class _Reader:
    """Fields of the time data through the target's layout."""

    def __init__(self, target, page):
        self.layout = target.datapage.layout
        self.page = page
        self.endian = "<" if target.elf.endian == "little" else ">"

    def get(self, path, fmt):
        off = self.layout.field_offset(self.layout.time_struct, path)
        return struct.unpack_from(self.endian + fmt, self.page, off)[0]


def check_live_layout(target, maps="/proc/self/maps", read=read_memory):
    """Raise LayoutMismatch unless the running kernel's data pages match the target's layout."""
    dp = target.datapage
    layout = dp.layout
    where = f"the {target.name} layout ({layout.name})"
    found = kernel_data(maps)
    if found is None:
        raise LayoutMismatch("this kernel maps no vDSO into processes (booted with vdso=0?): nothing to replace")
    data_lo, vdso = found
    want = dp.pages * dp.page_size
    if vdso - data_lo != want:
        raise LayoutMismatch(f"the running kernel's data pages below its vDSO take {vdso - data_lo} bytes, "
                             f"{where} has {dp.pages} pages of {dp.page_size} ({want} bytes)")
    clocks = layout.clocks_member
    for attempt in range(100):
        page = _reader_page(target, data_lo, read)
        r = _Reader(target, page)
        seq = r.get(f"{clocks}[0].seq", "I")
        if seq & 1:
            continue
        values = _sample(target, r, clocks)
        if r.get(f"{clocks}[0].seq", "I") == seq and _reader_page(target, data_lo, read) == page:
            break
    else:
        raise LayoutMismatch("the running kernel's time data kept changing while it was read")
    _judge(target, where, values)


def _reader_page(target, data_lo, read):
    dp = target.datapage
    data = _page(target, data_lo, "time", read)
    r = _Reader(target, data)
    if r.get(f"{dp.layout.clocks_member}[0].clock_mode", "i") == CLOCK_MODE_TIMENS and dp.layout.has_timens:
        # In a time namespace the first page is the namespace's; the real data is on the next.
        data = _page(target, data_lo, "timens", read)
    return data


def _page(target, data_lo, role, read):
    dp = target.datapage
    index = dp.layout.page(role).index
    addr = data_lo + index * dp.page_size
    try:
        return read(addr, dp.page_size)
    except Unreadable as e:
        raise LayoutMismatch(f"the running kernel's data page {index} (at {addr:#x}), the {role} page of the "
                             f"{target.name} layout ({dp.layout.name}), cannot be read: {e.strerror} (the kernel "
                             f"does not back it here: not its {role} page)") from None


def _sample(target, r, clocks):
    ns = time.clock_gettime_ns
    return {
        "modes": [r.get(f"{clocks}[{i}].clock_mode", "i") for i in (0, 1)],
        "mult": [r.get(f"{clocks}[{i}].mult", "I") for i in (0, 1)],
        "shift": [r.get(f"{clocks}[{i}].shift", "I") for i in (0, 1)],
        "coarse": [(r.get(f"{clocks}[0].basetime[{c}].sec", "Q") * 10**9
                    + r.get(f"{clocks}[0].basetime[{c}].nsec", "Q"), ns(c))
                   for c in (CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE)],
        "hrtimer_res": r.get(target.datapage.layout.access["hrtimer_res"], "I"),
    }


def _judge(target, where, v):
    allowed = {MODE_NONE.number, *target.counter.modes}
    for i, mode in enumerate(v["modes"]):
        if mode not in allowed:
            raise LayoutMismatch(f"the running kernel's clock record {i} read through {where} has clock mode "
                                 f"{mode}, not one of the target's ({', '.join(map(str, sorted(allowed)))})")
    for i in (0, 1):
        if v["modes"][i] and (not v["mult"][i] or v["shift"][i] >= 64):
            raise LayoutMismatch(f"the running kernel's clock record {i} read through {where} has mult "
                                 f"{v['mult'][i]}, shift {v['shift'][i]}: not a clock")
    for (page_ns, now_ns), clock in zip(v["coarse"], ("CLOCK_REALTIME_COARSE", "CLOCK_MONOTONIC_COARSE")):
        if abs(now_ns - page_ns) > SLACK_NS:
            raise LayoutMismatch(f"{clock} read from the running kernel's data through {where} is "
                                 f"{page_ns / 1e9:.3f} s, the kernel says {now_ns / 1e9:.3f} s")
    res = round(time.clock_getres(time.CLOCK_MONOTONIC) * 1e9)
    if v["hrtimer_res"] != res:
        raise LayoutMismatch(f"hrtimer_res read from the running kernel's data through {where} is "
                             f"{v['hrtimer_res']}, clock_getres(CLOCK_MONOTONIC) says {res} ns")
    # The tick is no field of the page: the image answers clock_getres of the coarse clocks from its spec.
    tick = round(time.clock_getres(CLOCK_REALTIME_COARSE) * 1e9)
    if tick != target.datapage.tick_nsec:
        raise LayoutMismatch(f"the {target.name} spec's tick is {target.datapage.tick_nsec} ns, the running "
                             f"kernel's is {tick} ns (clock_getres(CLOCK_REALTIME_COARSE)): the image would "
                             f"answer the coarse clocks' resolution wrongly ([datapage] tick_nsec)")


__all__ = ["check_live_layout", "kernel_data", "read_memory", "LayoutMismatch", "Unreadable"]
