"""The host kernel's own timekeeping, fed to a foreign target's timekeeper.

Under qemu-user on an x86 host the counters of powerpc (mftb), riscv (the
time CSR), loongarch (rdtime.d) and sparc64 (%tick) read the host's TSC
itself.  When the host kernel keeps time with that TSC (its clocksource is
"tsc"), its data pages hold everything every clock is computed from:
cycle_last, mult, shift and each clock's base, which it moves on every tick.
The foreign timekeeper (runner/loader.c, --host-clock) then publishes
exactly those each tick, so that the image computes what the host's vDSO
and syscalls compute, to the nanosecond, instead of disciplining its own
mult against them.

The feeder is a thread of `vdsogen run`: the timekeeper writes one byte on
a pipe after each host tick; the feeder reads the host's clock records from
this process's own [vvar] (live.py: through the x86_64 target's layout,
copied by the kernel through a pipe, under the records' seqcount) and
answers with one record of RECORD_WORDS 64-bit words in the guest's byte
order (record()).  Where the host does not keep time so (another
clocksource, a layout that is not the running kernel's, a time namespace),
host_clock() says why and the timekeeper disciplines its own clocks.
"""

import ctypes
import errno
import os
import struct
import threading

from vdsogen.run import live

CLOCKSOURCE = "/sys/devices/system/clocksource/clocksource0/current_clocksource"
CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_MONOTONIC_RAW = 0, 1, 4
CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME, CLOCK_TAI = 5, 6, 7, 11
# The bases a record carries, in its order: record 0's, then the raw record's (runner/loader.c, struct host_clock).
BASES = ((0, CLOCK_REALTIME), (0, CLOCK_MONOTONIC), (0, CLOCK_BOOTTIME), (0, CLOCK_TAI),
         (0, CLOCK_REALTIME_COARSE), (0, CLOCK_MONOTONIC_COARSE), (1, CLOCK_MONOTONIC_RAW))
# valid, cycle_last, mask, mult[2], shift[2], max_cycles[2], then (sec, nsec) of each base.
RECORD_WORDS = 9 + 2 * len(BASES)


class HostClock:
    """The host's clock records, read through the x86_64 target's layout."""

    def __init__(self, host, data_lo):
        layout = host.datapage.layout
        clocks = layout.clocks_member
        self.addr = data_lo + layout.page("time").index * host.datapage.page_size
        self.tsc = next(m.number for m in host.contract.modes if m.name == "tsc")

        def at(rec, path):
            return layout.field_offset(layout.time_struct, f"{clocks}[{rec}].{path}")

        self.seq = at(0, "seq")
        self.fields = [(at(0, "clock_mode"), "i"), (at(0, "cycle_last"), "Q"), (at(0, "mask"), "Q"),
                       (at(0, "mult"), "I"), (at(1, "mult"), "I"), (at(0, "shift"), "I"), (at(1, "shift"), "I"),
                       (at(0, "max_cycles"), "Q"), (at(1, "max_cycles"), "Q")]
        for rec, clk in BASES:
            self.fields += [(at(rec, f"basetime[{clk}].sec"), "Q"), (at(rec, f"basetime[{clk}].nsec"), "Q")]
        self.size = max(off for off, _ in self.fields) + 8
        self.pipe = os.pipe()

    def read(self):
        """The fields (clock_mode first), one update's: the seqcount read apart before and after
        them (one copy need not read its bytes in order), retried while the host writes them."""
        for _ in range(1000):
            seq = self._seq()
            if seq & 1:
                continue
            page = self._copy(0, self.size)
            if self._seq() == seq:
                return [struct.unpack_from("<" + fmt, page, off)[0] for off, fmt in self.fields]
        raise OSError(errno.EAGAIN, "the host's time data kept changing while it was read")

    def _seq(self):
        return struct.unpack("<I", self._copy(self.seq, 4))[0]

    def _copy(self, off, size):
        r, w = self.pipe
        done = live._libc.write(w, self.addr + off, size)
        if done != size:
            err = ctypes.get_errno() if done < 0 else errno.EFAULT
            raise OSError(err, os.strerror(err))
        return os.read(r, size)

    def close(self):
        for fd in self.pipe:
            os.close(fd)
        self.pipe = ()

    def record(self, endian):
        """One update as the timekeeper reads it: RECORD_WORDS words in `endian` ("<" or ">"); word 0 is
        0 (and the rest zeroes) when the host no longer keeps time with the TSC."""
        values = self.read()
        if values[0] != self.tsc:
            return bytes(8 * RECORD_WORDS)
        return struct.pack(f"{endian}{RECORD_WORDS}Q", 1, *values[1:])


def host_clock():
    """(HostClock, "") when the host kernel keeps time with its TSC in data pages vdsogen can read
    (the x86_64 target's layout, checked against them as a native `run` checks them), else (None,
    why not)."""
    from vdsogen.errors import VdsogenError
    from vdsogen.spec.model import load_target

    try:
        with open(CLOCKSOURCE) as f:
            source = f.read().strip()
    except OSError as e:
        return None, f"{CLOCKSOURCE}: {e.strerror}"
    if source != "tsc":
        return None, f"the host's clocksource is {source}, not tsc ({CLOCKSOURCE})"
    try:
        host = load_target("x86_64")
        live.check_live_layout(host)
        found = live.kernel_data()
        assert found is not None    # check_live_layout() found them
        clock = HostClock(host, found[0])
    except (VdsogenError, OSError) as e:
        return None, f"the host's time data cannot be read as vdsogen knows it: {e}"
    try:
        mode = clock.read()[0]
    except OSError as e:
        clock.close()
        return None, f"the host's time data cannot be read: {e.strerror}"
    if mode != clock.tsc:
        clock.close()
        return None, (f"the host's time data is not in clock mode tsc ({clock.tsc}) but {mode}"
                      + (" (a time namespace)" if mode == live.CLOCK_MODE_TIMENS else ""))
    return clock, ""


class Feeder:
    """The feeder thread: started by start(), it finds the host's clock (host_clock()) at the
    timekeeper's first request, as only a timekeeper whose counter is the host's TSC asks, and
    answers every request with record(); `why` says why it answered none."""

    def __init__(self, endian):
        self.endian = endian
        self.why = ""
        self.fds = ()

    def start(self):
        """The fds to pass the timekeeper (--host-clock REQ REC): the caller closes them once it has."""
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        self.fds = (req_w, rep_r)
        threading.Thread(target=self._feed, args=(req_r, rep_w), name="vdsogen-host-clock", daemon=True).start()
        return self.fds

    def _feed(self, req_r, rep_w):
        clock = None
        try:
            while os.read(req_r, 1):
                if clock is None and not self.why:
                    clock, self.why = host_clock()
                try:
                    rec = clock.record(self.endian) if clock else bytes(8 * RECORD_WORDS)
                except OSError as e:
                    self.why, rec = f"the host's time data cannot be read: {e.strerror}", bytes(8 * RECORD_WORDS)
                os.write(rep_w, rec)
        except OSError:
            pass    # the timekeeper is gone
        finally:
            os.close(req_r)
            os.close(rep_w)
            if clock:
                clock.close()


__all__ = ["HostClock", "Feeder", "host_clock", "RECORD_WORDS"]
